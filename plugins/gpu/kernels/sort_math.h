// The GPU sort's order and network (Note [Bitonic sort]), as __host__ __device__ functions
// the host tests run over arrays.
//
// Note [Bitonic sort]
// ~~~~~~~~~~~~~~~~~~~
// sort and topk sort each line with a bitonic network over its length rounded up to a
// power of two, P. Stage (k, j), for k = 2, 4, ..., P and j = k/2, ..., 1, compares each
// element i with its partner i ^ j and swaps the pair when it is out of order for the
// direction of i's block of k (ascending where i & k is 0). The order is a strict total
// one, the CPU plugin's: padding after everything, NaN last (first when descending), then
// the key, ties by position. With no two elements equal under it, the network's result is
// the one sorted sequence, so the sort is stable and deterministic, and equals the CPU's.
// A line of up to kSharedSortLength elements runs the whole network in one block's shared
// memory; a longer one runs each stage with j >= kSharedSortLength / 2 as a launch over
// global scratch and finishes each k in shared memory.
#pragma once

#include <cstdint>
#include <vector>

#include "index_math.h"

namespace loom::gpu {

inline constexpr int64_t kSharedSortLength = 2048;  // 1024 threads, two elements each
inline constexpr int64_t kSortItemBytes = 16;       // a SortItem of any key type

// The smallest power of two >= n (1 for n <= 1).
LOOM_GPU_HD int64_t sort_width(int64_t n) {
  int64_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

// One element of a line being sorted: its key and position (-1: padding).
template <typename Key>
struct SortItem {
  Key key;
  int64_t position;
};

// Whether a comes before b in the sorted line (Note [Bitonic sort]).
template <typename Key>
LOOM_GPU_HD bool sorts_before(const SortItem<Key>& a, const SortItem<Key>& b, bool descending) {
  if ((a.position < 0) != (b.position < 0)) return b.position < 0;
  const bool a_nan = a.key != a.key, b_nan = b.key != b.key;  // false for integers
  if (a_nan != b_nan) return descending ? a_nan : b_nan;
  if (!a_nan && a.key != b.key) return descending ? a.key > b.key : a.key < b.key;
  return a.position < b.position;
}

// Stage (k, j) on the pair (i, i ^ j), i the lower: whether the two must swap.
template <typename Key>
LOOM_GPU_HD bool bitonic_swaps(int64_t i, int64_t k, const SortItem<Key>& low,
                               const SortItem<Key>& high, bool descending) {
  const bool ascending_block = (i & k) == 0;
  return ascending_block ? sorts_before(high, low, descending)
                         : sorts_before(low, high, descending);
}

// The lower element of the t-th pair of stage j: pairs are (i, i + j) with i & j == 0.
LOOM_GPU_HD int64_t bitonic_pair_low(int64_t t, int64_t j) {
  return 2 * j * (t / j) + t % j;
}

// Stage (k, j) on the t-th pair of `items`, whose first item is at line position `base`.
template <typename Key>
LOOM_GPU_HD void bitonic_step(SortItem<Key>* items, int64_t base, int64_t t, int64_t k, int64_t j,
                              bool descending) {
  const int64_t i = bitonic_pair_low(t, j);
  if (bitonic_swaps(base + i, k, items[i], items[i + j], descending)) {
    const SortItem<Key> low = items[i];
    items[i] = items[i + j];
    items[i + j] = low;
  }
}

// One launch of the network: in chunks (stages k_first..k_last, starting at j_first, each
// chunk of `chunk` items in shared memory), or one global stage (k_first, j_first).
struct SortPass {
  bool in_chunks;
  int64_t k_first, k_last, j_first;
};

// The chunk size for lines of `width` (a power of two) items.
inline int64_t sort_chunk(int64_t width) {
  return width < kSharedSortLength ? width : kSharedSortLength;
}

// The launches that sort lines of `width` items (Note [Bitonic sort]).
inline std::vector<SortPass> sort_passes(int64_t width) {
  const int64_t chunk = sort_chunk(width);
  std::vector<SortPass> passes{{true, 2, chunk, 1}};
  for (int64_t k = 2 * chunk; k <= width; k <<= 1) {
    for (int64_t j = k / 2; j >= chunk; j >>= 1) passes.push_back({false, k, k, j});
    passes.push_back({true, k, k, chunk / 2});
  }
  return passes;
}

}  // namespace loom::gpu
