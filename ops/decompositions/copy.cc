// Decompositions of the copy ops: clone, contiguous, to (dtype / device), and Core ATen
// IR's functional forms: fill.Scalar, copy, _to_copy, _local_scalar_dense.
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

// A new tensor like self, filled with value (fill_ on a copy of the layout).
Tensor fill_scalar(const Tensor& self, const Scalar& value) {
  Tensor out = empty_in_layout_of(self, self.dtype(), self.device());
  loom::fill_(out, value);
  return out;
}

// self's values replaced by src's (broadcast to self's shape, converted to its dtype).
Tensor copy_functional(const Tensor& self, const Tensor& src, bool non_blocking) {
  Tensor out = empty_in_layout_of(self, self.dtype(), self.device());
  loom::copy_(out, src, non_blocking);
  return out;
}

// A copy in other options: the dtype, device and memory format asked for (each
// defaulting to self's), always a new tensor.
Tensor to_copy(const Tensor& self, std::optional<ScalarType> dtype, std::optional<int64_t> layout,
               std::optional<Device> device, std::optional<bool> pin_memory, bool non_blocking,
               std::optional<int64_t> memory_format) {
  const char* op = "loom::_to_copy";
  if (layout && *layout != kStridedLayoutCode)
    fail(op, "expected layout None or torch.strided (7), found ", *layout);
  if (pin_memory && *pin_memory)
    fail(op, "pin_memory=True is not supported; use Tensor::pin_memory");
  Tensor out = empty_in_format(op, self.sizes(), memory_format, &self, dtype.value_or(self.dtype()),
                               device.value_or(self.device()));
  loom::copy_(out, self, non_blocking);
  return out;
}

// Tensor::item as an op: the one element as a number of the tensor's kind.
Scalar local_scalar_dense(const Tensor& self) {
  if (self.device().type == kMeta) {
    fail("loom::_local_scalar_dense", "a meta tensor has no value to read");
  }
  if (self.numel() != 1) {
    fail("loom::_local_scalar_dense", "expected a tensor of one element, found ",
         shape_to_string(self.sizes()), " (", self.numel(), " elements)");
  }
  Tensor cpu = self.device().type == kCPU ? self : self.to(Device{}, false);
  Tensor one = loom::contiguous(cpu.to(is_floating_point(self.dtype())    ? ScalarType::Float64
                                       : self.dtype() == ScalarType::Bool ? ScalarType::Bool
                                                                          : ScalarType::Int64));
  if (one.dtype() == ScalarType::Float64)
    return Scalar(*static_cast<const double*>(one.data_ptr()));
  if (one.dtype() == ScalarType::Bool) return Scalar(*static_cast<const bool*>(one.data_ptr()));
  return Scalar(*static_cast<const int64_t*>(one.data_ptr()));
}

constexpr DecompositionEntry kDecompositions[] = {
    {"loom::to.dtype", decomposition<&to_dtype>()},
    {"loom::to.device", decomposition<&to_device>()},
    {"loom::clone", decomposition<&clone>()},
    {"loom::contiguous", decomposition<&contiguous>()},
    {"loom::fill.Scalar", decomposition<&fill_scalar>()},
    {"loom::copy", decomposition<&copy_functional>()},
    {"loom::_to_copy", decomposition<&to_copy>()},
    {"loom::_local_scalar_dense", decomposition<&local_scalar_dense>()},
};

}  // namespace

std::span<const DecompositionEntry> copy_decompositions() {
  return kDecompositions;
}

}  // namespace loom::ops
