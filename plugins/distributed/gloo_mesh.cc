// A gloo full mesh of one process group's ranks (gloo_mesh.h): the store adapter, the
// exchange of the plugin's fingerprints and small all-reduces, point-to-point messages and
// the ring reduce-scatter on unbound buffers.
#include "gloo_mesh.h"

#include <sched.h>

#include <cstring>

#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

namespace loom::distributed {
namespace {

using Clock = std::chrono::steady_clock;

// Slot prefixes above gloo's own (0x01..0x08, gloo/types.h).
constexpr uint64_t kExchangeSlot = uint64_t{0x70} << 56;
constexpr uint64_t kPointToPointSlot = uint64_t{0x71} << 56;
constexpr uint64_t kReduceScatterSlot = uint64_t{0x72} << 56;
// The largest reduce_scatter scratch kept between calls (two blocks of 128 MiB).
constexpr size_t kKeptScratchBytes = size_t{256} << 20;

// gloo's view of loom's store.
class GlooStore final : public gloo::rendezvous::Store {
 public:
  GlooStore(distributed::Store& store, std::chrono::milliseconds timeout, std::string prefix)
      : store_(store), timeout_(timeout), prefix_(std::move(prefix)) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    store_.set(prefix_ + key, data);
  }
  std::vector<char> get(const std::string& key) override {
    return store_.get(prefix_ + key, timeout_);
  }
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& t) override {
    std::vector<std::string> full;
    for (const std::string& k : keys) full.push_back(prefix_ + k);
    store_.wait(full, t);
  }

 private:
  distributed::Store& store_;
  std::chrono::milliseconds timeout_;
  std::string prefix_;
};

std::chrono::milliseconds until(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return std::max(left, std::chrono::milliseconds(1));
}

// The calling thread runs SCHED_BATCH for the scope where it ran SCHED_OTHER, so that
// threads it starts inherit SCHED_BATCH (Note [gloo's event loop runs SCHED_BATCH]).
class BatchPolicyScope {
 public:
  BatchPolicyScope()
      : changed_(sched_getscheduler(0) == SCHED_OTHER &&
                 sched_setscheduler(0, SCHED_BATCH, &kNoPriority) == 0) {}
  ~BatchPolicyScope() {
    if (changed_) sched_setscheduler(0, SCHED_OTHER, &kNoPriority);
  }
  BatchPolicyScope(const BatchPolicyScope&) = delete;
  BatchPolicyScope& operator=(const BatchPolicyScope&) = delete;

 private:
  static constexpr sched_param kNoPriority{};
  bool changed_;
};

}  // namespace

// Note [gloo's event loop runs SCHED_BATCH]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A gloo TCP device has one event-loop thread that reads every connection. It handles a
// readable socket only if it gets the connection's lock with try_lock, and epoll reports
// the socket again at once if it does not: while the collective's own thread holds that
// lock (writing a segment, posting a receive), the loop spins. When the loop was woken by
// arriving data and preempted the lock holder on their CPU, the holder gets the CPU
// back only when the loop's time slice ends, a scheduler tick later (4 ms on the VMs we
// measure on). On the 2-core VM of tools/bench/README.md this made half of all 2-rank runs
// of 256 KiB to 1 MiB all-reduces take 3.5-4 ms instead of 0.6 ms, and every run did
// with both threads of a rank pinned to one core. A SCHED_BATCH thread never preempts
// on wakeup (the lock holder finishes its write and sleeps, then the loop runs), so the
// device is made while the calling thread is SCHED_BATCH and gloo's loop thread, which
// inherits its creator's policy, keeps it; the caller gets its own policy back. Only a
// SCHED_OTHER caller is changed (any process may move between those two); under a
// real-time policy, or where the change is refused, the device is made as before.
std::shared_ptr<gloo::transport::Device> GlooMesh::make_device(const EngineOptions& o) {
  gloo::transport::tcp::attr attr;
  if (!o.iface.empty()) {
    attr.iface = o.iface;
  } else {
    attr.hostname = o.hostname;
  }
  BatchPolicyScope loop_policy;
  return gloo::transport::tcp::CreateDevice(attr);
}

