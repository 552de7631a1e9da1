// Tests of the core's Philox generator state (Note [Generator state]): reserve hands out
// consecutive counter ranges, manual_seed restarts, concurrent reservations are disjoint,
// and every device type has its own default generator.
#include <algorithm>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "loom/core/generator.h"
#include "loom_error_assertions.h"

namespace loom {
namespace {

TEST(Generator, StartsAtTheDefaultSeedAndOffsetZero) {
  Generator g;
  EXPECT_EQ(g.seed(), 67280421310721ULL);
  EXPECT_EQ(g.offset(), 0u);
  EXPECT_EQ(Generator(5).seed(), 5u);
}

TEST(Generator, ReserveReturnsTheStateBeforeAndAdvances) {
  Generator g(11);
  EXPECT_EQ(g.reserve(10), (PhiloxState{11, 0}));
  EXPECT_EQ(g.reserve(0), (PhiloxState{11, 10}));
  EXPECT_EQ(g.reserve(3), (PhiloxState{11, 10}));
  EXPECT_EQ(g.state(), (PhiloxState{11, 13}));
}

TEST(Generator, ManualSeedRestartsTheStream) {
  Generator g(1);
  g.reserve(100);
  g.manual_seed(2);
  EXPECT_EQ(g.state(), (PhiloxState{2, 0}));
  g.set_state({3, 77});
  EXPECT_EQ(g.reserve(1), (PhiloxState{3, 77}));
}

TEST(Generator, OffsetWrapsAt2To64) {
  Generator g;
  g.set_state({1, ~uint64_t{0}});
  EXPECT_EQ(g.reserve(2).offset, ~uint64_t{0});
  EXPECT_EQ(g.offset(), 1u);
}

TEST(Generator, ConcurrentReservationsAreDisjointAndGapless) {
  Generator g(9);
  constexpr int kThreads = 8;
  constexpr int kPerThread = 2000;
  std::vector<std::vector<uint64_t>> starts(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < kPerThread; ++k) {
        // count t + 1: ranges of different widths interleave
        PhiloxState s = g.reserve(static_cast<uint64_t>(t + 1));
        EXPECT_EQ(s.seed, 9u);
        starts[t].push_back(s.offset);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  // Every range [start, start + width) tiles [0, total) exactly once.
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (int t = 0; t < kThreads; ++t) {
    for (uint64_t s : starts[t]) ranges.emplace_back(s, static_cast<uint64_t>(t + 1));
  }
  std::sort(ranges.begin(), ranges.end());
  uint64_t next = 0;
  for (auto [start, width] : ranges) {
    ASSERT_EQ(start, next);
    next += width;
  }
  EXPECT_EQ(next, g.offset());
}

TEST(DefaultGenerator, OnePerDeviceTypeAndManualSeedAllSeedsEvery) {
  manual_seed_all(123);
  Generator& cpu = default_generator(kCPU);
  Generator& meta = default_generator(kMeta);
  EXPECT_NE(&cpu, &meta);
  EXPECT_EQ(&cpu, &default_generator(kCPU));
  cpu.reserve(5);
  EXPECT_EQ(cpu.state(), (PhiloxState{123, 5}));
  EXPECT_EQ(meta.state(), (PhiloxState{123, 0}));  // independent streams
  // a type id no plugin registered yet is seeded too
  EXPECT_EQ(default_generator(kMaxDeviceTypes - 1).state(), (PhiloxState{123, 0}));
  manual_seed_all(124);
  EXPECT_EQ(cpu.state(), (PhiloxState{124, 0}));
  manual_seed_all(kDefaultSeed);
}

TEST(DefaultGenerator, RejectsTypeIdsOutOfRange) {
  EXPECT_LOOM_ERROR(default_generator(-1), "generator", "out of range");
  EXPECT_LOOM_ERROR(default_generator(kMaxDeviceTypes), "generator", "out of range");
}

}  // namespace
}  // namespace loom
