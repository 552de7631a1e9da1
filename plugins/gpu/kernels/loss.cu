// nll_loss: each position's -weight[target] * self[..., target, ...] (0 where the target
// is ignore_index), written per position for reduction none, or summed (with the total
// weight, for mean) by one block in a fixed order and combining tree, in double as on the
// CPU, so the loss is deterministic. A target outside [0, classes) is flagged in the launch's
// check slot (Note [Input errors found by kernels]).
#include <cstdint>

#include "device_math.cuh"
#include "device_types.h"
#include "elementwise_launcher.cuh"
#include "launch.h"

namespace loom::gpu {
namespace {

constexpr int kLossThreads = 256;

// Position i's loss and weight (both 0 for an ignored or out-of-range target).
template <typename T, typename I>
__device__ __forceinline__ void position_loss(const NllLossShape& s, int64_t i, const T* self,
                                              const I* target, const T* weight, int64_t* status,
                                              int64_t (&o)[3], double& loss, double& w) {
  s.positions.offsets(i, o);
  const int64_t cls = static_cast<int64_t>(target[o[2]]);
  loss = 0;
  w = 0;
  if (cls == s.ignore_index) return;
  if (cls < 0 || cls >= s.classes) {
    dev::flag_input(status, cls);
    return;
  }
  w = weight == nullptr ? 1.0 : convert<double>(weight[cls * s.weight_stride]);
  loss = -w * convert<double>(self[o[1] + cls * s.class_stride]);
}

template <typename T, typename I>
__global__ void nll_loss_none_kernel(int64_t n, NllLossShape s, T* out, const T* self,
                                     const I* target, const T* weight, int64_t* status) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t o[3];
    double loss, w;
    position_loss(s, i, self, target, weight, status, o, loss, w);
    out[o[0]] = convert<T>(loss);
  }
}

template <typename T, typename I>
__global__ void nll_loss_reduce_kernel(int64_t n, NllLossShape s, bool mean, T* out, const T* self,
                                       const I* target, const T* weight, int64_t* status) {
  __shared__ double loss_sum[kLossThreads], weight_sum[kLossThreads];
  double total = 0, total_weight = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    int64_t o[3];
    double loss, w;
    position_loss(s, i, self, target, weight, status, o, loss, w);
    total += loss;
    total_weight += w;
  }
  loss_sum[threadIdx.x] = total;
  weight_sum[threadIdx.x] = total_weight;
  __syncthreads();
  for (unsigned width = blockDim.x / 2; width > 0; width /= 2) {
    if (threadIdx.x < width) {
      loss_sum[threadIdx.x] += loss_sum[threadIdx.x + width];
      weight_sum[threadIdx.x] += weight_sum[threadIdx.x + width];
    }
    __syncthreads();
  }
  // mean over a total weight of 0 is NaN, as in PyTorch
  if (threadIdx.x == 0) *out = convert<T>(mean ? loss_sum[0] / weight_sum[0] : loss_sum[0]);
}

}  // namespace

const char* launch_nll_loss(int32_t dtype, int32_t target_dtype, const NllLossShape& shape,
                            bool reduce, bool mean, void* out, const void* self, const void* target,
                            const void* weight, int64_t* status, gpuStream_t stream) {
  if (target_dtype != LOOM_DTYPE_INT64 && target_dtype != LOOM_DTYPE_INT32) {
    return "the target must be int64 or int32";
  }
  const char* result = kUnsupportedDtype;
  visit_floating_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    auto queue = [&](auto index_tag) {
      using I = decltype(index_tag);
      const auto* t = static_cast<const I*>(target);
      if (!reduce) {
        result = launch_grid_stride(nll_loss_none_kernel<T, I>, shape.positions.numel(), stream,
                                    shape, static_cast<T*>(out), static_cast<const T*>(self), t,
                                    static_cast<const T*>(weight), status);
        return;
      }
      launch_kernel(nll_loss_reduce_kernel<T, I>, 1, kLossThreads, 0, stream,
                    shape.positions.numel(), shape, mean, static_cast<T*>(out),
                    static_cast<const T*>(self), t, static_cast<const T*>(weight), status);
      result = last_launch_error();
    };
    if (target_dtype == LOOM_DTYPE_INT64) {
      queue(int64_t{});
    } else {
      queue(int32_t{});
    }
  });
  return result;
}

}  // namespace loom::gpu
