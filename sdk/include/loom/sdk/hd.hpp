// LOOM_SDK_HD marks the SDK's arithmetic that GPU kernels share with host code:
// __host__ __device__ under nvcc or hipcc, plain inline functions elsewhere.
#pragma once

#if defined(__CUDACC__) || defined(__HIPCC__)
#define LOOM_SDK_HD __host__ __device__ inline
#else
#define LOOM_SDK_HD inline
#endif
