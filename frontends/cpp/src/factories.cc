// Tensor factories: allocation through the core, filling through the fill_ op (so every
// device's plugin fills its own memory).
#include "loom/factories.h"

#include "loom/core/device_runtime.h"
#include "loom/core/error.h"
#include "loom/core/read_section.h"
#include "loom/ops/creation.h"
#include "loom/ops/generated/ops.h"

namespace loom {

Tensor empty(IntList sizes, TensorOptions options) {
  if (!options.pinned_memory_) return empty(sizes.span(), options.dtype_, options.device_);
  LOOM_CHECK(options.device_.type == kCPU, "empty", "expected the cpu device for pinned memory, ",
             "found ", options.device_.to_string(), " (only cpu tensors can be pinned)");
  ReadSection section;  // the plugin stays loaded until the storage holds it
  return empty_strided(sizes.span(), contiguous_strides(sizes.span()), options.dtype_,
                       options.device_, pinned_host_allocator(-1, "empty"));
}

Tensor full(IntList sizes, const Scalar& value, TensorOptions options) {
  Tensor t = empty(sizes, options);
  if (t.numel() > 0) fill_(t, value);
  return t;
}

Tensor zeros(IntList sizes, TensorOptions options) {
  return full(sizes, 0, options);
}
Tensor ones(IntList sizes, TensorOptions options) {
  return full(sizes, 1, options);
}

Tensor arange(const Scalar& end, std::optional<TensorOptions> options) {
  return arange(0, end, 1, options);
}

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step,
              std::optional<TensorOptions> options) {
  TensorOptions o = options.value_or(TensorOptions().dtype(
      ops::arange_is_integral(start, end, step) ? ScalarType::Int64 : ScalarType::Float32));
  return arange_out(empty({ops::arange_length(start, end, step)}, o), start, end, step);
}

Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, TensorOptions options) {
  ops::check_linspace_steps(steps);
  return linspace_out(empty({steps}, options), start, end, steps);
}

Tensor eye(int64_t n, std::optional<int64_t> m, TensorOptions options) {
  const int64_t cols = m.value_or(n);
  LOOM_CHECK(n >= 0 && cols >= 0, "eye", "expected non-negative sizes, found n=", n, " m=", cols);
  return eye_out(empty({n, cols}, options), n, cols);
}

Tensor empty_like(const Tensor& t) {
  return empty(t.sizes(), t.dtype(), t.device());
}
Tensor full_like(const Tensor& t, const Scalar& value) {
  Tensor out = empty_like(t);
  if (out.numel() > 0) fill_(out, value);
  return out;
}
Tensor zeros_like(const Tensor& t) {
  return full_like(t, 0);
}
Tensor ones_like(const Tensor& t) {
  return full_like(t, 1);
}

Tensor scalar_tensor(const Scalar& value, TensorOptions options) {
  return full({}, value, options);
}

Tensor tensor(std::initializer_list<double> values, TensorOptions options) {
  int64_t n = static_cast<int64_t>(values.size());
  Tensor host = empty(IntArrayRef(&n, 1), ScalarType::Float64);
  std::copy(values.begin(), values.end(), host.data<double>());
  if (options.dtype_ == ScalarType::Float64 && options.device_.type == kCPU) return host;
  Tensor out = empty(IntArrayRef(&n, 1), options.dtype_, options.device_);
  copy_(out, host);
  return out;
}

Tensor tensor(std::initializer_list<int64_t> values) {
  int64_t n = static_cast<int64_t>(values.size());
  Tensor t = empty(IntArrayRef(&n, 1), ScalarType::Int64);
  std::copy(values.begin(), values.end(), t.data<int64_t>());
  return t;
}

Tensor tensor(std::initializer_list<int> values) {
  int64_t n = static_cast<int64_t>(values.size());
  Tensor t = empty(IntArrayRef(&n, 1), ScalarType::Int64);
  std::copy(values.begin(), values.end(), t.data<int64_t>());
  return t;
}

}  // namespace loom
