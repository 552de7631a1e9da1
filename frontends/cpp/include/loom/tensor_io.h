// Reading tensors out: item<T>() for one element, and readable printing in PyTorch's
// style (`tensor([[1., 2.], [3., 4.]])`), copying from devices to the host as needed.
#pragma once

#include <ostream>
#include <string>

#include "loom/ops/tensor.h"

namespace loom {

// The tensor's single element as a double (throws unless numel() == 1).
double item_as_double(const Tensor& t);
int64_t item_as_int(const Tensor& t);

template <typename T>
T Tensor::item() const {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(item_as_double(*this));
  } else if constexpr (std::is_same_v<T, bool>) {
    return item_as_double(*this) != 0.0;
  } else {
    return static_cast<T>(item_as_int(*this));
  }
}

// A host copy of t (the same tensor when it is already on the CPU).
Tensor to_cpu(const Tensor& t);

std::string to_string(const Tensor& t);
std::ostream& operator<<(std::ostream& out, const Tensor& t);

}  // namespace loom
