// loom::profiler::Profiler: drives the profiler plugin through its extension table
// (loom/profiler_api.h), walks a schedule's phases at each step and collects the events.
#include "loom/profiler.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <tuple>

#include "loom/core/error.h"
#include "loom/core/read_section.h"
#include "loom/dispatcher/abi_keys.h"
#include "loom/dispatcher/extensions.h"
#include "loom/dispatcher/trace.h"
#include "loom/profiler_api.h"

namespace loom::profiler {
namespace {

// The one Profiler recording at a time in this process (the plugin records one).
std::atomic<Profiler*> g_active{nullptr};

// The table, or nullptr when the plugin is not loaded. Reading and clearing the records
// run inside a ReadSection, so the plugin cannot unload under them (Note [Lock-free
// dispatch and safe unload]). start and stop cannot: they install and remove the
// dispatcher's tracer, and a tracer removed inside a section is left behind rather than
// waited for (dispatcher/src/trace.cc).
const LoomProfilerApi* find_api() {
  return static_cast<const LoomProfilerApi*>(
      dispatch::find_extension(LOOM_PROFILER_EXTENSION_NAME));
}

const LoomProfilerApi& api() {
  const LoomProfilerApi* a = find_api();
  LOOM_CHECK(a != nullptr, "profiler",
             "the profiler plugin is not loaded (expected `plugins { name: \"profiler\" }` in the "
             "deployment manifest, found no table named '",
             LOOM_PROFILER_EXTENSION_NAME, "')");
  return *a;
}

// Rethrows a plugin error as loom::Error("[profiler] ..."); the plugin's own messages
// already start with "[profiler] " and name what failed.
void check(LoomError* err, const char* what) {
  dispatch::check_table_error(err, "profiler", what);
}

std::string key_name(uint32_t abi_key) {
  if (abi_key == LOOM_KEY_UNDEFINED) return "";
  try {
    return dispatch_key_name(dispatch::key_from_abi(abi_key));
  } catch (const Error&) {
    return str_cat("key ", abi_key);
  }
}

Event to_event(const LoomProfilerEvent& e) {
  Event out;
  out.kind = static_cast<EventKind>(e.kind);
  out.name = e.name != nullptr ? e.name : "";
  if (out.kind == EventKind::Op) {
    // "ns::name.overload": the overload follows the first '.' after "::".
    size_t ns_end = out.name.find("::");
    size_t dot = out.name.find('.', ns_end == std::string::npos ? 0 : ns_end + 2);
    if (dot != std::string::npos) {
      out.overload = out.name.substr(dot + 1);
      out.name.resize(dot);
    }
  }
  out.start_ns = e.start_ns;
  out.end_ns = e.end_ns;
  out.id = e.id;
  out.parent_id = e.parent_id;
  out.thread_id = e.thread_id;
  out.dispatch_key = key_name(e.dispatch_key);
  out.input_shapes = e.input_shapes != nullptr ? e.input_shapes : "";
  out.input_dtypes = e.input_dtypes != nullptr ? e.input_dtypes : "";
  out.bytes_allocated = e.bytes_allocated;
  out.bytes_freed = e.bytes_freed;
  if (e.has_sequence_nr) out.sequence_nr = e.sequence_nr;
  out.device = Device{e.device.type, e.device.index};
  out.stream = e.stream;
  out.bytes = e.bytes;
  out.correlation_id = e.correlation_id;
  out.stack = e.stack != nullptr ? e.stack : "";
  return out;
}

void collect_into(void* ctx, const LoomProfilerEvent* e) {
  static_cast<std::vector<Event>*>(ctx)->push_back(to_event(*e));
}

}  // namespace

std::string_view kind_name(EventKind kind) {
  switch (kind) {
    case EventKind::Op:
      return "op";
    case EventKind::UserRange:
      return "user range";
    case EventKind::BackwardNode:
      return "backward node";
    case EventKind::DeviceKernel:
      return "device kernel";
    case EventKind::DeviceCopy:
      return "device copy";
    case EventKind::DeviceOther:
      return "device activity";
    case EventKind::Memory:
      return "memory";
  }
  return "?";
}

std::string Event::qualified_name() const {
  return overload.empty() ? name : str_cat(name, ".", overload);
}

std::string Event::device_name() const {
  try {
    return device.to_string();
  } catch (const Error&) {
    return str_cat("device type ", device.type, ":", device.index);
  }
}

bool Profiler::is_available() {
  return find_api() != nullptr;
}

Profiler::Profiler(ProfilerOptions options) : options_(std::move(options)) {
  api();  // refuses before anything changes when the plugin is missing
  if (options_.schedule) {
    const Schedule& s = *options_.schedule;
    LOOM_CHECK(s.wait >= 0 && s.warmup >= 0 && s.repeat >= 0 && s.skip_first >= 0, "profiler",
               "schedule: wait, warmup, repeat and skip_first must be >= 0, found wait=", s.wait,
               " warmup=", s.warmup, " repeat=", s.repeat, " skip_first=", s.skip_first);
    LOOM_CHECK(s.active >= 1, "profiler", "schedule: active must be >= 1 step, found ", s.active);
  }
  if (g_active.load() != nullptr) {
    throw Error("profiler", "another Profiler is recording; stop it before starting a new one",
                ErrorCode::FailedPrecondition);
  }
  phase_ = phase_at(0);
  if (phase_ != Phase::Off) begin_recording();
}

Profiler::~Profiler() {
  try {
    stop();
  } catch (...) {
    // A destructor must not throw; stop() already left the plugin stopped if it could.
  }
}

Profiler::Phase Profiler::phase_at(int64_t step) const {
  if (!options_.schedule) return Phase::Active;
  const Schedule& s = *options_.schedule;
  if (step < s.skip_first) return Phase::Off;
  const int64_t cycle = s.wait + s.warmup + s.active;
  const int64_t n = step - s.skip_first;
  if (s.repeat > 0 && n / cycle >= s.repeat) return Phase::Off;
  const int64_t pos = n % cycle;
  if (pos < s.wait) return Phase::Off;
  return pos < s.wait + s.warmup ? Phase::Warmup : Phase::Active;
}

bool Profiler::last_active_step(int64_t step) const {
  if (phase_at(step) != Phase::Active) return false;
  if (phase_at(step + 1) != Phase::Active) return true;
  if (!options_.schedule) return false;
  const Schedule& s = *options_.schedule;  // the last step of a cycle ends its span
  return (step - s.skip_first) % (s.wait + s.warmup + s.active) == s.wait + s.warmup + s.active - 1;
}

void Profiler::begin_recording() {
  Profiler* expected = nullptr;
  if (!g_active.compare_exchange_strong(expected, this) && expected != this) {
    throw Error("profiler", "another Profiler is recording; stop it before starting a new one",
                ErrorCode::FailedPrecondition);
  }
  LoomProfilerConfig config{};
  config.struct_size = sizeof(config);
  config.record_shapes = options_.record_shapes ? 1 : 0;
  config.profile_memory = options_.profile_memory ? 1 : 0;
  config.with_stack = options_.with_stack ? 1 : 0;
  try {
    check(api().start(&config), "start");
  } catch (...) {
    g_active.store(nullptr);
    throw;
  }
  recording_ = true;
  pending_samples_.clear();
  sample_allocators();
  open_step_range();
}

void Profiler::sample_allocators() {
  if (!options_.profile_memory) return;
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  for (const Device& device : devices_with_memory_stats()) {
    try {
      pending_samples_.push_back({now, device, memory_stats(device)});
    } catch (const Error&) {
      // Its plugin unloaded since the list was made: nothing to sample.
    }
  }
}

void Profiler::end_recording(bool keep) {
  close_step_range();
  recording_ = false;
  {
    // This Profiler stays the active one until its records are read and freed, so no
    // other can start in between.
    struct Release {
      ~Release() { g_active.store(nullptr); }
    } release;
    check(api().stop(), "stop");
    if (!keep) return;
    sample_allocators();
    allocator_samples_ = std::move(pending_samples_);
    pending_samples_.clear();
    events_.clear();
    ReadSection section;
    const LoomProfilerApi& table = api();
    check(table.visit_events(&events_, &collect_into), "reading the events");
    check(table.clear(), "clear");  // the events live here now; the plugin frees its records
  }
  std::stable_sort(events_.begin(), events_.end(), [](const Event& a, const Event& b) {
    return std::tie(a.thread_id, a.start_ns) < std::tie(b.thread_id, b.start_ns);
  });
  if (options_.on_trace_ready) options_.on_trace_ready(*this);
}

void Profiler::open_step_range() {
  if (options_.schedule) {
    step_range_ = dispatch::trace::range_begin(str_cat("ProfilerStep#", step_).c_str(),
                                               LOOM_TRACE_USER_RANGE);
  }
}

void Profiler::close_step_range() {
  dispatch::trace::range_end(step_range_);
  step_range_ = 0;
}

void Profiler::step() {
  const Phase next = phase_at(step_ + 1);
  if (phase_ == Phase::Active && last_active_step(step_)) {
    end_recording(/*keep=*/true);
  } else if (phase_ == Phase::Warmup && next == Phase::Active) {
    close_step_range();
    {
      ReadSection section;
      check(api().clear(), "clear");
    }
    pending_samples_.clear();  // as the warm-up's records
    sample_allocators();
  } else if (recording_) {
    close_step_range();
    sample_allocators();
  }
  ++step_;
  phase_ = next;
  if (phase_ != Phase::Off && !recording_) {
    begin_recording();
  } else if (recording_) {
    open_step_range();
  }
}

void Profiler::stop() {
  if (!recording_) return;
  end_recording(/*keep=*/phase_ == Phase::Active);
  phase_ = Phase::Off;
}

Range::Range(const std::string& name)
    : id_(dispatch::trace::range_begin(name.c_str(), LOOM_TRACE_USER_RANGE)) {}

Range::~Range() {
  dispatch::trace::range_end(id_);
}

}  // namespace loom::profiler
