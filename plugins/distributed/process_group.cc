// Process groups: numbering, fingerprints, the worker and failures.
//
// Note [Collective fingerprints]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The worst failure of PyTorch's process groups is the silent hang: ranks that call
// different collectives, or the same one on different shapes, wait for each other until
// a watchdog fires without naming the culprit (and gloo's TCP transport aborts the
// process outright when a message is longer than the receive posted for it). So every
// collective of a group gets the next sequence number of that group, and before an
// engine moves any data each rank sends every peer a fixed-size fingerprint (sequence
// number, op, dtype, shape, reduce op, root) on a slot of that sequence number, and
// receives theirs into buffers large enough for any exchange message. Each rank then
// compares every fingerprint with rank 0's, so all ranks refuse the same mismatch with
// the same message naming both calls, and nothing has been written. A peer whose
// fingerprint never comes within the group's timeout is named in the timeout error; a
// peer whose connection breaks (a killed rank) is named at once.
// The exchange is one message each way between every pair, concurrently, so it costs
// about one network latency. To keep small all-reduces as fast as PyTorch's, an
// all-reduce of at most kInlineBytes sends its data in the same message as its
// fingerprint and every rank reduces the n buffers locally in rank order: one latency
// in all, instead of gloo ring's 2(n-1) steps, and results that are bitwise the same on
// every rank. Larger collectives run the engine's algorithm after the exchange.
// Point-to-point messages have their own numbering per peer and run beside the queue
// (an async one on a thread of its own): the sender sends its fingerprint, then the
// data, and the receiver checks the fingerprint (dtype, size, tag) before it posts the
// receive, so a mismatch is an error on the receiver.
//
// Note [Asynchronous collectives]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Collectives must run in the same order on every rank, so each group runs them one at
// a time in the order they were called (their sequence numbers). An async call queues
// its collective for the group's worker thread and returns a Work at once; a blocking
// call runs inline on the caller's thread when nothing is queued or running (the
// common case: no thread hop on the latency path), and otherwise queues behind the
// others and waits. The tensors of a queued collective are retained until it ends.
//
// Note [Failed groups]
// ~~~~~~~~~~~~~~~~~~~~
// A mismatch is refused by every rank at the same sequence number before any data
// moves, so the group stays usable. After a timeout or a broken connection the group is
// failed: its engine's
// state is unknown (a peer may still send into a posted buffer), so every later
// collective of the group raises the first error, the buffers and tensors of the failed
// collective are kept alive, and the engine is never destroyed. Each failure writes the
// rank's flight record, its last collectives in the group with their states and times,
// as JSON to $LOOM_FLIGHT_RECORD_DIR (default: the temporary directory), and the error
// names the file.
#include "process_group.h"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace loom::distributed {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kExchangeCapacity = sizeof(Fingerprint) + kInlineBytes;
constexpr size_t kFlightRecordLength = 64;

std::string join_ranks(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

}  // namespace

const char* kind_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return "all_reduce";
    case CollectiveKind::kBroadcast:
      return "broadcast";
    case CollectiveKind::kReduce:
      return "reduce";
    case CollectiveKind::kAllGather:
      return "all_gather";
    case CollectiveKind::kReduceScatter:
      return "reduce_scatter";
    case CollectiveKind::kAllToAll:
      return "all_to_all";
    case CollectiveKind::kBarrier:
      return "barrier";
    case CollectiveKind::kSend:
      return "send";
    case CollectiveKind::kRecv:
      return "recv";
  }
  return "unknown collective";
}

const char* reduce_op_name(ReduceOp op) {
  static const char* names[] = {"sum", "product", "min", "max", "avg"};
  return static_cast<size_t>(op) < 5 ? names[static_cast<size_t>(op)] : "unknown";
}

const char* element_type_name(ElementType type) {
  static const char* names[] = {"float32", "float64", "float16", "bfloat16", "int8",
                                "uint8",   "int16",   "int32",   "int64",    "bool"};
  return static_cast<size_t>(type) < 10 ? names[static_cast<size_t>(type)] : "unknown";
}

std::string Fingerprint::describe() const {
  const auto k = static_cast<CollectiveKind>(kind);
  std::ostringstream s;
  s << kind_name(k) << "(";
  if (k != CollectiveKind::kBarrier) {
    s << element_type_name(static_cast<ElementType>(type)) << "[";
    for (int d = 0; d < ndim && d < 8; ++d) s << (d ? ", " : "") << shape[d];
    if (ndim > 8) s << ", ...";
    s << "]";
    if (k == CollectiveKind::kAllReduce || k == CollectiveKind::kReduce ||
        k == CollectiveKind::kReduceScatter) {
      s << ", " << reduce_op_name(static_cast<ReduceOp>(reduce));
    }
    if (k == CollectiveKind::kBroadcast) s << ", src=" << root;
    if (k == CollectiveKind::kReduce) s << ", dst=" << root;
    if (k == CollectiveKind::kSend || k == CollectiveKind::kRecv) s << ", tag=" << root;
  }
  s << ")";
  return s.str();
}

