// Device math overloaded for float and double (the float forms call the single-precision
// functions, never a silent promotion to double), shared by the GPU kernel files; and the
// flagging of bad input found by a kernel.
#pragma once

#include <cstdint>

#include "../runtime/gpu_runtime.h"

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

template <typename T>
__device__ __forceinline__ bool isnan(T x) {
  return x != x;
}

}  // namespace loom::gpu::dev
