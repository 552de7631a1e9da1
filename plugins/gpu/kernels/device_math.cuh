// Device math overloaded for float and double (the float forms call the single-precision
// functions, never a silent promotion to double), shared by the GPU kernel files; and the
// flagging of bad input found by a kernel, and atomic adds of every floating type.
#pragma once

#include <cstdint>
#include <type_traits>

#include "../runtime/gpu_runtime.h"
#include "device_types.h"

namespace loom::gpu::dev {

#define LOOM_GPU_MATH1(name, float_name)             \
  __device__ __forceinline__ float name(float x) {   \
    return ::float_name(x);                          \
  }                                                  \
  __device__ __forceinline__ double name(double x) { \
    return ::name(x);                                \
  }
#define LOOM_GPU_MATH2(name, float_name)                       \
  __device__ __forceinline__ float name(float x, float y) {    \
    return ::float_name(x, y);                                 \
  }                                                            \
  __device__ __forceinline__ double name(double x, double y) { \
    return ::name(x, y);                                       \
  }

LOOM_GPU_MATH1(exp, expf)
LOOM_GPU_MATH1(exp2, exp2f)
LOOM_GPU_MATH1(expm1, expm1f)
LOOM_GPU_MATH1(log, logf)
LOOM_GPU_MATH1(log2, log2f)
LOOM_GPU_MATH1(log10, log10f)
LOOM_GPU_MATH1(log1p, log1pf)
LOOM_GPU_MATH1(sqrt, sqrtf)
LOOM_GPU_MATH1(rsqrt, rsqrtf)
LOOM_GPU_MATH1(sin, sinf)
LOOM_GPU_MATH1(cos, cosf)
LOOM_GPU_MATH1(tan, tanf)
LOOM_GPU_MATH1(asin, asinf)
LOOM_GPU_MATH1(acos, acosf)
LOOM_GPU_MATH1(atan, atanf)
LOOM_GPU_MATH1(sinh, sinhf)
LOOM_GPU_MATH1(cosh, coshf)
LOOM_GPU_MATH1(tanh, tanhf)
LOOM_GPU_MATH1(erf, erff)
LOOM_GPU_MATH1(floor, floorf)
LOOM_GPU_MATH1(ceil, ceilf)
LOOM_GPU_MATH1(nearbyint, nearbyintf)
LOOM_GPU_MATH1(trunc, truncf)
LOOM_GPU_MATH1(fabs, fabsf)
LOOM_GPU_MATH2(pow, powf)
LOOM_GPU_MATH2(atan2, atan2f)
LOOM_GPU_MATH2(fmod, fmodf)
LOOM_GPU_MATH2(copysign, copysignf)

#undef LOOM_GPU_MATH1
#undef LOOM_GPU_MATH2

// Flags bad input `value` in a launch's check slot (Note [Input errors found by kernels]
// in runtime/deferred_checks.h): the value, then the flag, in mapped host memory. Any one
// of several threads' values may remain: each is a bad one.
__device__ __forceinline__ void flag_input(int64_t* slot, int64_t value) {
  volatile int64_t* words = slot;
  words[0] = value;
  __threadfence_system();
  words[1] = 1;
}

// float16 / bfloat16: a compare-and-swap loop on the aligned 32-bit word holding the
// element (the sum in float, rounded once), on every GPU both platforms support.
template <typename T>
__device__ __forceinline__ void atomic_add_16bit(T* target, float value) {
  const auto address = reinterpret_cast<uintptr_t>(target);
  auto* word = reinterpret_cast<unsigned int*>(address & ~uintptr_t{3});
  const unsigned int shift = (address & 2) != 0 ? 16 : 0;
  unsigned int old = *word, assumed = 0;
  do {
    assumed = old;
    T current;
    current.x = static_cast<uint16_t>(assumed >> shift);
    const T sum(static_cast<float>(current) + value);
    const unsigned int updated =
        (assumed & ~(0xffffu << shift)) | (static_cast<unsigned int>(sum.x) << shift);
    old = atomicCAS(word, assumed, updated);
  } while (old != assumed);
}

// *target = update(*target) atomically for an element of 1, 2, 4 or 8 bytes: a
// compare-and-swap loop on the aligned word that holds it (a 1- or 2-byte element shares
// a 32-bit word with its neighbours, whose bits are kept). update takes and returns T.
template <typename T, typename Update>
__device__ __forceinline__ void atomic_update(T* target, Update update) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8,
                "atomic_update needs an element of 1, 2, 4 or 8 bytes");
  if constexpr (sizeof(T) == 8) {
    auto* word = reinterpret_cast<unsigned long long*>(target);
    unsigned long long old = *word, assumed = 0;
    do {
      assumed = old;
      T current;
      memcpy(&current, &assumed, sizeof(T));
      const T next = update(current);
      unsigned long long bits = 0;
      memcpy(&bits, &next, sizeof(T));
      old = atomicCAS(word, assumed, bits);
    } while (old != assumed);
  } else {
    const auto address = reinterpret_cast<uintptr_t>(target);
    auto* word = reinterpret_cast<unsigned int*>(address & ~uintptr_t{3});
    const unsigned int shift = static_cast<unsigned int>(address & 3) * 8;
    const unsigned int mask = sizeof(T) == 4 ? 0xffffffffu : ((1u << (8 * sizeof(T))) - 1) << shift;
    unsigned int old = *word, assumed = 0;
    do {
      assumed = old;
      const unsigned int part = (assumed & mask) >> shift;
      T current;
      memcpy(&current, &part, sizeof(T));  // the low bytes (little-endian)
      const T next = update(current);
      unsigned int bits = 0;
      memcpy(&bits, &next, sizeof(T));
      old = atomicCAS(word, assumed, (assumed & ~mask) | (bits << shift));
    } while (old != assumed);
  }
}

// The element types atomic_add takes.
template <typename T>
inline constexpr bool has_atomic_add_v =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, int32_t> ||
    std::is_same_v<T, int64_t> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// *target += value, atomically (the order of concurrent adds is the hardware's); the
// 16-bit types also take their value in float (rounded once, with the sum).
template <typename T>
__device__ __forceinline__ void atomic_add(T* target, T value) {
  if constexpr (std::is_same_v<T, int64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(target),
              static_cast<unsigned long long>(value));
  } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    atomic_add_16bit(target, static_cast<float>(value));
  } else {
    atomicAdd(target, value);
  }
}

template <typename T>
__device__ __forceinline__ bool isnan(T x) {
  return x != x;
}

}  // namespace loom::gpu::dev
