// Decompositions of the creation ops: eye, and the factories as ops (full, full_like,
// scalar_tensor, empty.memory_format, empty_strided) that graphs and calls by name use.
#include "loom/ops/creation.h"
#include "decomposition.h"
#include "loom/core/memory_format.h"
#include "loom/core/type_promotion.h"

namespace loom::ops {
namespace {

// Zeros with ones on the main diagonal (a view of out).
Tensor eye_out(int64_t n, int64_t m, const Tensor& out) {
  if (n < 0 || m < 0) fail("loom::eye", "expected non-negative sizes, found n=", n, " m=", m);
  if (out.dim() != 2 || out.sizes()[0] != n || out.sizes()[1] != m) {
    fail("loom::eye", "expected out of shape [", n, ", ", m, "], found ",
         shape_to_string(out.sizes()));
  }
  if (out.numel() == 0) return out;
  loom::fill_(out, 0);
  loom::fill_(out.diagonal(), 1);
  return out;
}

// The checks every factory op makes of its tensor options.
void check_options(const char* op, std::optional<int64_t> layout, std::optional<bool> pin_memory) {
  if (layout && *layout != kStridedLayoutCode) {
    fail(op, "expected layout None or torch.strided (7), found ", *layout,
         " (loom has dense tensors only)");
  }
  if (pin_memory && *pin_memory) {
    fail(op,
         "pin_memory=True is not supported here; allocate with loom::empty(sizes, "
         "TensorOptions().pinned_memory(true))");
  }
}

void check_sizes(const char* op, const IntList& size) {
  for (int64_t s : size.span()) {
    if (s < 0) fail(op, "expected non-negative sizes, found ", shape_to_string(size.span()));
  }
}

// full's dtype when none is given: that of the fill value, as PyTorch infers it.
ScalarType dtype_of_value(const Scalar& value) {
  if (value.is_bool()) return ScalarType::Bool;
  if (value.is_floating_point()) return ScalarType::Float32;
  return ScalarType::Int64;
}

Tensor full(const IntList& size, const Scalar& fill_value, std::optional<ScalarType> dtype,
            std::optional<int64_t> layout, std::optional<Device> device,
            std::optional<bool> pin_memory) {
  check_options("loom::full", layout, pin_memory);
  check_sizes("loom::full", size);
  Tensor out =
      empty(size.span(), dtype.value_or(dtype_of_value(fill_value)), device.value_or(Device{}));
  loom::fill_(out, fill_value);
  return out;
}

Tensor full_like(const Tensor& self, const Scalar& fill_value, std::optional<ScalarType> dtype,
                 std::optional<int64_t> layout, std::optional<Device> device,
                 std::optional<bool> pin_memory, std::optional<int64_t> memory_format) {
  const char* op = "loom::full_like";
  check_options(op, layout, pin_memory);
  Tensor out = empty_in_format(op, self.sizes(), memory_format, &self, dtype.value_or(self.dtype()),
                               device.value_or(self.device()));
  loom::fill_(out, fill_value);
  return out;
}

Tensor scalar_tensor(const Scalar& s, std::optional<ScalarType> dtype,
                     std::optional<int64_t> layout, std::optional<Device> device,
                     std::optional<bool> pin_memory) {
  check_options("loom::scalar_tensor", layout, pin_memory);
  Tensor out = empty({}, dtype.value_or(ScalarType::Float32), device.value_or(Device{}));
  loom::fill_(out, s);
  return out;
}

Tensor empty_memory_format(const IntList& size, std::optional<ScalarType> dtype,
                           std::optional<int64_t> layout, std::optional<Device> device,
                           std::optional<bool> pin_memory, std::optional<int64_t> memory_format) {
  const char* op = "loom::empty.memory_format";
  check_options(op, layout, pin_memory);
  check_sizes(op, size);
  return empty_in_format(op, size.span(), memory_format, nullptr,
                         dtype.value_or(ScalarType::Float32), device.value_or(Device{}));
}

Tensor empty_strided_op(const IntList& size, const IntList& stride, std::optional<ScalarType> dtype,
                        std::optional<int64_t> layout, std::optional<Device> device,
                        std::optional<bool> pin_memory) {
  const char* op = "loom::empty_strided";
  check_options(op, layout, pin_memory);
  check_sizes(op, size);
  if (size.size() != stride.size()) {
    fail(op, "expected as many strides as sizes, found ", size.size(), " sizes and ", stride.size(),
         " strides");
  }
  for (int64_t s : stride.span()) {
    if (s < 0) fail(op, "expected non-negative strides, found ", shape_to_string(stride.span()));
  }
  return empty_strided(size.span(), stride.span(), dtype.value_or(ScalarType::Float32),
                       device.value_or(Device{}));
}

// arange allocating its result: int64 when start, end and step are all integers, else
// float32, unless dtype says otherwise (loom::arange in loom/factories.h does the same).
Tensor arange_start_step(const Scalar& start, const Scalar& end, const Scalar& step,
                         std::optional<ScalarType> dtype, std::optional<int64_t> layout,
                         std::optional<Device> device, std::optional<bool> pin_memory) {
  check_options("loom::arange.start_step", layout, pin_memory);
  ScalarType type = dtype.value_or(arange_is_integral(start, end, step) ? ScalarType::Int64
                                                                        : ScalarType::Float32);
  int64_t length = arange_length(start, end, step);
  Tensor out = empty(IntArrayRef(&length, 1), type, device.value_or(Device{}));
  return loom::arange_out(out, start, end, step);
}

constexpr DecompositionEntry kDecompositions[] = {
    {"loom::eye.m_out", decomposition<&eye_out>()},
    {"loom::arange.start_step", decomposition<&arange_start_step>()},
    {"loom::full", decomposition<&full>()},
    {"loom::full_like", decomposition<&full_like>()},
    {"loom::scalar_tensor", decomposition<&scalar_tensor>()},
    {"loom::empty.memory_format", decomposition<&empty_memory_format>()},
    {"loom::empty_strided", decomposition<&empty_strided_op>()},
};

}  // namespace

std::span<const DecompositionEntry> creation_decompositions() {
  return kDecompositions;
}

}  // namespace loom::ops
