// The profiler's records: one buffer per thread that made any, each a list of records and
// the stack of ops and ranges open on that thread (Note [Profiler records]).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "loom/plugin.h"
#include "loom/profiler_api.h"

namespace loom::profiler {

struct Record {
  int32_t kind = LOOM_PROFILER_OP;
  const char* static_name = nullptr;  // op names (static for the process), else `name`
  std::string name;
  int64_t start_ns = 0;
  int64_t end_ns = -1;  // -1 while open
  uint64_t id = 0;
  uint64_t parent_id = 0;
  uint32_t dispatch_key = LOOM_KEY_UNDEFINED;
  std::string input_shapes;
  std::string input_dtypes;
  std::string stack;
  int64_t bytes_allocated = 0;
  int64_t bytes_freed = 0;
  uint64_t sequence_nr = 0;
  bool has_sequence_nr = false;
  LoomDevice device{0, 0};
  uint64_t stream = 0;
  int64_t bytes = 0;
  uint64_t correlation_id = 0;
};

struct Options {
  bool record_shapes = false;
  bool profile_memory = false;
  bool with_stack = false;
};

// An append-only list of records in fixed chunks: appending never moves the records
// already there (a vector's growth would move every one, strings included, in the middle
// of an op call) and allocates once per kChunk records (std::deque would every 2).
class RecordLog {
 public:
  static constexpr size_t kChunk = 1024;
  Record& emplace_back() {
    if (size_ % kChunk == 0 && size_ / kChunk == chunks_.size()) {
      chunks_.push_back(std::make_unique<Record[]>(kChunk));
    }
    Record& r = chunks_[size_ / kChunk][size_ % kChunk];
    ++size_;
    return r;
  }
  Record& operator[](size_t i) { return chunks_[i / kChunk][i % kChunk]; }
  const Record& operator[](size_t i) const { return chunks_[i / kChunk][i % kChunk]; }
  size_t size() const { return size_; }
  // Drops every record and gives the memory back.
  void clear() {
    chunks_.clear();
    size_ = 0;
  }

 private:
  std::vector<std::unique_ptr<Record[]>> chunks_;
  size_t size_ = 0;
};

// What one thread recorded. The mutex is uncontended except while a stopped recording is
// read or cleared.
struct ThreadBuffer {
  std::mutex mutex;
  uint64_t os_thread_id = 0;
  uint64_t ordinal = 0;  // the buffer's index, the high bits of its record ids
  uint64_t next_local_id = 1;
  uint32_t generation = 0;  // bumped when cleared: tokens of older records are ignored
  RecordLog records;
  std::vector<size_t> open;  // indices into records, innermost last
};

class Recorder {
 public:
  static Recorder& instance();

  // Drops every record and sets the options of the next recording.
  void reset(const Options& options);
  const Options& options() const { return options_; }

  // An op call entering the Profiler key; returns a token for op_end.
  uint64_t op_begin(const LoomKernelCall* call);
  void op_end(uint64_t token);

  uint64_t range_begin(const char* name, int32_t kind, uint64_t sequence_nr);
  void range_end(uint64_t id);
  void sequence(uint64_t sequence_nr);
  uint64_t correlation_id();
  void device_event(const LoomTraceDeviceEventArgs& event);
  void memory_event(const LoomAllocationEvent& event);

  // Recording stopped at `stop_ns`: records still open end there.
  void stopped(int64_t stop_ns) { stop_ns_ = stop_ns; }
  // Calls visit for each record, thread by thread.
  void visit(void* ctx, LoomProfilerVisitFn visit);

 private:
  ThreadBuffer& buffer();
  // Appends a record open on this thread (under b.mutex) and returns its index.
  size_t open_record(ThreadBuffer& b, int32_t kind);
  // Closes the open record at `index` (under b.mutex).
  void close_record(ThreadBuffer& b, size_t index, int64_t end_ns);

  Options options_;
  int64_t stop_ns_ = 0;
  std::mutex buffers_mutex_;
  std::vector<std::unique_ptr<ThreadBuffer>> buffers_;
};

int64_t now_ns();

}  // namespace loom::profiler
