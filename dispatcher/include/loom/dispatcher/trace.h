// The host's trace service (Note [Trace service] in loom/plugin.h): ranges, autograd
// sequence links and device events, relayed to the one tracer set (the profiler plugin
// while it records). Each call costs an atomic load when no tracer is set.
#pragma once

#include <cstdint>

#include "loom/dispatcher/dispatcher.h"
#include "loom/plugin.h"

namespace loom::dispatch::trace {

// A tracer's functions (LoomTracerArgs without its struct header) and its owner.
struct Tracer {
  void* ctx = nullptr;
  uint64_t (*range_begin)(void* ctx, const LoomTraceRangeArgs* range) = nullptr;
  void (*range_end)(void* ctx, uint64_t id) = nullptr;
  void (*sequence)(void* ctx, uint64_t sequence_nr) = nullptr;
  uint64_t (*correlation_id)(void* ctx) = nullptr;
  void (*device_event)(void* ctx, const LoomTraceDeviceEventArgs* event) = nullptr;
  const Registrant* owner = nullptr;
};

// Sets the tracer; throws loom::Error("[trace] ...", ALREADY_EXISTS) while one is set.
// Returns a token for remove_tracer.
uint64_t set_tracer(const Tracer& tracer);
// Removes the tracer set with `token` (no-op when it is no longer set) and waits until no
// thread is inside one of its functions.
void remove_tracer(uint64_t token);
// Removes the tracer if `owner` set it (plugin unload).
void remove_tracers_of(const Registrant* owner);

bool recording();
// The innermost op or range open on this thread, 0 when none or nobody records.
uint64_t correlation_id();
// 0 when nobody records; `name` is copied by the tracer.
uint64_t range_begin(const char* name, int32_t kind, uint64_t sequence_nr = 0);
void range_end(uint64_t id);
void sequence(uint64_t sequence_nr);
void device_event(const LoomTraceDeviceEventArgs& event);

}  // namespace loom::dispatch::trace