bool Fingerprint::matches(const Fingerprint& o) const {
  if (magic != o.magic || kind != o.kind || seq != o.seq) return false;
  const auto k = static_cast<CollectiveKind>(kind);
  if (k == CollectiveKind::kBarrier) return true;
  if (type != o.type) return false;
  if (k == CollectiveKind::kAllToAll) return true;  // sizes are checked pairwise
  if ((k == CollectiveKind::kAllReduce || k == CollectiveKind::kReduce ||
       k == CollectiveKind::kReduceScatter) &&
      reduce != o.reduce) {
    return false;
  }
  if ((k == CollectiveKind::kBroadcast || k == CollectiveKind::kReduce) && root != o.root) {
    return false;
  }
  if (numel != o.numel || ndim != o.ndim || inline_bytes != o.inline_bytes) return false;
  return std::memcmp(shape, o.shape, sizeof shape) == 0;
}

ProcessGroup::ProcessGroup(int id, int rank, int size, std::vector<int> global_ranks,
                           std::unique_ptr<Engine> engine, std::chrono::milliseconds timeout)
    : id_(id),
      rank_(rank),
      size_(size),
      global_ranks_(std::move(global_ranks)),
      engine_(std::move(engine)),
      timeout_(timeout),
      sent_to_(size, 0),
      received_from_(size, 0) {
  worker_ = std::thread([this] { worker(); });
}

ProcessGroup::~ProcessGroup() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  worker_.join();
  for (auto& [thread, work] : p2p_threads_) thread.join();
  // A failed engine may still be written into by its transport (Note [Failed groups]).
  if (!failure_.empty()) (void)engine_.release();
}

std::shared_ptr<WorkState> ProcessGroup::submit(Collective c, bool async) {
  auto state = std::make_shared<WorkState>();
  std::unique_lock<std::mutex> lock(mutex_);
  if (!failure_.empty()) {
    throw std::runtime_error("[distributed] process group " + std::to_string(id_) +
                             " can no longer be used after an earlier failure: " + failure_);
  }
  Fingerprint& fp = c.fingerprint;
  fp.rank = rank_;
  if (c.peer < 0) {
    fp.seq = next_seq_++;
  } else if (static_cast<CollectiveKind>(fp.kind) == CollectiveKind::kSend) {
    fp.seq = sent_to_[c.peer]++;
  } else {
    fp.seq = received_from_[c.peer]++;
  }
  note(fp.seq, "queued",
       c.peer >= 0 ? fp.describe() + " with rank " + std::to_string(global_ranks_[c.peer])
                   : fp.describe());
  if (c.peer >= 0) {
    // Point to point: matched by per-peer numbers, not by the group's order, so it runs
    // beside the queue (a send waits for the peer's receive, which may be queued
    // behind the sender's own collectives on that peer).
    lock.unlock();
    auto task = std::make_shared<Task>(Task{std::move(c), state});
    if (!async) {
      run(*task);
      if (!state->error.empty()) throw std::runtime_error(state->error);
      return state;
    }
    std::lock_guard<std::mutex> relock(mutex_);
    for (auto it = p2p_threads_.begin(); it != p2p_threads_.end();) {
      std::unique_lock<std::mutex> done_lock(it->second->mutex);
      const bool ended = it->second->done;
      done_lock.unlock();
      if (!ended) {
        ++it;
        continue;
      }
      it->first.join();  // it has set its state: it is returning
      it = p2p_threads_.erase(it);
    }
    p2p_threads_.emplace_back(std::thread([this, task] { run(*task); }), state);
    return state;
  }
  if (!async && queue_.empty() && !running_) {
    running_ = true;
    lock.unlock();
    Task task{std::move(c), state};
    run(task);
    lock.lock();
    running_ = false;
    lock.unlock();
    queue_cv_.notify_all();
    if (!state->error.empty()) throw std::runtime_error(state->error);
    return state;
  }
  queue_.push_back(Task{std::move(c), state});
  lock.unlock();
  queue_cv_.notify_all();
  if (!async) {
    std::unique_lock<std::mutex> wait_lock(state->mutex);
    state->done_cv.wait(wait_lock, [&] { return state->done; });
    if (!state->error.empty()) throw std::runtime_error(state->error);
  }
  return state;
}