GlooMesh::GlooMesh(Store& store, const EngineOptions& o,
                   std::shared_ptr<gloo::transport::Device> device, const std::string& key_prefix)
    : rank_(o.rank), size_(o.size) {
  context_ = std::make_shared<gloo::rendezvous::Context>(o.rank, o.size);
  context_->setTimeout(o.timeout);
  GlooStore keys(store, o.timeout, key_prefix);
  context_->connectFullMesh(keys, device);
}

void GlooMesh::exchange(std::span<const char> mine, size_t capacity, uint32_t tag,
                        Clock::time_point deadline, std::vector<PeerMessage>& from) {
  from.assign(size_, {});
  const uint64_t slot = kExchangeSlot | tag;
  std::vector<std::vector<char>>& inbox = inbox_;
  inbox.resize(size_);
  std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> recvs(size_);
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    if (inbox[r].size() < capacity) inbox[r].resize(capacity);
    recvs[r] = context_->createUnboundBuffer(inbox[r].data(), capacity);
    try {
      recvs[r]->recv(r, slot, 0, capacity);
    } catch (const std::exception& e) {
      from[r].error = e.what();
    }
  }
  std::vector<char> out(mine.begin(), mine.end());
  auto send = context_->createUnboundBuffer(out.data(), out.size());
  std::vector<bool> sent(size_, false);
  for (int r = 0; r < size_; ++r) {
    if (r == rank_ || !from[r].error.empty()) continue;
    try {
      send->send(r, slot, 0, out.size());
      sent[r] = true;
    } catch (const std::exception& e) {
      from[r].error = e.what();
    }
  }
  bool lost = false;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_ || !from[r].error.empty()) continue;
    try {
      from[r].arrived = recvs[r]->waitRecv(nullptr, until(deadline));
      if (from[r].arrived) from[r].bytes = {inbox[r].data(), capacity};
    } catch (const gloo::IoException& e) {
      // gloo reports a wait past its timeout as an IoException too: that peer is late,
      // not gone.
      if (std::string(e.what()).find("Timed out") == std::string::npos) from[r].error = e.what();
    } catch (const std::exception& e) {
      from[r].error = e.what();
    }
    if (!from[r].arrived) lost = true;
  }
  for (int r = 0; r < size_; ++r) {
    if (!sent[r]) continue;
    try {
      send->waitSend(nullptr, until(deadline));
    } catch (const std::exception&) {
      lost = true;  // the receive side reports the peer
    }
  }
  if (lost) {
    // A pending receive may still land in these buffers.
    recvs.push_back(std::move(send));
    inbox.push_back(std::move(out));
    bury(std::move(recvs), std::move(inbox));
    inbox.clear();
  }
}

void GlooMesh::keep_after_failure(std::vector<char> bytes) {
  std::vector<std::vector<char>> kept;
  kept.push_back(std::move(bytes));
  bury({}, std::move(kept));
}

void GlooMesh::bury(std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> buffers,
                    std::vector<std::vector<char>> bytes) {
  std::lock_guard<std::mutex> lock(graveyard_mutex_);
  for (auto& b : buffers) graveyard_buffers_.push_back(std::move(b));
  for (auto& v : bytes) graveyard_bytes_.push_back(std::move(v));
}

void GlooMesh::send(const void* data, size_t bytes, int peer, uint32_t tag,
                    std::chrono::milliseconds timeout) {
  gloo_call("send", [&] {
    auto buf = context_->createUnboundBuffer(const_cast<void*>(data), bytes);
    buf->send(peer, kPointToPointSlot | tag, 0, bytes);
    if (!buf->waitSend(nullptr, timeout)) throw std::runtime_error("the send was aborted");
  });
}

void GlooMesh::recv(void* data, size_t bytes, int peer, uint32_t tag,
                    std::chrono::milliseconds timeout) {
  gloo_call("recv", [&] {
    auto buf = context_->createUnboundBuffer(data, bytes);
    buf->recv(peer, kPointToPointSlot | tag, 0, bytes);
    try {
      if (!buf->waitRecv(nullptr, timeout)) throw std::runtime_error("the receive was aborted");
    } catch (...) {
      std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> lost;
      lost.push_back(std::move(buf));
      bury(std::move(lost), {});
      throw;
    }
  });
}

