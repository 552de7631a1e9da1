// Philox-4x32-10, the counter-based generator behind every loom random op, and the
// conversions from its 32-bit words to uniform, normal and integer values. Header-only
// and free of host state, so every backend (CPU, vendor devices, tests) computes
// bit-identical words from the same (seed, offset, index).
//
// Note [Random stream layout]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A random op reserves `count` counters from its device type's generator (one host
// call, sdk::reserve_random) and gets back (seed, offset). Element i of the op, where
// i is the element's row-major position in the logical shape of the tensor it fills
// (strides and storage order do not matter), then uses exactly one Philox block:
//
//   key     = (low 32 bits of seed, high 32 bits of seed)
//   counter = (low 32 bits of offset + i, high 32 bits of offset + i, 0, 0)
//   block   = philox4x32_10(counter, key)          four 32-bit words w0..w3
//
// and computes its value from that block alone:
//
//   uniform float32/float16/bfloat16   uniform_float(w0) = (w0 >> 8) * 2^-24 in [0, 1)
//   uniform float64                    uniform_double(w0, w1): 53 bits of (w1:w0) * 2^-53
//   normal (float32 and narrower)      Box-Muller in float: u1 = 1 - uniform_float(w0),
//                                      u2 = uniform_float(w1); sqrt(-2 ln u1) cos(2 pi u2)
//   normal float64                     the same in double with uniform_double(w0, w1) and
//                                      uniform_double(w2, w3)
//   bernoulli / dropout (any dtype)    uniform_double(w0, w1) < p
//   integers in [from, to)             from + bits64(w0, w1) mod (to - from)
//   randperm                           the element's sort key is bits64(w0, w1)
//
// The op advances the generator by its element count (numel), so the next op starts
// where this one ended. One block per element spends 128 bits where a float needs 24,
// but it makes every element a pure function of (seed, offset, i): no pairing of
// neighbours (Box-Muller uses only the element's own block), no blocks shared between
// chunks, so any thread count, chunking, vector width or GPU launch shape gives the
// same tensor, and a vendor backend reproduces CPU results by computing the same
// formula per element. The words and the uniform conversions are exact integer and
// power-of-two arithmetic, identical everywhere; the normal transform goes through the
// platform's log, sqrt and cos, so backends agree to their accuracy (last-ulp
// differences are possible between libms, not between runs or thread counts).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <numbers>

namespace loom::sdk {

using PhiloxBlock = std::array<uint32_t, 4>;  // a 128-bit counter or output, word 0 first
using PhiloxKey = std::array<uint32_t, 2>;

namespace detail {
inline constexpr uint32_t kPhiloxMultiplier0 = 0xD2511F53u;
inline constexpr uint32_t kPhiloxMultiplier1 = 0xCD9E8D57u;
inline constexpr uint32_t kPhiloxWeyl0 = 0x9E3779B9u;  // the key schedule's increments
inline constexpr uint32_t kPhiloxWeyl1 = 0xBB67AE85u;

constexpr PhiloxBlock philox_round(const PhiloxBlock& c, const PhiloxKey& k) {
  const uint64_t p0 = static_cast<uint64_t>(kPhiloxMultiplier0) * c[0];
  const uint64_t p1 = static_cast<uint64_t>(kPhiloxMultiplier1) * c[2];
  const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
  const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
  return {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
}
}  // namespace detail

// The Philox-4x32 bijection with 10 rounds (Salmon et al., SC'11).
constexpr PhiloxBlock philox4x32_10(PhiloxBlock counter, PhiloxKey key) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += detail::kPhiloxWeyl0;
      key[1] += detail::kPhiloxWeyl1;
    }
    counter = detail::philox_round(counter, key);
  }
  return counter;
}

// What a random op got from its generator: element i uses counter offset + i.
struct PhiloxStream {
  uint64_t seed = 0;
  uint64_t offset = 0;

  // The block of element i (Note [Random stream layout]).
  constexpr PhiloxBlock block(uint64_t i) const {
    const uint64_t c = offset + i;
    return philox4x32_10({static_cast<uint32_t>(c), static_cast<uint32_t>(c >> 32), 0u, 0u},
                         {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
  }
};

// --- conversions (exact; Note [Random stream layout]) ---

// (hi:lo) as one 64-bit integer.
constexpr uint64_t philox_bits64(uint32_t lo, uint32_t hi) {
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

// A float in [0, 1) on the grid of 2^-24 (all 24 bits of a float's significand).
constexpr float uniform_float(uint32_t w) {
  return static_cast<float>(w >> 8) * 0x1.0p-24f;
}

// A double in [0, 1) on the grid of 2^-53.
constexpr double uniform_double(uint32_t lo, uint32_t hi) {
  return static_cast<double>(philox_bits64(lo, hi) >> 11) * 0x1.0p-53;
}

// A standard normal float from one block (Box-Muller, cosine branch).
inline float normal_float(const PhiloxBlock& b) {
  const float u1 = 1.0f - uniform_float(b[0]);  // (0, 1]: log is finite
  const float u2 = uniform_float(b[1]);
  return std::sqrt(-2.0f * std::log(u1)) * std::cos(2.0f * std::numbers::pi_v<float> * u2);
}

// A standard normal double from one block (Box-Muller, cosine branch).
inline double normal_double(const PhiloxBlock& b) {
  const double u1 = 1.0 - uniform_double(b[0], b[1]);
  const double u2 = uniform_double(b[2], b[3]);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

// An integer offset in [0, range) for range >= 1; range == 0 means all 2^64 values.
// The modulo bias is below range / 2^64.
constexpr uint64_t uniform_below(const PhiloxBlock& b, uint64_t range) {
  const uint64_t bits = philox_bits64(b[0], b[1]);
  return range == 0 ? bits : bits % range;
}

}  // namespace loom::sdk
