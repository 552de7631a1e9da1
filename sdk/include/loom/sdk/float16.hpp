// Bit-exact conversions between float and the 16-bit float formats (IEEE binary16 and
// bfloat16), shared by every backend so that a float16 result is the same bits on the
// CPU and on a GPU. Plain functions of integers and floats, also compiled into device
// code by nvcc and hipcc (LOOM_SDK_HOST_DEVICE).
//
// Conversions from float round to nearest, ties to even, and keep NaN a (quiet) NaN;
// conversions to float are exact.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define LOOM_SDK_HOST_DEVICE __host__ __device__
#else
#define LOOM_SDK_HOST_DEVICE
#endif
// clang's HIP device code has no std::memcpy; its builtin is the same byte copy.
#if defined(__HIPCC__)
#define LOOM_SDK_BIT_COPY __builtin_memcpy
#else
#define LOOM_SDK_BIT_COPY std::memcpy
#endif

namespace loom::sdk {

LOOM_SDK_HOST_DEVICE inline uint32_t float_bits(float f) {
  uint32_t u;
  LOOM_SDK_BIT_COPY(&u, &f, sizeof(u));
  return u;
}
LOOM_SDK_HOST_DEVICE inline float bits_float(uint32_t u) {
  float f;
  LOOM_SDK_BIT_COPY(&f, &u, sizeof(f));
  return f;
}

// float -> IEEE binary16, round to nearest even; NaN stays a (quiet) NaN.
LOOM_SDK_HOST_DEVICE inline uint16_t float_to_half_bits(float f) {
  const uint32_t x = float_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x0200u : 0u) |
                                 ((abs >> 13) & 0x03ffu));
  }
  if (abs >= 0x477ff000u) {  // >= 65520 rounds to infinity
    return static_cast<uint16_t>(sign | 0x7c00u);
  }
  if (abs < 0x38800000u) {  // below 2^-14: a half subnormal (or zero)
    // Adding 0.5 puts the value's 2^-24 units in the low mantissa bits of the sum, and
    // the float addition rounds them to nearest even.
    const float sum = bits_float(abs) + 0.5f;
    return static_cast<uint16_t>(sign | (float_bits(sum) - 0x3f000000u));
  }
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped bits to even.
  const uint32_t odd = (abs >> 13) & 1u;
  abs += 0xc8000fffu + odd;  // -(112 << 23) + half-ulp - 1 + odd
  return static_cast<uint16_t>(sign | (abs >> 13));
}

// IEEE binary16 -> float, exact.
LOOM_SDK_HOST_DEVICE inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x03ffu;
  if (exp == 0x1fu) return bits_float(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    // subnormal: mant * 2^-24, exact in float
    const float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

// float -> bfloat16 (the upper half of a float), round to nearest even; NaN stays NaN.
LOOM_SDK_HOST_DEVICE inline uint16_t float_to_bfloat16_bits(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    return static_cast<uint16_t>((x >> 16) | 0x0040u);  // quiet NaN, sign kept
  }
  const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

LOOM_SDK_HOST_DEVICE inline float bfloat16_bits_to_float(uint16_t b) {
  return bits_float(static_cast<uint32_t>(b) << 16);
}

}  // namespace loom::sdk
