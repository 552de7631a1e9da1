// The copy family on GPU tensors: copy_ (dtype conversion, any strides, a source that
// broadcasts) and fill_.
#include <string>
#include <vector>

#include "../kernels/launch.h"
#include "loom/sdk/plugin.hpp"
#include "op_support.h"

namespace loom::gpu {

namespace {

using sdk::DispatchContext;
using sdk::Scalar;
using sdk::Tensor;

Tensor copy_(const DispatchContext& ctx, const Tensor& self, const Tensor& src, bool) {
  prepare("copy_", self, {&src});
  // src broadcasts to self's shape: missing leading dims and size-1 dims get stride 0.
  const int64_t nd = self.dim(), src_nd = src.dim();
  if (src_nd > nd) {
    throw sdk::Error("[copy_] source has " + std::to_string(src_nd) +
                     " dims, more than the destination's " + std::to_string(nd));
  }
  std::vector<int64_t> strides(static_cast<size_t>(nd), 0);
  for (int64_t d = 0; d < src_nd; ++d) {
    const int64_t size = src.sizes()[d], target = self.sizes()[d + nd - src_nd];
    if (size != target && size != 1) {
      throw sdk::Error("[copy_] source dim " + std::to_string(d) + " of size " +
                       std::to_string(size) + " cannot be broadcast to size " +
                       std::to_string(target));
    }
    strides[d + nd - src_nd] = size == 1 ? 0 : src.strides()[d];
  }
  const int64_t* stride_lists[2] = {self.strides().data(), strides.data()};
  StridedSpace<2> space;
  if (!make_strided_space<2>(self.sizes().data(), static_cast<int>(nd), stride_lists, &space)) {
    throw sdk::Error("[copy_] too many dims for the " LOOM_GPU_PLATFORM_NAME " kernel");
  }
  check_launch(
      launch_copy(self.dtype(), src.dtype(), space, self.data(), src.data(), stream_of(ctx)),
      "copy_");
  return self;
}

Tensor fill_(const DispatchContext& ctx, const Tensor& self, Scalar value) {
  prepare("fill_", self, {});
  const Tensor* operands[1] = {&self};
  check_launch(launch_fill(self.dtype(), value.is_floating_point(), value.d, value.i,
                           space_of("fill_", self, operands), self.data(), stream_of(ctx)),
               "fill_");
  return self;
}

}  // namespace

void register_copy_ops(sdk::Registrar& r, uint32_t key) {
  r.impl<&copy_>("loom::copy_", key);
  r.impl<&fill_>("loom::fill_.Scalar", key);
}

}  // namespace loom::gpu
