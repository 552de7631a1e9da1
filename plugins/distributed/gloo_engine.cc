// The gloo engine module (libloom_distributed_gloo.so, Note [Engine modules]): process
// groups over gloo's TCP transport. Every rank connects to every other through the
// group's store (gloo's full mesh); collectives are gloo's algorithms with loom's
// reduction functions (so every dtype and reduce op reduces the same way on every
// engine); the plugin's exchange and point-to-point messages are unbound buffers on
// slots of their own.
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoallv.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/reduce.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <cstring>
#include <stdexcept>

#include "engine.h"

namespace loom::distributed {
namespace {

using Clock = std::chrono::steady_clock;

// Slot prefixes above gloo's own (0x01..0x08, gloo/types.h).
constexpr uint64_t kExchangeSlot = uint64_t{0x70} << 56;
constexpr uint64_t kPointToPointSlot = uint64_t{0x71} << 56;

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

// gloo's reduction callback: c = a op b, where c may be a.
gloo::AllreduceOptions::Func reduction(ElementType type, ReduceOp op) {
  return [type, op](void* c, const void* a, const void* b, size_t n) {
    const size_t bytes = n * element_size(type);
    if (c == b) {
      reduce_into(c, a, n, type, op);
      return;
    }
    if (c != a) std::memmove(c, a, bytes);
    reduce_into(c, b, n, type, op);
  };
}

// Rethrows gloo's exceptions as the engine's, with the operation's name.
template <typename F>
void run(const char* what, F&& body) {
  try {
    body();
  } catch (const gloo::IoException& e) {
    throw std::runtime_error(std::string("gloo ") + what + " failed: " + e.what());
  } catch (const gloo::Exception& e) {
    throw std::runtime_error(std::string("gloo ") + what + " failed: " + e.what());
  }
}

class GlooEngine final : public Engine {
 public:
  GlooEngine(distributed::Store& store, const EngineOptions& o) : rank_(o.rank), size_(o.size) {
    gloo::transport::tcp::attr attr;
    if (!o.iface.empty()) {
      attr.iface = o.iface;
    } else {
      attr.hostname = o.hostname;
    }
    device_ = gloo::transport::tcp::CreateDevice(attr);
    context_ = std::make_shared<gloo::rendezvous::Context>(o.rank, o.size);
    context_->setTimeout(o.timeout);
    GlooStore data_store(store, o.timeout, "data/");
    context_->connectFullMesh(data_store, device_);
    control_ = std::make_shared<gloo::rendezvous::Context>(o.rank, o.size);
    control_->setTimeout(o.timeout);
    GlooStore control_store(store, o.timeout, "control/");
    control_->connectFullMesh(control_store, device_);
  }

  // Buffers of an operation that did not complete stay alive as long as the engine:
  // gloo's transport may still write into them (Note [Failed groups] in
  // process_group.cc).
  ~GlooEngine() override = default;

  std::string name() const override { return "gloo"; }

  void exchange(std::span<const char> mine, size_t capacity, uint32_t tag,
                Clock::time_point deadline, std::vector<PeerMessage>& from) override {
    from.assign(size_, {});
    const uint64_t slot = kExchangeSlot | tag;
    std::vector<std::vector<char>>& inbox = inbox_;
    inbox.resize(size_);
    std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> recvs(size_);
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      if (inbox[r].size() < capacity) inbox[r].resize(capacity);
      recvs[r] = control_->createUnboundBuffer(inbox[r].data(), capacity);
      try {
        recvs[r]->recv(r, slot, 0, capacity);
      } catch (const std::exception& e) {
        from[r].error = e.what();
      }
    }
    std::vector<char> out(mine.begin(), mine.end());
    auto send = control_->createUnboundBuffer(out.data(), out.size());
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
      for (auto& b : recvs) graveyard_buffers_.push_back(std::move(b));
      graveyard_buffers_.push_back(std::move(send));
      for (auto& v : inbox) graveyard_bytes_.push_back(std::move(v));
      inbox.clear();
      graveyard_bytes_.push_back(std::move(out));
    }
  }

  void all_reduce(void* data, size_t count, ElementType type, ReduceOp op, uint32_t tag,
                  std::chrono::milliseconds timeout) override {
    if (count == 0) return;
    run("all_reduce", [&] {
      gloo::AllreduceOptions opts(context_);
      set_output(opts, data, count, type);
      opts.setReduceFunction(reduction(type, op));
      opts.setTag(tag);
      opts.setTimeout(timeout);
      gloo::allreduce(opts);
    });
  }

