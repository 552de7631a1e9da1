// The host's trace service from a plugin (Note [Trace service] in loom/plugin.h): ranges
// that nest the ops inside them in a profile, autograd's forward-to-backward links, and
// device activities a backend timed. Everything here is a no-op on a host older than ABI
// 1.4 and costs one call and an atomic load when nothing records.
//
//   { loom::sdk::trace::Range r("my_plugin::prepare"); ... }
//   trace::Activity kernel(ctx.op_name(), out.device(), ctx.stream());  // at launch
//   ... later, where the work runs: kernel.run([&] { ...the work... });
#pragma once

#include <time.h>

#include <cstdint>
#include <utility>

#include "loom/plugin.h"
#include "loom/sdk/error.hpp"
#include "loom/sdk/host.hpp"

namespace loom::sdk::trace {

// Whether the host has the trace service (ABI 1.4).
inline bool available() {
  return LOOM_SDK_HOST_HAS(trace_device_event);
}

// The host's trace clock: steady, nanoseconds (CLOCK_MONOTONIC).
inline int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

struct State {
  bool recording = false;
  uint64_t correlation_id = 0;  // the innermost op or range open on this thread
};

inline State state() {
  if (!available()) return {};
  LoomTraceStateArgs a{};
  a.struct_size = sizeof(a);
  check(host().trace_state(&a));
  return {a.out_recording != 0, a.out_correlation_id};
}

inline bool recording() {
  return state().recording;
}

// The op running on this thread created the autograd node numbered `sequence_nr`.
inline void sequence(uint64_t sequence_nr) {
  if (!available()) return;
  LoomTraceSequenceArgs a{};
  a.struct_size = sizeof(a);
  a.sequence_nr = sequence_nr;
  check(host().trace_sequence(&a));
}

// A named range on this thread while alive; ops called inside nest under it.
class Range {
 public:
  explicit Range(const char* name, int32_t kind = LOOM_TRACE_USER_RANGE, uint64_t sequence_nr = 0) {
    if (!available()) return;
    args_.struct_size = sizeof(args_);
    args_.name = name;
    args_.kind = kind;
    args_.sequence_nr = sequence_nr;
    check(host().trace_range_begin(&args_));
  }
  ~Range() {
    if (args_.out_id == 0) return;
    LoomError* err = host().trace_range_end(&args_);
    if (err != nullptr) err->destroy(err);  // a destructor reports nothing
  }
  Range(const Range&) = delete;
  Range& operator=(const Range&) = delete;

 private:
  LoomTraceRangeArgs args_{};
};

// One device activity, times on the host's clock (now_ns). correlation_id 0: the op or
// range open on the calling thread now.
struct DeviceEvent {
  const char* name = "";
  int32_t kind = LOOM_TRACE_DEVICE_KERNEL;
  LoomDevice device{0, 0};
  uint64_t stream = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t bytes = 0;
  uint64_t correlation_id = 0;
};

inline void device_event(const DeviceEvent& e) {
  if (!available()) return;
  LoomTraceDeviceEventArgs a{};
  a.struct_size = sizeof(a);
  a.name = e.name;
  a.kind = e.kind;
  a.device = e.device;
  a.stream = e.stream;
  a.start_ns = e.start_ns;
  a.end_ns = e.end_ns;
  a.bytes = e.bytes;
  a.correlation_id = e.correlation_id;
  check(host().trace_device_event(&a));
}

// Note [Timing device work]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// What every device backend does to show its kernels on a profile's device timeline:
// on the launching thread, read whether a profiler records and which op or range is open
// (the correlation that links the work to the op that queued it); where the work runs
// (a stream's worker thread, a completion callback), time it on the host's clock and
// report it. An Activity is made at launch and copied into the queued work; its run(work)
// runs work and, only when a profiler recorded at launch, reports it. When nothing
// records, the cost is the one state read at launch.
class Activity {
 public:
  // `name` must outlive the work (an op's name, DispatchContext::op_name, is static).
  Activity(const char* name, LoomDevice device, void* stream,
           int32_t kind = LOOM_TRACE_DEVICE_KERNEL)
      : state_(state()), name_(name), device_(device), stream_(stream), kind_(kind) {}

  bool recording() const { return state_.recording; }

  // Runs work(); reports it as a device activity when a profiler recorded at launch.
  // `bytes`: what a copy moved (0 for kernels).
  template <typename Work>
  void run(Work&& work, int64_t bytes = 0) const {
    if (!state_.recording) {
      work();
      return;
    }
    DeviceEvent event;
    event.name = name_;
    event.kind = kind_;
    event.device = device_;
    event.stream = reinterpret_cast<uintptr_t>(stream_);
    event.bytes = bytes;
    event.correlation_id = state_.correlation_id;
    event.start_ns = now_ns();
    work();
    event.end_ns = now_ns();
    device_event(event);
  }

 private:
  State state_;
  const char* name_;
  LoomDevice device_;
  void* stream_;
  int32_t kind_;
};

}  // namespace loom::sdk::trace
