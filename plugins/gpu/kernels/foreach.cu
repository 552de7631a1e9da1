// The foreach family's GPU kernels: the fused Adam and AdamW step (Note [Fused Adam] in
// ops/decompositions/foreach.cc) over every parameter of a group in one launch per table
// of chunks (Note [Multi-tensor launches]): each element's gradient, moments and parameter
// read once and written once, in float (double for float64), the step count read per
// tensor, and the whole step skipped on the device when found_inf is set.
#include <cstdint>
#include <type_traits>

#include "device_math.cuh"
#include "device_types.h"
#include "elementwise_launcher.cuh"
#include "launch.h"

namespace loom::gpu {
namespace {

constexpr int kFusedAdamThreads = 256;

// The step count of table entry t: on the device in its dtype, or given by value.
__device__ __forceinline__ double step_of(const FusedAdamTable& table, int t) {
  const void* p = table.step[t];
  if (p == nullptr) return table.step_value[t];
  switch (table.step_dtype[t]) {
    case LOOM_DTYPE_FLOAT32:
      return *static_cast<const float*>(p);
    case LOOM_DTYPE_FLOAT64:
      return *static_cast<const double*>(p);
    case LOOM_DTYPE_INT32:
      return *static_cast<const int32_t*>(p);
    default:
      return static_cast<double>(*static_cast<const int64_t*>(p));  // int64
  }
}

template <typename T>
__global__ void fused_adam_kernel(FusedAdamTable table, FusedAdamOptions o) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  if (o.found_inf != nullptr && *o.found_inf != 0.0f) return;
  const int t = table.block_tensor[blockIdx.x];
  int64_t begin = 0, end = 0;
  multi_tensor_block_range(table, static_cast<int>(blockIdx.x), kMultiTensorChunk, begin, end);
  T* param = static_cast<T*>(table.param[t]);
  T* grad = static_cast<T*>(table.grad[t]);
  T* exp_avg = static_cast<T*>(table.exp_avg[t]);
  T* exp_avg_sq = static_cast<T*>(table.exp_avg_sq[t]);
  T* max_exp_avg_sq = static_cast<T*>(table.max_exp_avg_sq[t]);
  const double step = step_of(table, t);
  const A step_size = static_cast<A>(o.lr / (1.0 - dev::pow(o.beta1, step)));
  const A bias_correction2_sqrt = static_cast<A>(dev::sqrt(1.0 - dev::pow(o.beta2, step)));
  const A beta1 = static_cast<A>(o.beta1), beta2 = static_cast<A>(o.beta2);
  const A weight_decay = static_cast<A>(o.weight_decay), eps = static_cast<A>(o.eps);
  const A decay = static_cast<A>(1.0 - o.lr * o.weight_decay);
  const A inverse_scale = o.grad_scale != nullptr ? A(1) / static_cast<A>(*o.grad_scale) : A(1);
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    A g = convert<A>(grad[i]);
    if (o.grad_scale != nullptr) {
      g *= inverse_scale;
      grad[i] = convert<T>(g);  // the gradients are unscaled in place
    }
    if (o.maximize) g = -g;
    A p = convert<A>(param[i]);
    if (o.weight_decay != 0) {
      if (o.decoupled) {
        p *= decay;
      } else {
        g += weight_decay * p;
      }
    }
    // lerp(m, g, 1 - beta1) from m's end, as the decomposition's lerp_ computes it
    const A m = convert<A>(exp_avg[i]) + (A(1) - beta1) * (g - convert<A>(exp_avg[i]));
    const A v = convert<A>(exp_avg_sq[i]) * beta2 + (A(1) - beta2) * g * g;
    A second = v;
    if (o.amsgrad) {
      const A kept = convert<A>(max_exp_avg_sq[i]);
      second = kept > v ? kept : v;
      max_exp_avg_sq[i] = convert<T>(second);
    }
    const A denom = dev::sqrt(second) / bias_correction2_sqrt + eps;
    param[i] = convert<T>(p - step_size * m / denom);
    exp_avg[i] = convert<T>(m);
    exp_avg_sq[i] = convert<T>(v);
  }
}

}  // namespace

const char* launch_fused_adam(int32_t dtype, const FusedAdamTable& table,
                              const FusedAdamOptions& options, gpuStream_t stream) {
  if (table.num_blocks == 0) return nullptr;
  const char* result = kUnsupportedDtype;
  visit_floating_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    launch_kernel(fused_adam_kernel<T>, table.num_blocks, kFusedAdamThreads, 0, stream, table,
                  options);
    result = last_launch_error();
  });
  return result;
}

}  // namespace loom::gpu
