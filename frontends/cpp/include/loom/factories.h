// Tensor factories of the C++ API: zeros, ones, full, tensors from values, *_like, and
// the wrapped scalars that C++ numbers become in operators.
#pragma once

#include <initializer_list>
#include <optional>
#include <vector>

#include "loom/core/int_list.h"
#include "loom/core/scalar.h"
#include "loom/ops/tensor.h"

namespace loom {

// Where and how a new tensor lives: `TensorOptions().dtype(ScalarType::Int64)`.
struct TensorOptions {
  ScalarType dtype_ = ScalarType::Float32;
  Device device_ = Device{};
  // A cpu tensor in pinned host memory (Note [Pinned host memory]), as Tensor::pin_memory
  // makes: `empty({64, 784}, TensorOptions().pinned_memory(true))`. empty, zeros, ones
  // and full honour it; on another device it is refused.
  bool pinned_memory_ = false;
  TensorOptions dtype(ScalarType t) const {
    TensorOptions o = *this;
    o.dtype_ = t;
    return o;
  }
  TensorOptions device(Device d) const {
    TensorOptions o = *this;
    o.device_ = d;
    return o;
  }
  TensorOptions pinned_memory(bool pinned = true) const {
    TensorOptions o = *this;
    o.pinned_memory_ = pinned;
    return o;
  }
};

Tensor empty(IntList sizes, TensorOptions options = {});
Tensor zeros(IntList sizes, TensorOptions options = {});
Tensor ones(IntList sizes, TensorOptions options = {});
Tensor full(IntList sizes, const Scalar& value, TensorOptions options = {});
// [start, end) in steps of `step`. Without a dtype in `options`: int64 when every bound
// is an integer, else float32 (as torch.arange).
Tensor arange(const Scalar& end, std::optional<TensorOptions> options = std::nullopt);
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1,
              std::optional<TensorOptions> options = std::nullopt);
// `steps` values from start to end inclusive.
Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, TensorOptions options = {});
// The n x m identity (m = n when omitted).
Tensor eye(int64_t n, std::optional<int64_t> m = std::nullopt, TensorOptions options = {});
Tensor empty_like(const Tensor& t);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor full_like(const Tensor& t, const Scalar& value);
// A 0-dim tensor holding `value` (dtype: bool, int64 or float32 by the value's kind).
Tensor scalar_tensor(const Scalar& value, TensorOptions options);
// A 1-D CPU tensor of the values: float32 for floating values, int64 for integers.
Tensor tensor(std::initializer_list<double> values, TensorOptions options = {});
Tensor tensor(std::initializer_list<int64_t> values);
Tensor tensor(std::initializer_list<int> values);

}  // namespace loom