void ProcessGroup::wait(const std::shared_ptr<WorkState>& work, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(work->mutex);
  if (!work->done_cv.wait_for(lock, timeout, [&] { return work->done; })) {
    throw std::runtime_error(
        "[distributed] Work.wait timed out after " + std::to_string(timeout.count()) +
        " ms; the collective is still running (process group " + std::to_string(id_) +
        "'s own timeout is " + std::to_string(timeout_.count()) + " ms)");
  }
  if (!work->error.empty()) throw std::runtime_error(work->error);
}

void ProcessGroup::worker() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    queue_cv_.wait(lock, [&] { return stopping_ || (!queue_.empty() && !running_); });
    if (queue_.empty() || running_) return;  // stopping, nothing left to run
    Task task = std::move(queue_.front());
    queue_.pop_front();
    running_ = true;
    lock.unlock();
    run(task);
    lock.lock();
    running_ = false;
    queue_cv_.notify_all();
  }
}

void ProcessGroup::run(Task& task) {
  std::string error;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    error = failure_;
  }
  if (!error.empty()) {
    error = "[distributed] process group " + std::to_string(id_) +
            " can no longer be used after an earlier failure: " + error;
  } else {
    try {
      note(task.collective.fingerprint.seq, "started");
      if (task.collective.peer >= 0) {
        run_point_to_point(task.collective);
      } else {
        run_collective(task.collective);
      }
      note(task.collective.fingerprint.seq, "completed");
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  if (error.empty()) task.collective.keep_alive.clear();
  {
    std::lock_guard<std::mutex> lock(task.state->mutex);
    task.state->error = error;
    task.state->done = true;
  }
  task.state->done_cv.notify_all();
}

void ProcessGroup::run_collective(Collective& c) {
  const Clock::time_point deadline = Clock::now() + timeout_;
  engine_->set_stream(c.stream);
  if (c.make_payload) c.inline_payload = c.make_payload();
  const Fingerprint& mine = c.fingerprint;
  std::vector<char> message(sizeof(Fingerprint) + c.inline_payload.size());
  copy_bytes(message.data(), &mine, sizeof mine);
  copy_bytes(message.data() + sizeof mine, c.inline_payload.data(), c.inline_payload.size());
  reinterpret_cast<Fingerprint*>(message.data())->inline_bytes =
      static_cast<int64_t>(c.inline_payload.size());

  std::vector<PeerMessage> from;
  engine_->exchange(message, kExchangeCapacity, static_cast<uint32_t>(mine.seq), deadline, from);
  std::vector<int> missing;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    if (!from[r].error.empty()) {
      fail(c, "the connection to rank " + std::to_string(global_ranks_[r]) +
                  " broke (did it exit?): " + from[r].error);
    }
    if (!from[r].arrived) missing.push_back(global_ranks_[r]);
  }
  if (!missing.empty()) {
    fail(c, "timed out after " + std::to_string(timeout_.count()) + " ms: rank" +
                (missing.size() > 1 ? "s " : " ") + join_ranks(missing) +
                " never joined collective #" + std::to_string(mine.seq));
  }
  std::vector<Fingerprint> prints(size_);
  std::vector<std::span<const char>> payloads(size_);
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) {
      prints[r] = mine;
      prints[r].inline_bytes = static_cast<int64_t>(c.inline_payload.size());
      payloads[r] = {c.inline_payload.data(), c.inline_payload.size()};
      continue;
    }
    copy_bytes(&prints[r], from[r].bytes.data(), sizeof(Fingerprint));
    if (prints[r].magic != mine.magic || prints[r].inline_bytes < 0 ||
        static_cast<size_t>(prints[r].inline_bytes) > kInlineBytes) {
      fail(c, "rank " + std::to_string(global_ranks_[r]) + " sent a malformed fingerprint");
    }
    payloads[r] = from[r].bytes.subspan(sizeof(Fingerprint), prints[r].inline_bytes);
  }
  for (int r = 1; r < size_; ++r) {
    if (!prints[r].matches(prints[0])) {
      // Calls that read the same differ in their inline payloads (a peer not built alike).
      const auto call = [&](int k) {
        std::string text = prints[k].describe();
        if (prints[0].describe() == prints[r].describe()) {
          text += " with " + std::to_string(prints[k].inline_bytes) + " inline bytes";
        }
        return text;
      };
      fail(c,
           "ranks called different collectives as collective #" + std::to_string(mine.seq) +
               " of the group: rank " + std::to_string(global_ranks_[0]) + " called " + call(0) +
               ", rank " + std::to_string(global_ranks_[r]) + " called " + call(r),
           /*fatal=*/false);
    }
  }
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  try {
    c.body(*engine_, payloads, std::max(left, std::chrono::milliseconds(1)),
           static_cast<uint32_t>(mine.seq));
  } catch (const std::exception& e) {
    fail(c, e.what());
  }
}

