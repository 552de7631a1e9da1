// The kernels' input checks on host memory (runtime/deferred_checks.h): a flagged slot
// becomes its op's error at the next wait for its device, unflagged slots of waited
// streams are freed, an event wait frees nothing, and a full ring waits for the oldest
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
  size_t arm(int device, void* s, const std::string& op) {
    return checks.arm(device, s,
                      [op](int64_t v) { return "[" + op + "] bad " + std::to_string(v); });
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

TEST(DeferredChecks, ArmingClearsTheSlotAndAnUnflaggedWaitFreesIt) {
  Ring ring(4);
  const size_t slot = ring.arm(0, stream(1), "gather");
  EXPECT_EQ(ring.words[2 * slot], 0);
  EXPECT_EQ(ring.words[2 * slot + 1], 0);
  EXPECT_EQ(ring.checks.pending(), 1u);
  EXPECT_EQ(ring.wait_error(0, stream(2), false), "");  // another stream: still pending
  EXPECT_EQ(ring.checks.pending(), 1u);
  EXPECT_EQ(ring.wait_error(1, stream(1), true), "");  // another device: still pending
  EXPECT_EQ(ring.checks.pending(), 1u);
  EXPECT_EQ(ring.wait_error(0, stream(1), false), "");
  EXPECT_EQ(ring.checks.pending(), 0u);
}

TEST(DeferredChecks, AFlaggedSlotIsItsOpsErrorOnceAtTheNextWaitOfItsDevice) {
  Ring ring(4);
  ring.arm(0, stream(1), "scatter_add");
  const size_t bad = ring.arm(0, stream(1), "nll_loss");
  const size_t later = ring.arm(0, stream(2), "gather");
  ring.flag(bad, 12);
  ring.flag(later, -3);
  // An event wait reports what is flagged, from any stream of the device, and frees
  // nothing else.
  const std::string message = ring.wait_error(0, nullptr, false, /*retire=*/false);
  EXPECT_EQ(message.rfind("[nll_loss] bad 12 (found by its kernel", 0), 0u) << message;
  EXPECT_NE(message.find("1 later launch(es) also found bad input"), std::string::npos);
  EXPECT_EQ(ring.checks.pending(), 1u);                 // scatter_add's, unflagged
  EXPECT_EQ(ring.wait_error(0, stream(1), false), "");  // reported once
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

TEST(DeferredChecks, AFullRingWaitsForTheOldestSlotsStreamFirst) {
  Ring ring(2);
  ring.arm(0, stream(1), "first");
  ring.arm(0, stream(2), "second");
  const size_t third = ring.arm(0, stream(3), "third");
  ASSERT_EQ(ring.waits.size(), 1u);
  EXPECT_EQ(ring.waits[0], std::make_pair(0, stream(1)));
  EXPECT_EQ(ring.checks.pending(), 2u);
  // A full ring with a flagged slot: the wait made room for reports it, so the new launch
  // gets that error instead of a slot, and the ring has room again.
  ring.flag(third, 99);
  try {
    ring.arm(0, stream(4), "fourth");
    FAIL() << "expected third's error";
  } catch (const sdk::Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[third] bad 99", 0), 0u) << e.what();
  }
  ASSERT_EQ(ring.waits.size(), 2u);
  EXPECT_EQ(ring.waits[1], std::make_pair(0, stream(2)));
  EXPECT_EQ(ring.checks.pending(), 0u);
  ring.arm(0, stream(4), "fourth");
  EXPECT_EQ(ring.checks.pending(), 1u);
}

}  // namespace
}  // namespace loom::gpu
