// Decompositions of the copy ops: clone, contiguous, to (dtype / device).
#include "decomposition.h"
#include "loom/core/memory_format.h"
#include "loom/core/type_promotion.h"

namespace loom::ops {
namespace {

// A new tensor shaped like self in self's layout (Note [Layouts of new results]).
Tensor empty_in_layout_of(const Tensor& self, ScalarType dtype, Device device) {
  const DimVector strides = preserved_strides(*self.impl());
  if (strides.empty()) return empty(self.sizes(), dtype, device);
  return empty_strided(self.sizes(), strides, dtype, device);
}

Tensor clone(const Tensor& self) {
  Tensor out = empty_in_layout_of(self, self.dtype(), self.device());
  loom::copy_(out, self);
  return out;
}

Tensor contiguous(const Tensor& self) {
  if (self.is_contiguous()) return self;
  Tensor out = empty(self.sizes(), self.dtype(), self.device());
  loom::copy_(out, self);
  return out;
}

// A copy on `device` in `dtype`, or self when nothing changes and no copy is asked for.
Tensor to_device(const Tensor& self, Device device, std::optional<ScalarType> dtype,
                 bool non_blocking, bool copy) {
  ScalarType target = dtype.value_or(self.dtype());
  if (!copy && target == self.dtype() && device == self.device()) return self;
  Tensor out = empty_in_layout_of(self, target, device);
  loom::copy_(out, self, non_blocking);
  return out;
}

Tensor to_dtype(const Tensor& self, ScalarType dtype, bool non_blocking, bool copy) {
  return to_device(self, self.device(), dtype, non_blocking, copy);
}

constexpr DecompositionEntry kDecompositions[] = {
    {"loom::to.dtype", decomposition<&to_dtype>()},
    {"loom::to.device", decomposition<&to_device>()},
    {"loom::clone", decomposition<&clone>()},
    {"loom::contiguous", decomposition<&contiguous>()},
};

}  // namespace

std::span<const DecompositionEntry> copy_decompositions() {
  return kDecompositions;
}

}  // namespace loom::ops