void ProcessGroup::run_point_to_point(Collective& c) {
  const Fingerprint& mine = c.fingerprint;
  const uint32_t tag = static_cast<uint32_t>(mine.seq * 2);
  try {
    engine_->set_stream(c.stream);
    if (static_cast<CollectiveKind>(mine.kind) == CollectiveKind::kSend) {
      engine_->send_message(&mine, sizeof mine, c.peer, tag, timeout_);
    } else {
      Fingerprint theirs;
      engine_->recv_message(&theirs, sizeof theirs, c.peer, tag, timeout_);
      Fingerprint expected = theirs;
      expected.kind = mine.kind;
      if (theirs.magic != mine.magic || theirs.kind != uint8_t(CollectiveKind::kSend) ||
          !expected.matches(mine) || theirs.root != mine.root) {
        fail(c,
             "rank " + std::to_string(global_ranks_[c.peer]) + " sent " + theirs.describe() +
                 " as its message #" + std::to_string(mine.seq) + " to this rank, which called " +
                 mine.describe(),
             /*fatal=*/false);
      }
    }
    c.body(*engine_, {}, timeout_, tag + 1);
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()).rfind("[distributed]", 0) == 0) throw;
    fail(c, e.what());
  }
}

void ProcessGroup::fail(const Collective& c, const std::string& why, bool fatal) {
  std::string message;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    message = "[distributed] process group " + std::to_string(id_) + " (" + engine_->name() +
              ", rank " + std::to_string(global_ranks_[rank_]) + " of " + std::to_string(size_) +
              "): " + c.fingerprint.describe() + " #" + std::to_string(c.fingerprint.seq) +
              " failed: " + why;
    if (fatal) {
      if (failure_.empty()) failure_ = message;
      for (const auto& t : c.keep_alive) graveyard_.push_back(t);
    }
  }
  note(c.fingerprint.seq, "failed");
  std::string path = write_flight_record();
  if (!path.empty()) message += " (flight record: " + path + ")";
  throw std::runtime_error(message);
}

void ProcessGroup::note(int64_t seq, const std::string& state, const std::string& what) {
  std::lock_guard<std::mutex> lock(record_mutex_);
  for (auto it = records_.rbegin(); it != records_.rend(); ++it) {
    if (it->seq != seq) continue;
    it->state = state;
    if (state == "started") it->started_ms = ms_since(created_);
    if (state == "completed" || state == "failed") it->ended_ms = ms_since(created_);
    return;
  }
  records_.push_back({seq, what, state, ms_since(created_)});
  if (records_.size() > kFlightRecordLength) records_.pop_front();
}

std::string ProcessGroup::flight_record() const {
  std::ostringstream s;
  s << "{\"group\": " << id_ << ", \"backend\": \"" << engine_->name()
    << "\", \"rank\": " << global_ranks_[rank_] << ", \"size\": " << size_
    << ", \"collectives\": [";
  std::lock_guard<std::mutex> lock(record_mutex_);
  bool first = true;
  for (const Record& r : records_) {
    s << (first ? "" : ", ") << "{\"seq\": " << r.seq << ", \"op\": \"" << r.what
      << "\", \"state\": \"" << r.state << "\", \"queued_ms\": " << r.queued_ms
      << ", \"started_ms\": " << r.started_ms << ", \"ended_ms\": " << r.ended_ms << "}";
    first = false;
  }
  s << "]}";
  return s.str();
}

std::string ProcessGroup::write_flight_record() const {
  namespace fs = std::filesystem;
  std::error_code ec;
  const char* dir_env = std::getenv("LOOM_FLIGHT_RECORD_DIR");
  fs::path dir = dir_env != nullptr && *dir_env ? fs::path(dir_env) : fs::temp_directory_path(ec);
  if (ec) return "";
  fs::create_directories(dir, ec);
  fs::path path = dir / ("loom_flight_record_group" + std::to_string(id_) + "_rank" +
                         std::to_string(global_ranks_[rank_]) + ".json");
  std::ofstream out(path);
  out << flight_record() << "\n";
  return out ? path.string() : "";
}

}  // namespace loom::distributed
