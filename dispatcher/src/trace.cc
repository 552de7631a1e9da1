// The trace service: one tracer pointer read inside a ReadSection, so removing the tracer
// (the profiler stopping, its plugin unloading) waits for threads inside its functions.
#include "loom/dispatcher/trace.h"

#include <atomic>
#include <mutex>

#include "loom/core/error.h"
#include "loom/core/read_section.h"

namespace loom::dispatch::trace {
namespace {

struct Installed {
  Tracer tracer;
  uint64_t token;
};

std::atomic<const Installed*> g_tracer{nullptr};
std::mutex g_mutex;  // serialises set and remove
uint64_t g_next_token = 1;

void uninstall(const Installed* installed) {
  g_tracer.store(nullptr, std::memory_order_release);
  // From inside an op call (a kernel stopping the profiler) there is no waiting for other
  // readers: the few bytes of the record are left behind instead. The tracer's functions
  // stay valid either way, since its plugin is still loaded.
  if (in_read_section()) return;
  synchronize_readers();
  delete installed;
}

}  // namespace

uint64_t set_tracer(const Tracer& tracer) {
  LOOM_CHECK(tracer.range_begin != nullptr && tracer.range_end != nullptr &&
                 tracer.sequence != nullptr && tracer.correlation_id != nullptr &&
                 tracer.device_event != nullptr,
             "trace", "set_tracer: every function of the tracer must be set");
  std::lock_guard<std::mutex> lock(g_mutex);
  const Installed* current = g_tracer.load(std::memory_order_acquire);
  if (current != nullptr) {
    throw Error("trace",
                str_cat("set_tracer: a tracer is already set (by '",
                        current->tracer.owner != nullptr ? current->tracer.owner->name : "the app",
                        "'); one records at a time"),
                ErrorCode::AlreadyExists);
  }
  auto* installed = new Installed{tracer, g_next_token++};
  g_tracer.store(installed, std::memory_order_release);
  return installed->token;
}

void remove_tracer(uint64_t token) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const Installed* current = g_tracer.load(std::memory_order_acquire);
  if (current != nullptr && current->token == token) uninstall(current);
}

void remove_tracers_of(const Registrant* owner) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const Installed* current = g_tracer.load(std::memory_order_acquire);
  if (current != nullptr && current->tracer.owner == owner) uninstall(current);
}

bool recording() {
  return g_tracer.load(std::memory_order_relaxed) != nullptr;
}

uint64_t correlation_id() {
  if (g_tracer.load(std::memory_order_relaxed) == nullptr) return 0;
  ReadSection section;
  const Installed* t = g_tracer.load(std::memory_order_acquire);
  return t == nullptr ? 0 : t->tracer.correlation_id(t->tracer.ctx);
}

uint64_t range_begin(const char* name, int32_t kind, uint64_t sequence_nr) {
  if (g_tracer.load(std::memory_order_relaxed) == nullptr) return 0;
  ReadSection section;
  const Installed* t = g_tracer.load(std::memory_order_acquire);
  if (t == nullptr) return 0;
  LoomTraceRangeArgs range{sizeof(LoomTraceRangeArgs), name, kind, sequence_nr, 0};
  return t->tracer.range_begin(t->tracer.ctx, &range);
}

void range_end(uint64_t id) {
  if (id == 0 || g_tracer.load(std::memory_order_relaxed) == nullptr) return;
  ReadSection section;
  const Installed* t = g_tracer.load(std::memory_order_acquire);
  if (t != nullptr) t->tracer.range_end(t->tracer.ctx, id);
}

void sequence(uint64_t sequence_nr) {
  if (g_tracer.load(std::memory_order_relaxed) == nullptr) return;
  ReadSection section;
  const Installed* t = g_tracer.load(std::memory_order_acquire);
  if (t != nullptr) t->tracer.sequence(t->tracer.ctx, sequence_nr);
}

void device_event(const LoomTraceDeviceEventArgs& event) {
  if (g_tracer.load(std::memory_order_relaxed) == nullptr) return;
  ReadSection section;
  const Installed* t = g_tracer.load(std::memory_order_acquire);
  if (t != nullptr) t->tracer.device_event(t->tracer.ctx, &event);
}

}  // namespace loom::dispatch::trace
