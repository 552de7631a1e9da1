// Tensor::contiguous(MemoryFormat): a tensor's data made dense in a memory format
// (Note [Memory formats] in loom/core/memory_format.h).
#include "loom/core/error.h"
#include "loom/ops/generated/ops.h"
#include "loom/ops/tensor.h"

namespace loom {

Tensor Tensor::contiguous(MemoryFormat format) const {
  if (is_contiguous(format)) return *this;
  if (format == MemoryFormat::Contiguous) return contiguous();
  if (dim() != 4) {
    fail("contiguous", "expected a 4-D [N, C, H, W] tensor for ", memory_format_name(format),
         ", found ", dim(), " dims");
  }
  // NHWC made row-major, seen again as NCHW: its strides are the channels-last ones
  return permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
}

}  // namespace loom
