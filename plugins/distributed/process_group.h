// A process group of the distributed plugin: its engine, the numbering and fingerprints
// of its collectives (Note [Collective fingerprints]), the worker thread that runs them
// in call order (Note [Asynchronous collectives]), its failure state and its flight
// record (Note [Failed groups]).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine.h"

namespace loom::distributed {

// memcpy that accepts empty ranges with null pointers (an empty vector's data(), an empty
// tensor's storage), which memcpy itself does not.
inline void copy_bytes(void* dst, const void* src, size_t n) {
  if (n > 0) std::memcpy(dst, src, n);
}

// An all-reduce of at most this many bytes travels with its fingerprint (Note
// [Collective fingerprints]); every exchange message may be this long.
constexpr size_t kInlineBytes = 64 * 1024;

enum class CollectiveKind : uint8_t {
  kAllReduce = 1,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kBarrier,
  kSend,
  kRecv,
};
const char* kind_name(CollectiveKind kind);
const char* reduce_op_name(ReduceOp op);
const char* element_type_name(ElementType type);

// What a rank calls, sent to every peer before the engine runs (fixed size, POD).
struct Fingerprint {
  uint32_t magic = 0x4c4f4f4d;  // "LOOM"
  uint8_t kind = 0;             // CollectiveKind
  uint8_t type = 0;             // ElementType
  uint8_t reduce = 0;           // ReduceOp
  uint8_t ndim = 0;
  int32_t root = -1;
  int32_t rank = -1;
  int64_t seq = 0;
  int64_t numel = 0;
  int64_t shape[8] = {};         // the first 8 sizes (a 9th dim and later fold into numel)
  int64_t inline_bytes = 0;      // bytes that follow the fingerprint in the exchange
  std::string describe() const;  // "all_reduce(float32[4, 2], sum)"
  // Whether two ranks may run this collective together.
  bool matches(const Fingerprint& other) const;
};

// One collective or point-to-point operation, as the kernels hand it to a group.
struct Collective {
  Fingerprint fingerprint;
  std::vector<char> inline_payload;  // sent with the fingerprint
  // Made when the collective starts, for a payload of the tensors' data (read then, not
  // when the call was queued, as the engine would read them); replaces inline_payload.
  std::function<std::vector<char>()> make_payload;
  // Runs once every rank's fingerprint matched; `peers` are their exchange messages
  // (the payload after each fingerprint).
  std::function<void(Engine& engine, const std::vector<std::span<const char>>& peers,
                     std::chrono::milliseconds timeout, uint32_t tag)>
      body;
  // Tensors and scratch memory the body reads or writes: kept for good when the
  // collective fails, as its transport may still use them (Note [Failed groups]).
  std::vector<std::shared_ptr<void>> keep_alive;
  int peer = -1;           // send/recv: the peer; no exchange with the group
  void* stream = nullptr;  // a device engine's: the stream of the caller's kernel
};

struct WorkState {
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  std::string error;  // empty: succeeded
};

class ProcessGroup {
 public:
  ProcessGroup(int id, int rank, int size, std::vector<int> global_ranks,
               std::unique_ptr<Engine> engine, std::chrono::milliseconds timeout);
  ~ProcessGroup();

  int id() const { return id_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::vector<int>& global_ranks() const { return global_ranks_; }
  std::string backend() const { return engine_->name(); }
  int cuda_device() const { return engine_->cuda_device(); }
  bool supports(ElementType type) const { return engine_->supports(type); }
  std::chrono::milliseconds timeout() const { return timeout_; }

  // Numbers the collective and runs it (inline when nothing is queued), or queues it
  // for the worker when async. Throws the collective's error when it runs inline.
  std::shared_ptr<WorkState> submit(Collective c, bool async);

  // Waits for a work item; throws its error, or a timeout naming the collective.
  void wait(const std::shared_ptr<WorkState>& work, std::chrono::milliseconds timeout);

  // JSON: this rank's last collectives in this group, oldest first.
  std::string flight_record() const;

 private:
  struct Task {
    Collective collective;
    std::shared_ptr<WorkState> state;
  };
  struct Record {
    int64_t seq;
    std::string what;
    std::string state;  // queued, started, completed, failed
    double queued_ms, started_ms = -1, ended_ms = -1;
  };

  void run(Task& task);
  void run_collective(Collective& c);
  void run_point_to_point(Collective& c);
  // Raises the collective's error; a fatal one fails the group (Note [Failed groups]).
  [[noreturn]] void fail(const Collective& c, const std::string& why, bool fatal = true);
  void worker();
  void note(int64_t seq, const std::string& state, const std::string& what = "");
  std::string write_flight_record() const;

  const int id_, rank_, size_;
  const std::vector<int> global_ranks_;
  std::unique_ptr<Engine> engine_;
  const std::chrono::milliseconds timeout_;
  const std::chrono::steady_clock::time_point created_ = std::chrono::steady_clock::now();

  std::mutex mutex_;  // the queue, seq and the failure
  std::condition_variable queue_cv_;
  std::deque<Task> queue_;
  bool running_ = false;  // a collective runs now (inline or on the worker)
  bool stopping_ = false;
  int64_t next_seq_ = 0;
  std::vector<int64_t> sent_to_, received_from_;  // messages numbered per peer and direction
  std::string failure_;                           // the first error; the group is unusable after it
  std::vector<std::shared_ptr<void>> graveyard_;  // buffers of failed collectives

  mutable std::mutex record_mutex_;
  std::deque<Record> records_;
  std::thread worker_;
  // Async sends and receives, each on a thread of its own with its work's state; the
  // threads of ended works are joined when the next one starts.
  std::vector<std::pair<std::thread, std::shared_ptr<WorkState>>> p2p_threads_;
};

}  // namespace loom::distributed
