// The OpenMP side of parallel_for and the pool's configuration from LOOM_NUM_THREADS
// (Note [CPU thread pool] in parallel.h).
#include "parallel.h"

#include <dlfcn.h>
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

namespace loom::cpu {

namespace {

constexpr int kMaxThreads = 1024;
// Pieces per thread a region's range is cut into (parallel.h's Note).
constexpr int64_t kPiecesPerThread = 4;

// LOOM_NUM_THREADS as a thread count; 0 when unset or empty.
int threads_from_environment() {
  const char* raw = std::getenv("LOOM_NUM_THREADS");
  if (raw == nullptr || *raw == '\0') return 0;
  const std::string_view text(raw);
  int64_t value = 0;
  bool valid = text.size() <= 6;
  for (char c : text) {
    valid = valid && c >= '0' && c <= '9';
    if (valid) value = value * 10 + (c - '0');
  }
  if (!valid || value < 1 || value > kMaxThreads) {
    throw sdk::Error("[cpu] LOOM_NUM_THREADS must be a positive integer of at most " +
                         std::to_string(kMaxThreads) + " (the intra-op thread count), found '" +
                         std::string(text) + "'",
                     LOOM_STATUS_INVALID_ARGUMENT);
  }
  return static_cast<int>(value);
}

// The pool size this thread last gave OpenMP as its default (0: never).
thread_local int t_adopted_pool_size = 0;

}  // namespace

void adopt_pool_size_on_this_thread() {
  const int n = num_threads();
  if (t_adopted_pool_size != n) {
    omp_set_num_threads(n);
    t_adopted_pool_size = n;
  }
}

void configure_threads(sdk::Registrar& r) {
  // libgomp's parked workers (and its own start-up state) must outlive this plugin's
  // unload, a failed init included (parallel.h's Note).
  if (void* gomp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE)) {
    dlclose(gomp);  // drops the reference just taken; NODELETE stays
  }
  const int requested = threads_from_environment();
  const int threads = requested > 0 ? requested : std::max(1, omp_get_num_procs());
  detail::g_num_threads.store(threads, std::memory_order_relaxed);
  adopt_pool_size_on_this_thread();
  r.attribute("num_threads", std::to_string(threads).c_str());
}

namespace detail {

void parallel_for_region(int64_t begin, int64_t end, int64_t grain, ChunkFn fn) {
  if (omp_in_parallel()) {  // never nest: the caller is already one of the pool's threads
    fn(begin, end);
    return;
  }
  adopt_pool_size_on_this_thread();
  grain = std::max<int64_t>(grain, 1);
  const int64_t n = end - begin;
  const int64_t useful = (n + grain - 1) / grain;
  const int team = static_cast<int>(std::min<int64_t>(num_threads(), useful));
  const int64_t pieces = std::min<int64_t>(useful, int64_t{team} * kPiecesPerThread);
  const int64_t piece = (n + pieces - 1) / pieces;
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
#pragma omp parallel num_threads(team)
  {
    for (;;) {
      const int64_t start = next.fetch_add(piece, std::memory_order_relaxed);
      if (start >= n || failed.load(std::memory_order_relaxed)) break;
      try {
        fn(begin + start, begin + std::min(n, start + piece));
      } catch (...) {
#pragma omp critical(loom_cpu_parallel_for_error)
        if (!error) error = std::current_exception();
        failed.store(true, std::memory_order_relaxed);
      }
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace detail

}  // namespace loom::cpu
