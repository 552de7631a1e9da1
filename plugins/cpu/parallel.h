// The CPU plugin's intra-op parallelism: parallel_for over an index range on the one
// GNU OpenMP thread pool of the process (the one oneDNN uses too), sized once at plugin
// init from LOOM_NUM_THREADS.
//
//   parallel_for(0, n, kGrainSize, [&](int64_t begin, int64_t end) { ... });
//
// Note [CPU thread pool]
// ~~~~~~~~~~~~~~~~~~~~~~
// The design (docs/architecture.md §7, CPU kernels: threads, ISA dispatch, determinism)
// has one intra-op pool per process that libraries inside (oneDNN) share without
// oversubscribing. Debian's oneDNN is built on GNU OpenMP, so the pool is libgomp's:
// parallel_for opens an OpenMP parallel region. Its size is read once, at plugin init,
// from LOOM_NUM_THREADS (a positive integer; unset or empty: the CPUs available to the
// process, omp_get_num_procs()); any other value makes the plugin's init fail with
// "[cpu] LOOM_NUM_THREADS ...". The count is also set as the calling thread's OpenMP
// default (omp_set_num_threads), at init and on the first parallel_for of every other
// thread, because in libgomp that default is per thread: oneDNN's OpenMP regions then
// get the same count from omp_get_max_threads().
//
// parallel_for runs fn(begin, end) inline, opening no region at all, when the range is
// at most `grain` elements, when the pool has one thread, or when it is called from
// inside a parallel region (regions never nest). Otherwise it opens a region of
// min(threads, ceil(n / grain)) threads and cuts the range into kPiecesPerThread pieces
// per thread (no smaller than the grain), which the threads take in turn from an atomic
// counter: on a machine shared with other work a thread the OS preempts holds the op up
// by at most one piece, not by a whole static share. Which thread runs which piece varies
// from call to call, so fn must not make results depend on it (the sum fixes its own
// chunking: Note [Deterministic sum]). An exception thrown by fn on a worker is caught
// there (no further pieces start) and rethrown on the caller after the region: an
// exception may not leave an OpenMP region.
//
// libgomp keeps one team of workers per application thread that starts regions; the
// workers outlive the plugin (libgomp is pinned with RTLD_NODELETE at init so unloading
// the plugin cannot unmap code they are parked in).
#pragma once

#include <atomic>
#include <cstdint>

#include "function_ref.h"
#include "loom/sdk/plugin.hpp"

namespace loom::cpu {

// Elements below which a pointwise loop runs on the calling thread alone: fork/join of
// the pool costs a few microseconds, what a simple loop over this many elements takes.
inline constexpr int64_t kGrainSize = 32768;

// The grain for a loop over items that each cost about `work_per_item` elementary
// operations: as many items as make kGrainSize operations (at least one).
inline int64_t grain_for(int64_t work_per_item) {
  return work_per_item >= kGrainSize ? 1 : kGrainSize / (work_per_item > 0 ? work_per_item : 1);
}

// What parallel_for's region calls on each chunk.
using ChunkFn = FunctionRef<void(int64_t, int64_t)>;

namespace detail {
// The pool size (set at init, read by every kernel).
inline std::atomic<int> g_num_threads{1};
// The region: splits [begin, end) over the pool (see the Note).
void parallel_for_region(int64_t begin, int64_t end, int64_t grain, ChunkFn fn);
}  // namespace detail

// The number of threads parallel_for uses (LOOM_NUM_THREADS, else the CPUs).
inline int num_threads() {
  return detail::g_num_threads.load(std::memory_order_relaxed);
}

// Calls fn(chunk_begin, chunk_end) over disjoint chunks covering [begin, end), possibly
// on several threads at once; fn must be safe to call concurrently on disjoint ranges.
template <typename F>
inline void parallel_for(int64_t begin, int64_t end, int64_t grain, const F& fn) {
  if (begin >= end) return;
  if (end - begin <= grain || num_threads() == 1) {
    fn(begin, end);
    return;
  }
  detail::parallel_for_region(begin, end, grain, ChunkFn(fn));
}

// Reads LOOM_NUM_THREADS, sizes the pool and sets the plugin attribute "num_threads";
// throws sdk::Error("[cpu] LOOM_NUM_THREADS ...") for an invalid value.
void configure_threads(sdk::Registrar& r);

// Makes this thread's OpenMP default thread count the pool's, for libraries that open
// their own OpenMP regions (oneDNN); parallel_for does it itself.
void adopt_pool_size_on_this_thread();

}  // namespace loom::cpu
