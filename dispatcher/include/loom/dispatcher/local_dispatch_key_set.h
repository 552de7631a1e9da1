// Thread-local include/exclude dispatch key sets and their RAII guards, and the
// process-wide include set (every thread's dispatches; the profiler records through it).
#pragma once

#include <atomic>
#include <cstdint>

#include "loom/core/dispatch_key.h"

namespace loom::dispatch {

struct LocalDispatchKeySet {
  uint64_t included = 0;
  uint64_t excluded = 0;
};

namespace detail {
extern thread_local LocalDispatchKeySet tls_local_keys __attribute__((tls_model("initial-exec")));
// Keys added to every dispatch on every thread (process_keys_include); zero unless a
// plugin such as the profiler records.
extern std::atomic<uint64_t> g_process_included;
}  // namespace detail

// Counts one inclusion of functionality key `key` in every dispatch of the process
// (include = true) or takes one back; the key is included while its count is positive.
// Throws loom::Error("[dispatch] ...") when taking back a key that is not included.
void include_key_in_process(DispatchKey key, bool include);

inline LocalDispatchKeySet local_dispatch_key_set() {
  return detail::tls_local_keys;
}

// Adds keys to every dispatch on this thread while alive (e.g. Profiler, Tracer).
class IncludeDispatchKeyGuard {
 public:
  explicit IncludeDispatchKeyGuard(DispatchKeySet keys) : saved_(detail::tls_local_keys.included) {
    detail::tls_local_keys.included |= keys.raw();
  }
  ~IncludeDispatchKeyGuard() { detail::tls_local_keys.included = saved_; }
  IncludeDispatchKeyGuard(const IncludeDispatchKeyGuard&) = delete;
  IncludeDispatchKeyGuard& operator=(const IncludeDispatchKeyGuard&) = delete;

 private:
  uint64_t saved_;
};

// Removes keys from every dispatch on this thread while alive (e.g. Autograd below
// the autograd kernel, "no_grad").
class ExcludeDispatchKeyGuard {
 public:
  explicit ExcludeDispatchKeyGuard(DispatchKeySet keys) : saved_(detail::tls_local_keys.excluded) {
    detail::tls_local_keys.excluded |= keys.raw();
  }
  ~ExcludeDispatchKeyGuard() { detail::tls_local_keys.excluded = saved_; }
  ExcludeDispatchKeyGuard(const ExcludeDispatchKeyGuard&) = delete;
  ExcludeDispatchKeyGuard& operator=(const ExcludeDispatchKeyGuard&) = delete;

 private:
  uint64_t saved_;
};

}  // namespace loom::dispatch
