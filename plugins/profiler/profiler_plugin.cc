// The profiler plugin: a whole-key fallback on the Profiler key wraps every op call, and
// the host's trace service brings ranges, autograd's links and device activities; both
// feed the Recorder. Apps control it through the extension table "loom.profiler"
// (loom/profiler_api.h). Built like a vendor's plugin: the SDK alone (plus libunwind).
//
// Note [Profiler switching]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// Loaded but not recording, the profiler costs nothing: its fallback is registered, but
// the Profiler key is in no key set, so no dispatch reaches it, and no tracer is set, so
// the trace service returns at once. start() adds the key to every dispatch of the
// process (process_keys_include: ops of all threads are recorded, as PyTorch's profiler
// records them), sets the tracer and, with profile_memory, an allocation observer;
// stop() takes all three back, in the reverse order, before anything is read.
#include <atomic>
#include <mutex>
#include <string>

#include "loom/profiler_api.h"
#include "loom/sdk/plugin.hpp"
#include "recorder.h"

namespace loom::profiler {
namespace {

struct Session {
  std::mutex mutex;  // serialises start and stop
  std::atomic<bool> recording{false};
  LoomRegistration* tracer = nullptr;
  LoomRegistration* observer = nullptr;
};

Session& session() {
  static Session s;
  return s;
}

// Runs `record`; a record that cannot be made (out of memory) is dropped, since nothing
// may escape the C callbacks below.
template <typename F>
auto unrecorded_on_failure(F&& record) noexcept -> decltype(record()) {
  try {
    return record();
  } catch (...) {
    return decltype(record())();
  }
}

// The fallback on the Profiler key: records the op around the call below the key.
LoomError* profile_op(void*, const LoomKernelCall* call) {
  Recorder& recorder = Recorder::instance();
  if (!session().recording.load(std::memory_order_relaxed)) {
    return sdk::host().redispatch(call->op, call->key_set, call->args, call->num_args,
                                  call->returns, call->num_returns);
  }
  uint64_t token = 0;
  try {
    token = recorder.op_begin(call);
  } catch (...) {
    // Out of memory for the record: the op runs unrecorded.
    return sdk::host().redispatch(call->op, call->key_set, call->args, call->num_args,
                                  call->returns, call->num_returns);
  }
  LoomError* err = sdk::host().redispatch(call->op, call->key_set, call->args, call->num_args,
                                          call->returns, call->num_returns);
  unrecorded_on_failure([&] { recorder.op_end(token); });
  return err;
}

// --- the tracer (Note [Trace service]) and the allocation observer ---
uint64_t trace_range_begin(void*, const LoomTraceRangeArgs* range) {
  return unrecorded_on_failure([&] {
    return Recorder::instance().range_begin(range->name, range->kind, range->sequence_nr);
  });
}
void trace_range_end(void*, uint64_t id) {
  unrecorded_on_failure([&] { Recorder::instance().range_end(id); });
}
void trace_sequence(void*, uint64_t sequence_nr) {
  unrecorded_on_failure([&] { Recorder::instance().sequence(sequence_nr); });
}
uint64_t trace_correlation_id(void*) {
  return unrecorded_on_failure([] { return Recorder::instance().correlation_id(); });
}
void trace_device_event(void*, const LoomTraceDeviceEventArgs* event) {
  unrecorded_on_failure([&] { Recorder::instance().device_event(*event); });
}
void observe_allocation(void*, const LoomAllocationEvent* event) {
  unrecorded_on_failure([&] { Recorder::instance().memory_event(*event); });
}

void include_profiler_key(bool include) {
  LoomProcessKeysArgs a{};
  a.struct_size = sizeof(a);
  a.dispatch_key = LOOM_KEY_PROFILER;
  a.include = include ? 1 : 0;
  sdk::check(sdk::host().process_keys_include(&a));
}

void stop_recording(Session& s) {
  if (!s.recording.load()) return;
  include_profiler_key(false);
  if (s.tracer != nullptr) sdk::check(sdk::host().deregister(s.tracer));
  if (s.observer != nullptr) sdk::check(sdk::host().deregister(s.observer));
  s.tracer = s.observer = nullptr;
  s.recording.store(false);
  Recorder::instance().stopped(now_ns());
}

// --- the control table (loom/profiler_api.h) ---
LoomError* start(const LoomProfilerConfig* config) {
  return sdk::catch_all([&] {
    if (config == nullptr || config->struct_size == 0) {
      throw sdk::Error("[profiler] start: the config is null or has no struct_size");
    }
    Options options;
    if (LOOM_HAS_FIELD(config, LoomProfilerConfig, record_shapes))
      options.record_shapes = config->record_shapes != 0;
    if (LOOM_HAS_FIELD(config, LoomProfilerConfig, profile_memory))
      options.profile_memory = config->profile_memory != 0;
    if (LOOM_HAS_FIELD(config, LoomProfilerConfig, with_stack))
      options.with_stack = config->with_stack != 0;
    Session& s = session();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.recording.load()) {
      throw sdk::Error("[profiler] start: already recording (stop the running profiler first)",
                       LOOM_STATUS_FAILED_PRECONDITION);
    }
    Recorder::instance().reset(options);
    LoomTracerArgs tracer{};
    tracer.struct_size = sizeof(tracer);
    tracer.plugin = sdk::plugin_state().context;
    tracer.range_begin = &trace_range_begin;
    tracer.range_end = &trace_range_end;
    tracer.sequence = &trace_sequence;
    tracer.correlation_id = &trace_correlation_id;
    tracer.device_event = &trace_device_event;
    sdk::check(sdk::host().set_tracer(&tracer));
    s.tracer = tracer.out_registration;
    try {
      if (options.profile_memory) {
        LoomAllocationObserverArgs observer{};
        observer.struct_size = sizeof(observer);
        observer.plugin = sdk::plugin_state().context;
        observer.fn = &observe_allocation;
        sdk::check(sdk::host().add_allocation_observer(&observer));
        s.observer = observer.out_registration;
      }
      s.recording.store(true);
      include_profiler_key(true);
    } catch (...) {
      s.recording.store(true);
      stop_recording(s);
      throw;
    }
  });
}

LoomError* stop() {
  return sdk::catch_all([] {
    Session& s = session();
    std::lock_guard<std::mutex> lock(s.mutex);
    stop_recording(s);
  });
}

LoomError* clear() {
  return sdk::catch_all([] {
    Session& s = session();
    std::lock_guard<std::mutex> lock(s.mutex);
    Recorder::instance().reset(Recorder::instance().options());
  });
}

LoomError* visit_events(void* ctx, LoomProfilerVisitFn visit) {
  return sdk::catch_all([&] {
    if (visit == nullptr) throw sdk::Error("[profiler] visit_events: the visit function is null");
    Session& s = session();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.recording.load()) {
      throw sdk::Error("[profiler] visit_events: still recording; stop the profiler first",
                       LOOM_STATUS_FAILED_PRECONDITION);
    }
    Recorder::instance().visit(ctx, visit);
  });
}

int32_t is_recording() {
  return session().recording.load() ? 1 : 0;
}

const LoomProfilerApi kApi = {
    sizeof(LoomProfilerApi), &start, &stop, &clear, &visit_events, &is_recording,
};

void init(sdk::Registrar& r) {
  if (!LOOM_SDK_HOST_HAS(trace_device_event)) {
    throw sdk::Error("[profiler] needs a loom host with ABI 1.4 (the trace service), found " +
                         std::to_string(sdk::host().abi_major) + "." +
                         std::to_string(sdk::host().abi_minor),
                     LOOM_STATUS_VERSION_MISMATCH);
  }
  r.fallback(LOOM_KEY_PROFILER, &profile_op);
  sdk::publish_extension(LOOM_PROFILER_EXTENSION_NAME, &kApi);
}

void shutdown() {
  Session& s = session();
  std::lock_guard<std::mutex> lock(s.mutex);
  stop_recording(s);
}

}  // namespace
}  // namespace loom::profiler

LOOM_PLUGIN_WITH_SHUTDOWN("profiler", "0.1.0", loom::profiler::init, loom::profiler::shutdown)