// Note [A ring reduce-scatter]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// gloo has no reduce-scatter for its unbound buffers, and an all-reduce of the whole input
// moves twice the bytes a reduce-scatter needs and n times what each rank keeps. So the
// mesh runs the ring itself, on gloo's transport: in step s (0 <= s < n - 1) rank r sends
// to rank r + 1 the partial of block r - s - 1 (its own input block at s = 0) and
// receives from rank r - 1 the partial of block r - s - 2, which it reduces with its own
// input's block; after the last step that is block r, received straight into the output.
// Each rank sends and receives n - 1 blocks. Partials alternate between two scratch
// blocks, which the mesh keeps from call to call up to kKeptScratchBytes (a group runs its
// collectives one at a time); a step waits for its send before the next step's receive
// reuses that block. Block b is reduced in ring order, rank b + 1's first and its owner's
// last, not in rank order, so a float result may differ in its last bits from the same
// block of an all_reduce.
void GlooMesh::reduce_scatter(const void* in, void* out, size_t count, ElementType type,
                              ReduceOp op, uint32_t tag, std::chrono::milliseconds timeout) {
  const size_t bytes = count * element_size(type);
  if (bytes == 0) return;
  if (size_ == 1) {
    std::memmove(out, in, bytes);
    return;
  }
  const Clock::time_point deadline = Clock::now() + timeout;
  const uint64_t slot = kReduceScatterSlot | tag;
  const int next = (rank_ + 1) % size_, previous = (rank_ + size_ - 1) % size_;
  const auto block = [&](int back) {
    return static_cast<size_t>((rank_ - back + 2 * size_) % size_);
  };
  const char* input = static_cast<const char*>(in);
  // Two ranks need no partials: the one step receives into the output.
  if (size_ > 2 && ring_scratch_.size() < 2 * bytes) ring_scratch_.resize(2 * bytes);
  char* scratch = ring_scratch_.data();
  std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> buffers;
  auto* input_buffer =
      buffers.emplace_back(context_->createUnboundBuffer(const_cast<char*>(input), bytes * size_))
          .get();
  gloo::transport::UnboundBuffer* scratch_buffer = nullptr;
  if (size_ > 2) {
    scratch_buffer = buffers.emplace_back(context_->createUnboundBuffer(scratch, 2 * bytes)).get();
  }
  auto* output_buffer = buffers.emplace_back(context_->createUnboundBuffer(out, bytes)).get();
  try {
    gloo_call("reduce_scatter", [&] {
      for (int s = 0; s + 1 < size_; ++s) {
        const bool last = s + 2 == size_;
        gloo::transport::UnboundBuffer* into = last ? output_buffer : scratch_buffer;
        const size_t into_offset = last ? 0 : (s % 2) * bytes;
        into->recv(previous, slot, into_offset, bytes);
        if (s == 0) {
          input_buffer->send(next, slot, block(1) * bytes, bytes);
        } else {
          scratch_buffer->send(next, slot, ((s - 1) % 2) * bytes, bytes);
        }
        if (!into->waitRecv(nullptr, until(deadline))) {
          throw std::runtime_error("the receive was aborted");
        }
        char* partial = last ? static_cast<char*>(out) : scratch + into_offset;
        reduce_into(partial, input + block(s + 2) * bytes, count, type, op);
        auto* sent = s == 0 ? input_buffer : scratch_buffer;
        if (!sent->waitSend(nullptr, until(deadline))) {
          throw std::runtime_error("the send was aborted");
        }
      }
    });
  } catch (...) {
    // gloo's transport may still write into these (Note [Failed groups]).
    std::vector<std::vector<char>> bytes;
    bytes.push_back(std::move(ring_scratch_));
    ring_scratch_.clear();
    bury(std::move(buffers), std::move(bytes));
    throw;
  }
  // Partials of a very large call are not kept for the next.
  if (ring_scratch_.size() > kKeptScratchBytes) {
    ring_scratch_.clear();
    ring_scratch_.shrink_to_fit();
  }
}

}  // namespace loom::distributed
