// Loss scaling's kernels (Note [Loss scaling ops] in ops/decompositions/amp.cc): the unscale
// of many gradients in one launch per table of chunks (Note [Multi-tensor launches]), each
// element checked and multiplied as the CPU kernel does it, and the scale's update by one
// thread, with no value read back to the host.
#include <cstdint>

#include "device_math.cuh"
#include "device_types.h"
#include "elementwise_launcher.cuh"
#include "launch.h"

namespace loom::gpu {
namespace {

constexpr int kAmpThreads = 256;

template <typename T>
using acc_of = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <typename T>
__global__ void amp_unscale_kernel(MultiTensorBatch batch, float* found_inf,
                                   const float* inv_scale) {
  using A = acc_of<T>;
  int64_t begin = 0, end = 0;
  multi_tensor_block_range(batch, static_cast<int>(blockIdx.x), kMultiTensorChunk, begin, end);
  T* p = static_cast<T*>(batch.data[batch.block_tensor[blockIdx.x]]);
  // The factor in the gradient's dtype first, as mul_ casts its 0-dim operand.
  const A factor = convert<A>(convert<T>(*inv_scale));
  bool bad = false;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const A v = convert<A>(p[i]);
    bad = bad || !isfinite(v);
    p[i] = convert<T>(v * factor);
  }
  if (bad) *found_inf = 1.0f;  // every writer writes the same value
}

__global__ void amp_update_scale_kernel(float* scale, int32_t* tracker, const float* found_inf,
                                        double growth, double backoff, int64_t interval) {
  if (*found_inf > 0.0f) {
    *scale *= static_cast<float>(backoff);
    *tracker = 0;
    return;
  }
  const int64_t counted = static_cast<int64_t>(*tracker) + 1;
  if (counted >= interval) {
    const float grown = *scale * static_cast<float>(growth);
    if (isfinite(grown)) *scale = grown;
    *tracker = 0;
  } else {
    *tracker = static_cast<int32_t>(counted);
  }
}

}  // namespace

const char* launch_amp_unscale(int32_t dtype, const MultiTensorBatch& batch, float* found_inf,
                               const float* inv_scale, gpuStream_t stream) {
  if (batch.num_blocks == 0) return nullptr;
  const char* result = kUnsupportedDtype;
  visit_floating_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    launch_kernel(amp_unscale_kernel<T>, batch.num_blocks, kAmpThreads, 0, stream, batch, found_inf,
                  inv_scale);
    result = last_launch_error();
  });
  return result;
}

const char* launch_amp_update_scale(float* scale, int32_t* growth_tracker, const float* found_inf,
                                    double growth, double backoff, int64_t interval,
                                    gpuStream_t stream) {
  launch_kernel(amp_update_scale_kernel, 1, 1, 0, stream, scale, growth_tracker, found_inf, growth,
                backoff, interval);
  return last_launch_error();
}

}  // namespace loom::gpu
