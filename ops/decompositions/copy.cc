// Decompositions of the copy ops: clone, contiguous, to (dtype / device).
#include "decomposition.h"
#include "loom/core/type_promotion.h"

namespace loom::ops {
namespace {

Tensor clone_contiguous(const Tensor& self) {
  Tensor out = empty(self.sizes(), self.dtype(), self.device());
  loom::copy_(out, self);
  return out;
}

Tensor contiguous(const Tensor& self) {
  return self.is_contiguous() ? self : clone_contiguous(self);
}

// A copy on `device` in `dtype`, or self when nothing changes and no copy is asked for.
Tensor to_device(const Tensor& self, Device device, std::optional<ScalarType> dtype, bool,
                 bool copy) {
  ScalarType target = dtype.value_or(self.dtype());
  if (!copy && target == self.dtype() && device == self.device()) return self;
  Tensor out = empty(self.sizes(), target, device);
  loom::copy_(out, self);
  return out;
}

Tensor to_dtype(const Tensor& self, ScalarType dtype, bool non_blocking, bool copy) {
  return to_device(self, self.device(), dtype, non_blocking, copy);
}

constexpr DecompositionEntry kDecompositions[] = {
    {"loom::to.dtype", decomposition<&to_dtype>()},
    {"loom::to.device", decomposition<&to_device>()},
    {"loom::clone", decomposition<&clone_contiguous>()},
    {"loom::contiguous", decomposition<&contiguous>()},
};

}  // namespace

std::span<const DecompositionEntry> copy_decompositions() {
  return kDecompositions;
}

}  // namespace loom::ops