  void broadcast(void* data, size_t bytes, int root, uint32_t tag,
                 std::chrono::milliseconds timeout) override {
    if (bytes == 0) return;
    run("broadcast", [&] {
      gloo::BroadcastOptions opts(context_);
      opts.setOutput(static_cast<char*>(data), bytes);
      opts.setRoot(root);
      opts.setTag(tag);
      opts.setTimeout(timeout);
      gloo::broadcast(opts);
    });
  }

  void reduce(void* data, size_t count, ElementType type, ReduceOp op, int root, uint32_t tag,
              std::chrono::milliseconds timeout) override {
    if (count == 0) return;
    // gloo uses the output as scratch on every rank: other ranks reduce a copy.
    std::vector<char> scratch;
    void* target = data;
    if (rank_ != root) {
      scratch.assign(static_cast<char*>(data),
                     static_cast<char*>(data) + count * element_size(type));
      target = scratch.data();
    }
    run("reduce", [&] {
      gloo::ReduceOptions opts(context_);
      set_output(opts, target, count, type);
      opts.setRoot(root);
      opts.setReduceFunction(reduction(type, op));
      opts.setTag(tag);
      opts.setTimeout(timeout);
      gloo::reduce(opts);
    });
  }

  void all_gather(const void* in, size_t bytes, void* out, uint32_t tag,
                  std::chrono::milliseconds timeout) override {
    if (bytes == 0) return;
    run("all_gather", [&] {
      gloo::AllgatherOptions opts(context_);
      opts.setInput(const_cast<char*>(static_cast<const char*>(in)), bytes);
      opts.setOutput(static_cast<char*>(out), bytes * size_);
      opts.setTag(tag);
      opts.setTimeout(timeout);
      gloo::allgather(opts);
    });
  }

  void all_to_all(const void* in, std::span<const size_t> in_bytes, void* out,
                  std::span<const size_t> out_bytes, uint32_t tag,
                  std::chrono::milliseconds timeout) override {
    run("all_to_all", [&] {
      gloo::AlltoallvOptions opts(context_);
      std::vector<int64_t> ins(in_bytes.begin(), in_bytes.end());
      std::vector<int64_t> outs(out_bytes.begin(), out_bytes.end());
      opts.setInput(const_cast<char*>(static_cast<const char*>(in)), ins);
      opts.setOutput(static_cast<char*>(out), outs);
      opts.setTag(tag);
      opts.setTimeout(timeout);
      gloo::alltoallv(opts);
    });
  }

  void send(const void* data, size_t bytes, int peer, uint32_t tag,
            std::chrono::milliseconds timeout) override {
    run("send", [&] {
      auto buf = context_->createUnboundBuffer(const_cast<void*>(data), bytes);
      buf->send(peer, kPointToPointSlot | tag, 0, bytes);
      if (!buf->waitSend(nullptr, timeout)) throw std::runtime_error("the send was aborted");
    });
  }

  void recv(void* data, size_t bytes, int peer, uint32_t tag,
            std::chrono::milliseconds timeout) override {
    run("recv", [&] {
      auto buf = context_->createUnboundBuffer(data, bytes);
      buf->recv(peer, kPointToPointSlot | tag, 0, bytes);
      try {
        if (!buf->waitRecv(nullptr, timeout)) throw std::runtime_error("the receive was aborted");
      } catch (...) {
        graveyard_buffers_.push_back(std::move(buf));
        throw;
      }
    });
  }

 private:
  template <typename Options>
  static void set_output(Options& opts, void* data, size_t count, ElementType type) {
    switch (element_size(type)) {
      case 8:
        return opts.setOutput(static_cast<int64_t*>(data), count);
      case 4:
        return opts.setOutput(static_cast<int32_t*>(data), count);
      case 2:
        return opts.setOutput(static_cast<int16_t*>(data), count);
      default:
        return opts.setOutput(static_cast<int8_t*>(data), count);
    }
  }

  int rank_;
  int size_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::rendezvous::Context> context_;  // collectives and point to point
  std::shared_ptr<gloo::rendezvous::Context> control_;  // the plugin's exchanges
  std::vector<std::vector<char>> inbox_;                // exchange receive buffers, one per peer
  std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> graveyard_buffers_;
  std::vector<std::vector<char>> graveyard_bytes_;
};

}  // namespace
}  // namespace loom::distributed

extern "C" __attribute__((visibility("default"))) loom::distributed::Engine*
loom_distributed_make_engine(loom::distributed::Store* store,
                             const loom::distributed::EngineOptions* options, std::string* error) {
  try {
    return new loom::distributed::GlooEngine(*store, *options);
  } catch (const std::exception& e) {
    *error = e.what();
  } catch (...) {
    *error = "unknown error";
  }
  return nullptr;
}
