// Random fills on the SDK's Philox stream layout (Note [Random stream layout] in
// loom/sdk/philox.hpp): element i of the logical row-major order uses Philox block
// (seed, offset + i) alone, so a GPU tensor holds the same values as a CPU tensor made
// with the same seed, whatever the launch shape.
#include <cstdint>

#include "device_math.cuh"
#include "device_types.h"
#include "elementwise_launcher.cuh"
#include "launch.h"
#include "loom/sdk/philox.hpp"

namespace loom::gpu {
namespace {

template <typename T>
struct RandomFill {
  RandomOp op;
  uint64_t seed, offset;
  double a, b;

  __device__ __forceinline__ T value(int64_t i) const {
    const sdk::PhiloxStream stream{seed, offset};
    const sdk::PhiloxBlock w = stream.block(static_cast<uint64_t>(i));
    if (op == RandomOp::Bernoulli) {
      return convert<T>(sdk::uniform_double(w[0], w[1]) < a ? 1.0f : 0.0f);
    }
    // The CPU plugin's formulas (plugins/cpu/kernels/random.cc), in double.
    double u, z = 0;
    if constexpr (std::is_same_v<T, double>) {
      u = sdk::uniform_double(w[0], w[1]);
      if (op == RandomOp::Normal) {
        const double u1 = 1.0 - u;
        const double u2 = sdk::uniform_double(w[2], w[3]);
        z = dev::sqrt(-2.0 * dev::log(u1)) * dev::cos(2.0 * 3.14159265358979323846 * u2);
      }
    } else {
      u = sdk::uniform_float(w[0]);
      if (op == RandomOp::Normal) {
        const float u1 = 1.0f - sdk::uniform_float(w[0]);
        const float u2 = sdk::uniform_float(w[1]);
        z = dev::sqrt(-2.0f * dev::log(u1)) * dev::cos(2.0f * 3.14159265358979f * u2);
      }
    }
    if (op == RandomOp::Normal) return convert<T>(a + b * z);
    // uniform in [a, b): a value that rounds up to b becomes a
    const T v = convert<T>(a + (b - a) * u);
    return convert<double>(v) >= b && a < b ? convert<T>(a) : v;
  }
};

template <typename T>
__global__ void random_kernel(int64_t n, StridedSpace<1> space, T* out, RandomFill<T> fill) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t o[1];
    space.offsets(i, o);
    out[o[0]] = fill.value(i);
  }
}

template <typename T>
__global__ void random_of_kernel(int64_t n, StridedSpace<2> space, RandomOfOp op, uint64_t seed,
                                 uint64_t offset, double p, double scale, T* out, const T* in,
                                 int64_t* check) {
  const sdk::PhiloxStream stream{seed, offset};
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t o[2];
    space.offsets(i, o);
    const sdk::PhiloxBlock w = stream.block(static_cast<uint64_t>(i));
    const double u = sdk::uniform_double(w[0], w[1]), x = convert<double>(in[o[1]]);
    if (op == RandomOfOp::BernoulliOf) {
      if (!(x >= 0.0 && x <= 1.0)) dev::flag_input(check, i);
      out[o[0]] = convert<T>(u < x ? 1.0 : 0.0);
    } else {
      out[o[0]] = u < p ? convert<T>(0.0) : convert<T>(x * scale);
    }
  }
}

template <typename T>
__global__ void random_integers_kernel(int64_t n, StridedSpace<1> space, bool permutation_keys,
                                       uint64_t seed, uint64_t offset, int64_t from, uint64_t count,
                                       T* out) {
  const sdk::PhiloxStream stream{seed, offset};
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t o[1];
    space.offsets(i, o);
    const sdk::PhiloxBlock w = stream.block(static_cast<uint64_t>(i));
    if (permutation_keys) {
      const uint64_t bits = sdk::philox_bits64(w[0], w[1]) ^ (uint64_t{1} << 63);
      out[o[0]] = convert<T>(static_cast<int64_t>(bits));
    } else {
      const uint64_t v = static_cast<uint64_t>(from) + sdk::uniform_below(w, count);
      out[o[0]] = convert<T>(static_cast<int64_t>(v));
    }
  }
}

}  // namespace

const char* launch_random_of(RandomOfOp op, int32_t dtype, uint64_t seed, uint64_t offset, double p,
                             double scale, const StridedSpace<2>& space, void* out, const void* in,
                             int64_t* check, gpuStream_t stream) {
  const char* result = kUnsupportedDtype;
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_floating_v<T>) {
      result =
          launch_grid_stride(random_of_kernel<T>, space.numel(), stream, space, op, seed, offset, p,
                             scale, static_cast<T*>(out), static_cast<const T*>(in), check);
    }
  });
  return result;
}

const char* launch_random_integers(bool permutation_keys, int32_t dtype, uint64_t seed,
                                   uint64_t offset, int64_t from, uint64_t count,
                                   const StridedSpace<1>& space, void* out, gpuStream_t stream) {
  const char* result = kUnsupportedDtype;
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    result = launch_grid_stride(random_integers_kernel<T>, space.numel(), stream, space,
                                permutation_keys, seed, offset, from, count, static_cast<T*>(out));
  });
  return result;
}

const char* launch_random(RandomOp op, int32_t dtype, uint64_t seed, uint64_t offset, double a,
                          double b, const StridedSpace<1>& space, void* out, gpuStream_t stream) {
  const char* result = "the dtype is not supported by this kernel";
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_floating_v<T> || std::is_same_v<T, bool>) {
      if (!is_floating_v<T> && op != RandomOp::Bernoulli) return;
      result = nullptr;
      const int64_t n = space.numel();
      if (n == 0) return;
      const Launch l = plan_elementwise(n, 1);
      launch_kernel(random_kernel<T>, l.grid, l.block, 0, stream, n, space, static_cast<T*>(out),
                    RandomFill<T>{op, seed, offset, a, b});
      const gpuError_t err = gpuGetLastError();
      if (err != gpuSuccess) result = gpuGetErrorString(err);
    }
  });
  return result;
}

}  // namespace loom::gpu
