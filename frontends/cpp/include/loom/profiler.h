// The profiler in the C++ API (the profiler plugin records; this API starts, steps and
// stops it and presents what it recorded), shaped like torch.profiler:
//
//   loom::profiler::Profiler p({.record_shapes = true, .profile_memory = true});
//   { loom::profiler::Range r("data"); batch = next(); }
//   ... train ...
//   p.stop();
//   p.export_chrome_trace("trace.json");   // Perfetto, chrome://tracing
//   std::cout << p.table("self_time", 10) << p.memory_summary();
//
// With a schedule, the profiler records only some steps of a loop that calls p.step():
// `wait` steps off, `warmup` steps recorded and dropped, `active` steps kept, `repeat`
// times (0: until stopped), after `skip_first` steps; on_trace_ready runs after each
// active span with its events.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loom/core/device.h"
#include "loom/devices.h"

namespace loom::profiler {

class Profiler;

struct Schedule {
  int64_t wait = 0;
  int64_t warmup = 0;
  int64_t active = 1;
  int64_t repeat = 0;  // cycles of wait + warmup + active; 0: until stopped
  int64_t skip_first = 0;
};

struct ProfilerOptions {
  bool record_shapes = false;   // input shapes and dtypes of each op
  bool profile_memory = false;  // bytes allocated and freed per op; memory counters
  bool with_stack = false;      // the C++ call stack of each op called by the app
  std::optional<Schedule> schedule = std::nullopt;
  std::function<void(Profiler&)> on_trace_ready = nullptr;
};

enum class EventKind { Op, UserRange, BackwardNode, DeviceKernel, DeviceCopy, DeviceOther, Memory };
std::string_view kind_name(EventKind kind);

struct Event {
  EventKind kind = EventKind::Op;
  std::string name;      // "loom::add", a range's name, a backward node's, a kernel's
  std::string overload;  // ops: "Tensor" of loom::add.Tensor ("" for the default)
  int64_t start_ns = 0;  // steady clock
  int64_t end_ns = 0;
  uint64_t id = 0;
  uint64_t parent_id = 0;       // the enclosing op or range on the same thread, 0 at the top
  uint64_t thread_id = 0;       // OS thread id
  std::string dispatch_key;     // ops: the backend whose kernel ran ("CPU", a vendor's name)
  std::string input_shapes;     // record_shapes: "[[2, 3], [3], []]"
  std::string input_dtypes;     // record_shapes: "[float32, float32, Scalar]"
  int64_t bytes_allocated = 0;  // profile_memory: during it, children included
  int64_t bytes_freed = 0;
  std::optional<uint64_t> sequence_nr;  // the autograd node an op created / a node's own
  Device device;                        // device records and Memory
  uint64_t stream = 0;                  // device records
  int64_t bytes =
      0;  // DeviceCopy: bytes moved; Memory: + allocated, - freed; a collective's tensors
  uint64_t correlation_id = 0;  // device records: the op or range that launched them
  std::string stack;            // with_stack: frames, innermost first, one per line

  int64_t duration_ns() const { return end_ns - start_ns; }
  // "loom::add.Tensor" for ops, the name otherwise.
  std::string qualified_name() const;
  // The device of a device record or Memory: "npu_sim:1" ("device type 5:1" when its
  // plugin has been unloaded since).
  std::string device_name() const;
};

// profile_memory: a device's caching-allocator figures (loom::memory_stats) at one
// moment of the recording: when it starts, at each step and when it stops, for every
// device whose plugin publishes them (loom::devices_with_memory_stats).
struct AllocatorSample {
  int64_t time_ns = 0;  // steady clock, as the events
  Device device;
  MemoryStats stats;
};

class Profiler {
 public:
  // Starts recording, or with a schedule starts at step 0 of it. Throws
  // loom::Error("[profiler] ...") when the profiler plugin is not loaded, when another
  // Profiler records, or on a bad schedule.
  explicit Profiler(ProfilerOptions options = {});
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  // Ends the current step and begins the next ("ProfilerStep#N" ranges in the trace);
  // with a schedule, moves through its phases.
  void step();
  // Stops recording and collects the events (a no-op when stopped).
  void stop();
  bool is_recording() const { return recording_; }
  int64_t step_num() const { return step_; }

  // The events of the last active span (without a schedule: of the whole recording),
  // each thread's in start order. Empty until stopped (or until on_trace_ready).
  const std::vector<Event>& events() const { return events_; }
  // profile_memory: the allocators' figures over the same span, in time order.
  const std::vector<AllocatorSample>& allocator_samples() const { return allocator_samples_; }

  // Chrome Trace Event JSON (Note [Chrome trace layout]); throws loom::Error("[profiler]")
  // when the file cannot be written.
  void export_chrome_trace(const std::string& path) const;
  // Calls, self and total time, average, % of all self time per op (or per op and input
  // shapes), sorted by sort_by: "self_time", "total_time", "avg_time", "calls",
  // "self_memory", "memory" (or PyTorch's "self_cpu_time_total", "cpu_time_total",
  // "count", "self_cpu_memory_usage", "cpu_memory_usage"); `limit` rows (0: all).
  std::string table(std::string_view sort_by = "self_time", int64_t limit = 20,
                    bool group_by_input_shape = false) const;
  // Per device: peak bytes in use since recording began, bytes and blocks allocated and
  // freed; the caching allocators' figures (allocator_summary); then the ops that
  // allocated most. Needs profile_memory.
  std::string memory_summary() const;
  // Per device with a caching allocator: allocated and reserved bytes at the first and
  // last sample and the most reserved at a sample, and the requests served, cache hits and
  // driver allocations and frees in between ("" without samples).
  std::string allocator_summary() const;

  // Whether the profiler plugin is loaded.
  static bool is_available();

 private:
  enum class Phase { Off, Warmup, Active };
  Phase phase_at(int64_t step) const;
  bool last_active_step(int64_t step) const;
  void begin_recording();
  void end_recording(bool keep);
  void open_step_range();
  void close_step_range();
  void sample_allocators();

  ProfilerOptions options_;
  int64_t step_ = 0;
  bool recording_ = false;
  Phase phase_ = Phase::Off;
  uint64_t step_range_ = 0;
  std::vector<Event> events_;
  std::vector<AllocatorSample> pending_samples_;  // of the span being recorded
  std::vector<AllocatorSample> allocator_samples_;
};

// A named range on this thread while alive: ops called inside it nest under it in the
// trace and the table. Costs an atomic load when nothing records.
class Range {
 public:
  explicit Range(const std::string& name);
  ~Range();
  Range(const Range&) = delete;
  Range& operator=(const Range&) = delete;

 private:
  uint64_t id_ = 0;
};

}  // namespace loom::profiler
