// The kernels' input checks on host memory (runtime/deferred_checks.h): a flagged slot
// becomes its op's error once, at the next wait for its device; only a wait for a slot's
// own stream frees it, and only after its launch was queued; an event wait frees nothing;
// a destroyed stream's slots are finished; a full ring waits for the oldest launched
// slot's stream. The "kernel" here is the test writing the slot's words.
#include "../../plugins/gpu/runtime/deferred_checks.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "loom/sdk/error.hpp"

namespace loom::gpu {
namespace {

void* stream(int k) {
  return reinterpret_cast<void*>(static_cast<uintptr_t>(0x1000 * k));
}

struct Ring {
  explicit Ring(size_t slots)
      : words(2 * slots, -7), checks(words.data(), slots, [this](int device, void* s) {
          waits.emplace_back(device, s);
        }) {}

  // What a kernel does on bad input: the value, then the flag.
  void flag(size_t slot, int64_t value) {
    words[2 * slot] = value;
    words[2 * slot + 1] = 1;
  }
  // Arms a slot and, unless told otherwise, queues its launch.
  size_t arm(int device, void* s, const std::string& op, bool launch = true) {
    const size_t slot =
        checks.arm(device, s, [op](int64_t v) { return "[" + op + "] bad " + std::to_string(v); });
    if (launch) checks.launched(slot);
    return slot;
  }
  std::string wait_error(int device, void* s, bool all, bool retire = true) {
    try {
      checks.after_wait(device, s, all, retire);
    } catch (const sdk::Error& e) {
      return e.what();
    }
    return "";
  }

