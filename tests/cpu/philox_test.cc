// The SDK's random number pieces on their own: Philox-4x32-10 against the Random123
// known-answer vectors, the stream layout (counter = offset + i, key = seed), the exact
// word-to-number conversions, and sdk::reserve_random against new and old hosts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>

#include "loom/sdk/philox.hpp"
#include "loom/sdk/random.hpp"

namespace loom::sdk {
namespace {

// Published with Random123 (Salmon et al., SC'11): counter, key, expected output.
TEST(Philox, KnownAnswerVectors) {
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}),
            (PhiloxBlock{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(
      philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
      (PhiloxBlock{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  // the digits of pi
  EXPECT_EQ(
      philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
      (PhiloxBlock{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Philox, IsConstexpr) {
  static_assert(philox4x32_10({0, 0, 0, 0}, {0, 0})[0] == 0x6627e8d5);
  static_assert(PhiloxStream{0, 0}.block(0)[3] == 0x9b00dbd8);
}

TEST(Philox, StreamBlockIsCounterOffsetPlusIndexKeyedBySeed) {
  const uint64_t seed = 0x0123456789abcdefULL;
  const PhiloxStream s{seed, 0xfffffffeULL};
  // offset + i crosses the 32-bit boundary of the counter's low word
  EXPECT_EQ(s.block(1), philox4x32_10({0xffffffff, 0, 0, 0}, {0x89abcdef, 0x01234567}));
  EXPECT_EQ(s.block(2), philox4x32_10({0, 1, 0, 0}, {0x89abcdef, 0x01234567}));
  EXPECT_EQ(s.block(7), (PhiloxStream{seed, 0xfffffffeULL + 7}.block(0)));
  EXPECT_NE(s.block(0), (PhiloxStream{seed + 1, 0xfffffffeULL}.block(0)));
}

TEST(Philox, ConversionsAreExactAndHalfOpen) {
  EXPECT_EQ(uniform_float(0), 0.0f);
  EXPECT_EQ(uniform_float(0xff), 0.0f);  // the low 8 bits are dropped
  EXPECT_EQ(uniform_float(0x100), 0x1.0p-24f);
  EXPECT_EQ(uniform_float(0x80000000u), 0.5f);
  EXPECT_EQ(uniform_float(0xffffffffu), 1.0f - 0x1.0p-24f);
  EXPECT_EQ(uniform_double(0, 0), 0.0);
  EXPECT_EQ(uniform_double(0, 0x80000000u), 0.5);
  EXPECT_EQ(uniform_double(0x800, 0), 0x1.0p-53);
  EXPECT_EQ(uniform_double(0xffffffffu, 0xffffffffu), 1.0 - 0x1.0p-53);
  EXPECT_EQ(philox_bits64(0x89abcdef, 0x01234567), 0x0123456789abcdefULL);
  EXPECT_EQ(uniform_below({7, 0, 0, 0}, 5), 2u);
  EXPECT_EQ(uniform_below({7, 1, 0, 0}, 0), (uint64_t{1} << 32) + 7);  // 0: all 2^64 values
}

TEST(Philox, NormalIsBoxMullerOfTheElementsOwnBlock) {
  // u1 = 1 - 0 = 1 -> radius 0; u2 chosen freely: the result is exactly 0
  EXPECT_EQ(normal_float({0, 12345, 0, 0}), 0.0f);
  EXPECT_EQ(normal_double({0, 0, 99, 99}), 0.0);
  // u1 = 1/2, u2 = 0: sqrt(2 ln 2) * cos(0)
  EXPECT_FLOAT_EQ(normal_float({0x80000000u, 0, 0, 0}), std::sqrt(2.0f * std::log(2.0f)));
  EXPECT_DOUBLE_EQ(normal_double({0, 0x80000000u, 0, 0}), std::sqrt(2.0 * std::log(2.0)));
  // u2 = 1/2: cos(pi) = -1
  EXPECT_DOUBLE_EQ(normal_double({0, 0x80000000u, 0, 0x80000000u}),
                   -std::sqrt(2.0 * std::log(2.0)));
  // the largest magnitude: u1 = 2^-24 (float) / 2^-53 (double)
  EXPECT_FLOAT_EQ(normal_float({0xffffffffu, 0, 0, 0}), std::sqrt(48.0f * std::log(2.0f)));
  EXPECT_DOUBLE_EQ(normal_double({0xffffffffu, 0xffffffffu, 0, 0}),
                   std::sqrt(106.0 * std::log(2.0)));
}

// --- sdk::reserve_random against a stand-in host table ---

uint64_t g_reserved = 0;

LoomError* fake_reserve(LoomDevice device, uint64_t count, uint64_t* seed, uint64_t* offset) {
  *seed = 1000 + static_cast<uint64_t>(device.type);
  *offset = g_reserved;
  g_reserved += count;
  return nullptr;
}

class ReserveRandom : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = plugin_state().host;
    host_ = LoomHostApi{};
    host_.struct_size = sizeof(LoomHostApi);
    host_.abi_major = 1;
    host_.abi_minor = 1;
    host_.generator_reserve = &fake_reserve;
    plugin_state().host = &host_;
    g_reserved = 0;
  }
  void TearDown() override { plugin_state().host = saved_; }
  LoomHostApi host_{};
  const LoomHostApi* saved_ = nullptr;
};

TEST_F(ReserveRandom, ReturnsTheHostsSeedAndOffset) {
  PhiloxStream a = reserve_random({LOOM_DEVICE_CPU, -1}, 10);
  PhiloxStream b = reserve_random({3, 0}, 5);
  EXPECT_EQ(a.seed, 1000u);
  EXPECT_EQ(a.offset, 0u);
  EXPECT_EQ(b.seed, 1003u);
  EXPECT_EQ(b.offset, 10u);
}

TEST_F(ReserveRandom, AnOlderHostGetsAClearError) {
  host_.struct_size = offsetof(LoomHostApi, generator_reserve);  // an ABI 1.0 table
  host_.abi_minor = 0;
  try {
    reserve_random({LOOM_DEVICE_CPU, -1}, 1);
    ADD_FAILURE() << "expected sdk::Error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "[sdk] random numbers need the host service generator_reserve (loom ABI 1.1), "
                 "but this host provides ABI 1.0");
    EXPECT_EQ(e.code(), LOOM_STATUS_UNIMPLEMENTED);
  }
  EXPECT_EQ(g_reserved, 0u);
}

TEST_F(ReserveRandom, HostErrorsBecomeSdkErrors) {
  host_.generator_reserve = [](LoomDevice, uint64_t, uint64_t*, uint64_t*) -> LoomError* {
    return make_error(LOOM_STATUS_INVALID_ARGUMENT, "[host] generator_reserve: bad device");
  };
  EXPECT_THROW(reserve_random({77, 0}, 1), Error);
}

}  // namespace
}  // namespace loom::sdk
