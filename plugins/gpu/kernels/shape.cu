// The GPU kernel of the shape family that is not a copy (Note [Shape ops as copies] in
// host_kernels/shape_plan.h): tril and triu keep an element or write zero bits, so every
// dtype moves as an unsigned integer of its size.
#include <cstdint>

#include "elementwise_launcher.cuh"
#include "launch.h"
#include "shape_math.h"

namespace loom::gpu {
namespace {

template <typename Bits>
__global__ void triangle_kernel(int64_t n, StridedSpace<2> space, Bits* out, const Bits* in,
                                bool lower, int64_t rows, int64_t cols, int64_t diagonal) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t o[2];
    space.offsets(i, o);
    out[o[0]] = triangle_keeps(lower, i, rows, cols, diagonal) ? in[o[1]] : Bits(0);
  }
}

template <typename Bits>
const char* launch_triangle_bits(bool lower, const StridedSpace<2>& space, int64_t rows,
                                 int64_t cols, int64_t diagonal, void* out, const void* in,
                                 gpuStream_t stream) {
  return launch_grid_stride(triangle_kernel<Bits>, space.numel(), stream, space,
                            static_cast<Bits*>(out), static_cast<const Bits*>(in), lower, rows,
                            cols, diagonal);
}

}  // namespace

const char* launch_triangle(bool lower, int32_t element_size, const StridedSpace<2>& space,
                            int64_t rows, int64_t cols, int64_t diagonal, void* out, const void* in,
                            gpuStream_t stream) {
  switch (element_size) {
    case 1:
      return launch_triangle_bits<uint8_t>(lower, space, rows, cols, diagonal, out, in, stream);
    case 2:
      return launch_triangle_bits<uint16_t>(lower, space, rows, cols, diagonal, out, in, stream);
    case 4:
      return launch_triangle_bits<uint32_t>(lower, space, rows, cols, diagonal, out, in, stream);
    case 8:
      return launch_triangle_bits<uint64_t>(lower, space, rows, cols, diagonal, out, in, stream);
    default:
      return kUnsupportedDtype;
  }
}

}  // namespace loom::gpu
