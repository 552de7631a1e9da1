// The GPU sort's network on the host (kernels/sort_math.h, Note [Bitonic sort]): the
// passes sort_passes() plans, applied with bitonic_step as the kernels apply them, give
// the stable order of the CPU plugin (NaN last, first when descending; -0.0 ties +0.0),
// for lines shorter than, equal to and longer than a shared-memory chunk.
#include "../../plugins/gpu/kernels/sort_math.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace loom::gpu {
namespace {

// What the kernels do: load (padding to the width), run every pass, keep the positions.
template <typename Key>
std::vector<int64_t> network_order(const std::vector<Key>& line, bool descending) {
  const int64_t n = static_cast<int64_t>(line.size()), width = sort_width(n);
  std::vector<SortItem<Key>> items(static_cast<size_t>(width), SortItem<Key>{Key(0), -1});
  for (int64_t p = 0; p < n; ++p) items[p] = {line[p], p};
  const int64_t chunk = sort_chunk(width);
  for (const SortPass& pass : sort_passes(width)) {
    if (!pass.in_chunks) {
      for (int64_t t = 0; t < width / 2; ++t) {
        bitonic_step(items.data(), 0, t, pass.k_first, pass.j_first, descending);
      }
      continue;
    }
    for (int64_t first = 0; first < width; first += chunk) {
      for (int64_t k = pass.k_first; k <= pass.k_last; k <<= 1) {
        for (int64_t j = k == pass.k_first ? pass.j_first : k / 2; j >= 1; j >>= 1) {
          for (int64_t t = 0; t < chunk / 2; ++t) {
            bitonic_step(items.data() + first, first, t, k, j, descending);
          }
        }
      }
    }
  }
  std::vector<int64_t> order;
  for (int64_t p = 0; p < n; ++p) order.push_back(items[p].position);
  return order;
}

// The CPU plugin's order, written independently: stable_sort with NaN as the largest.
template <typename Key>
std::vector<int64_t> reference_order(const std::vector<Key>& line, bool descending) {
  std::vector<int64_t> order(line.size());
  for (size_t p = 0; p < order.size(); ++p) order[p] = static_cast<int64_t>(p);
  auto rank = [](Key v) { return std::isnan(static_cast<double>(v)); };
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    const Key x = line[a], y = line[b];
    if (rank(x) || rank(y)) return descending ? rank(x) && !rank(y) : !rank(x) && rank(y);
    return descending ? x > y : x < y;
  });
  return order;
}

TEST(SortMath, WidthsAndPassesCoverTheLine) {
  EXPECT_EQ(sort_width(0), 1);
  EXPECT_EQ(sort_width(1), 1);
  EXPECT_EQ(sort_width(5), 8);
  EXPECT_EQ(sort_width(2048), 2048);
  EXPECT_EQ(sort_passes(1).size(), 1u);  // a chunk pass with no stages
  EXPECT_EQ(sort_passes(2048).size(), 1u);
  // 8192: k = 4096 (global j = 2048, then its chunk pass), k = 8192 (j = 4096, 2048, chunk)
  const std::vector<SortPass> passes = sort_passes(8192);
  ASSERT_EQ(passes.size(), 6u);
  EXPECT_FALSE(passes[1].in_chunks);
  EXPECT_EQ(passes[1].j_first, 2048);
  EXPECT_TRUE(passes[2].in_chunks);
  EXPECT_EQ(passes[2].j_first, 1024);
}

TEST(SortMath, FloatLinesSortStablyWithNaNLastAndSignedZerosTied) {
  std::mt19937 rng(7);
  for (int64_t n : {1, 2, 3, 5, 100, 2047, 2048, 2049, 5000}) {
    std::vector<float> line(static_cast<size_t>(n));
    for (float& v : line) {
      const int pick = static_cast<int>(rng() % 10);
      v = pick == 0   ? std::nanf("")
          : pick == 1 ? -0.0f
          : pick == 2 ? 0.0f
                      : static_cast<float>(rng() % 17) - 8.0f;
    }
    for (bool descending : {false, true}) {
      EXPECT_EQ(network_order(line, descending), reference_order(line, descending))
          << "n = " << n << (descending ? " descending" : " ascending");
    }
  }
}

TEST(SortMath, IntegerLinesSortStably) {
  std::mt19937 rng(3);
  for (int64_t n : {4, 999, 4096, 4097}) {
    std::vector<int64_t> line(static_cast<size_t>(n));
    for (int64_t& v : line) v = static_cast<int64_t>(rng() % 50) - 25;
    for (bool descending : {false, true}) {
      EXPECT_EQ(network_order(line, descending), reference_order(line, descending)) << n;
    }
  }
}

}  // namespace
}  // namespace loom::gpu