  std::vector<int64_t> words;
  std::vector<std::pair<int, void*>> waits;
  DeferredChecks checks;
};

TEST(DeferredChecks, ArmingClearsTheSlotAndAWaitForItsStreamFreesIt) {
  Ring ring(4);
  const size_t slot = ring.arm(0, stream(1), "gather");
  EXPECT_EQ(ring.words[2 * slot], 0);
  EXPECT_EQ(ring.words[2 * slot + 1], 0);
  EXPECT_EQ(ring.checks.pending(), 1u);
  EXPECT_TRUE(ring.checks.pending_on(0, stream(1)));
  EXPECT_EQ(ring.wait_error(0, stream(2), false), "");  // another stream: still pending
  EXPECT_EQ(ring.checks.pending(), 1u);
  EXPECT_EQ(ring.wait_error(1, stream(1), true), "");  // another device: still pending
  EXPECT_EQ(ring.checks.pending(), 1u);
  EXPECT_EQ(ring.wait_error(0, stream(1), false), "");
  EXPECT_EQ(ring.checks.pending(), 0u);
}

TEST(DeferredChecks, ASlotWhoseLaunchIsStillToComeSurvivesAWaitForItsStream) {
  Ring ring(4);
  const size_t slot = ring.arm(0, stream(1), "gather", /*launch=*/false);
  EXPECT_EQ(ring.wait_error(0, stream(1), false), "");  // another thread's wait
  EXPECT_EQ(ring.checks.pending(), 1u);
  ring.checks.launched(slot);
  ring.flag(slot, 9);
  EXPECT_EQ(ring.wait_error(0, stream(1), false).rfind("[gather] bad 9", 0), 0u);
  EXPECT_EQ(ring.checks.pending(), 0u);
}

TEST(DeferredChecks, AFlaggedSlotIsReportedOnceAndHeldUntilItsStreamIsWaitedFor) {
  Ring ring(4);
  ring.arm(0, stream(1), "scatter_add");
  const size_t bad = ring.arm(0, stream(1), "nll_loss");
  const size_t later = ring.arm(0, stream(2), "gather");
  ring.flag(bad, 12);
  ring.flag(later, -3);
  // An event wait reports what is flagged, from any stream of the device, and frees
  // nothing: the kernels may still be writing their slots.
  const std::string message = ring.wait_error(0, nullptr, false, /*retire=*/false);
  EXPECT_EQ(message.rfind("[nll_loss] bad 12 (found by its kernel", 0), 0u) << message;
  EXPECT_NE(message.find("1 later launch(es) also found bad input"), std::string::npos);
  EXPECT_EQ(ring.checks.pending(), 3u);
  EXPECT_EQ(ring.wait_error(0, stream(1), false), "");  // reported once
  EXPECT_EQ(ring.checks.pending(), 1u);                 // gather's, on stream 2
  EXPECT_EQ(ring.wait_error(0, stream(2), false), "");
  EXPECT_EQ(ring.checks.pending(), 0u);
}

TEST(DeferredChecks, ADeviceWaitRetiresEveryStreamOfThatDeviceOnly) {
  Ring ring(8);
  ring.arm(0, stream(1), "a");
  ring.arm(0, stream(2), "b");
  const size_t other = ring.arm(1, stream(1), "c");
  EXPECT_EQ(ring.wait_error(0, nullptr, true), "");
  EXPECT_EQ(ring.checks.pending(), 1u);
  ring.flag(other, 5);
  EXPECT_EQ(ring.wait_error(0, nullptr, true), "");  // device 1's finding waits for device 1
  EXPECT_EQ(ring.wait_error(1, nullptr, true).rfind("[c] bad 5", 0), 0u);
}

TEST(DeferredChecks, AFinishedStreamsSlotsGoAtTheNextWaitAndItsHandleMayBeReused) {
  Ring ring(2);
  const size_t old_slot = ring.arm(0, stream(1), "old");
  ring.checks.stream_finished(0, stream(1));  // waited for, then destroyed
  EXPECT_FALSE(ring.checks.pending_on(0, stream(1)));
  ring.flag(old_slot, 4);
  ring.arm(0, stream(1), "new");  // the handle reused
  // The ring is full and its oldest slot finished: no wait for the reused handle, and
  // the new stream's slot stays.
  try {
    ring.arm(0, stream(2), "third");
    FAIL() << "expected old's error";
  } catch (const sdk::Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[old] bad 4", 0), 0u) << e.what();
  }
  EXPECT_TRUE(ring.waits.empty());
  EXPECT_EQ(ring.checks.pending(), 1u);
  EXPECT_TRUE(ring.checks.pending_on(0, stream(1)));
}

TEST(DeferredChecks, AFullRingWaitsForTheOldestLaunchedSlotsStreamFirst) {
  Ring ring(2);
  ring.arm(0, stream(1), "first");
  ring.arm(0, stream(2), "second");
  const size_t third = ring.arm(0, stream(3), "third");
  ASSERT_EQ(ring.waits.size(), 1u);
  EXPECT_EQ(ring.waits[0], std::make_pair(0, stream(1)));
  EXPECT_EQ(ring.checks.pending(), 2u);
  // A full ring with a flagged slot: the wait made for room reports it, so the new launch
  // gets that error instead of a slot; second's slot is free again.
  ring.flag(third, 99);
  try {
    ring.arm(0, stream(4), "fourth");
    FAIL() << "expected third's error";
  } catch (const sdk::Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[third] bad 99", 0), 0u) << e.what();
  }
  ASSERT_EQ(ring.waits.size(), 2u);
  EXPECT_EQ(ring.waits[1], std::make_pair(0, stream(2)));
  EXPECT_EQ(ring.checks.pending(), 1u);  // third's, reported, until stream 3 is waited for
  ring.arm(0, stream(4), "fourth");
  EXPECT_EQ(ring.checks.pending(), 2u);
  // Every slot held by launches still to come: refused, not waited for.
  Ring unlaunched(1);
  unlaunched.arm(0, stream(1), "a", /*launch=*/false);
  EXPECT_THROW(unlaunched.arm(0, stream(1), "b"), sdk::Error);
  EXPECT_TRUE(unlaunched.waits.empty());
}

}  // namespace
}  // namespace loom::gpu
