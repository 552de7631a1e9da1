// Float math written so the compiler vectorises it in every ISA clone (isa.h) and every
// clone gives the same bits: exp for the softmax family, and fixed-lane sums (softmax,
// layer_norm).
//
// Note [Vectorised exp]
// ~~~~~~~~~~~~~~~~~~~~~
// glibc's expf is a scalar call, which keeps a loop around it from vectorising, and its
// vector variants (libmvec) differ between SSE, AVX2 and AVX-512, which would make
// results depend on LOOM_CPU_ISA. exp_nonpositive is plain arithmetic instead (Cephes'
// expf): n = round(x / ln 2) by the 1.5 * 2^23 trick, r = x - n ln 2 in two parts, a
// degree-6 polynomial for exp(r) on |r| <= ln 2 / 2 (within 2 ulp of the exact value),
// scaled by 2^n built in the exponent bits. With -ffp-contract=off the same operations
// run in every clone, lane by lane, so the bits match at every ISA level. Its domain is
// what softmax feeds it, x - max(x) <= 0: results below 2^-126 (x < -87.3) flush to 0,
// -inf gives 0 and NaN stays NaN.
//
// Note [Branch-free selects]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// `c ? a : b` over a mask read from memory compiles to a branch per element, which
// mispredicts on irregular masks (relu's, dropout's) and keeps the loop scalar.
// select_bits blends the bit patterns with an all-ones or all-zeros mask instead, which
// vectorises and gives the same bits as the branch (NaN payloads and signed zeros kept).
//
// Sums use kLanes partial sums, element i going to lane i % kLanes, folded in a fixed
// order: the grouping depends on the length alone, not on the vector width.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace loom::cpu {

inline constexpr int kLanes = 16;

[[gnu::always_inline]] inline float exp_nonpositive(float x) {
  const bool is_nan = x != x;
  float v = is_nan ? 0.0f : (x < -87.5f ? -87.5f : x);
  const float round_magic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float n = (v * 1.44269504088896341f + round_magic) - round_magic;
  const float r = (v - n * 0.693359375f) - n * -2.12194440e-4f;
  const float z = r * r;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float e = p * z + r + 1.0f;
  // 2^n for n in [-126, 0], built in the exponent bits
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return is_nan ? x : (x < -87.5f ? 0.0f : e * scale);
}

// The unsigned integer type of 1, 2, 4 or 8 bytes.
template <size_t Bytes>
using UnsignedOfSize = std::conditional_t<
    Bytes == 1, uint8_t,
    std::conditional_t<Bytes == 2, uint16_t, std::conditional_t<Bytes == 4, uint32_t, uint64_t>>>;

// c ? a : b without a branch for arithmetic T (see Note [Branch-free selects]).
template <typename T>
[[gnu::always_inline]] inline T select_bits(bool c, T a, T b) {
  if constexpr (std::is_arithmetic_v<T>) {
    using U = UnsignedOfSize<sizeof(T)>;
    const U mask = static_cast<U>(U(0) - static_cast<U>(c));
    return std::bit_cast<T>(
        static_cast<U>((std::bit_cast<U>(a) & mask) | (std::bit_cast<U>(b) & U(~mask))));
  } else {
    return c ? a : b;
  }
}

// Folds kLanes partial sums in a fixed order (pairwise).
[[gnu::always_inline]] inline float fold_lanes(const float* lanes) {
  float level[kLanes];
  for (int l = 0; l < kLanes; ++l) level[l] = lanes[l];
  for (int width = kLanes / 2; width > 0; width /= 2) {
    for (int l = 0; l < width; ++l) level[l] = level[l] + level[l + width];
  }
  return level[0];
}

// The sum of x[0, n) in kLanes lanes (see the Note).
[[gnu::always_inline]] inline float lane_sum(const float* x, int64_t n) {
  float lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) lanes[l] += x[i + l];
  }
  for (; i < n; ++i) lanes[i % kLanes] += x[i];
  return fold_lanes(lanes);
}

// The sum of (x[i] - center)^2 over [0, n) in kLanes lanes.
[[gnu::always_inline]] inline float lane_sum_of_squares(const float* x, int64_t n, float center) {
  float lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      const float d = x[i + l] - center;
      lanes[l] += d * d;
    }
  }
  for (; i < n; ++i) {
    const float d = x[i] - center;
    lanes[i % kLanes] += d * d;
  }
  return fold_lanes(lanes);
}

}  // namespace loom::cpu
