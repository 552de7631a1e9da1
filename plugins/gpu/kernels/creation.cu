// The GPU kernel of the creation family: arange and linspace write each position's value
// (creation_math.h) into a 1-D out of any stride, converted as the CPU converts
// (through float for the 16-bit formats).
#include <cstdint>

#include "creation_math.h"
#include "device_types.h"
#include "elementwise_launcher.cuh"
#include "launch.h"

namespace loom::gpu {
namespace {

template <typename T>
__global__ void sequence_kernel(int64_t n, SequenceSpec q, int64_t stride, T* out) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    if constexpr (std::is_integral_v<T>) {
      out[i * stride] = q.integral ? static_cast<T>(sequence_integer_at(q, i))
                                   : static_cast<T>(sequence_at(q, i));
    } else {
      out[i * stride] = convert<T>(sequence_at(q, i));
    }
  }
}

}  // namespace

const char* launch_sequence(int32_t dtype, const SequenceSpec& spec, int64_t stride, void* out,
                            gpuStream_t stream) {
  const char* result = kUnsupportedDtype;
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      result = launch_grid_stride(sequence_kernel<T>, spec.length, stream, spec, stride,
                                  static_cast<T*>(out));
    }
  });
  return result;
}

}  // namespace loom::gpu
