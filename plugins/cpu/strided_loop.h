// Element-wise iteration over strided, broadcast tensors for the CPU kernels: computes
// the broadcast shape of the inputs and walks every output index with per-operand
// byte offsets.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "loom/sdk/plugin.hpp"

namespace loom::cpu {

// Broadcast shape of several shapes; throws "[op] shapes [..] and [..] cannot be broadcast".
std::vector<int64_t> broadcast_shape(std::span<const std::span<const int64_t>> shapes,
                                     const char* op);

// Calls body(ptrs) for every element of `shape`, where ptrs[i] points at operand i's
// element. Operands are broadcast to `shape` (stride 0 on stretched dims).
template <size_t N, typename Body>
void for_each_element(std::span<const int64_t> shape, const sdk::Tensor* const (&operands)[N],
                      Body&& body) {
  const size_t ndim = shape.size();
  int64_t numel = 1;
  for (int64_t s : shape) numel *= s;
  if (numel == 0) return;
  // byte strides per operand, aligned to the trailing dims of `shape`
  std::vector<int64_t> strides(N * ndim, 0);
  char* base[N];
  for (size_t i = 0; i < N; ++i) {
    const sdk::Tensor& t = *operands[i];
    int64_t item = t.view().dl.dtype.bits / 8;
    size_t lead = ndim - static_cast<size_t>(t.dim());
    for (size_t d = 0; d < static_cast<size_t>(t.dim()); ++d) {
      strides[i * ndim + lead + d] = t.sizes()[d] == 1 ? 0 : t.strides()[d] * item;
    }
    base[i] = t.template data<char>();
  }
  std::vector<int64_t> index(ndim, 0);
  char* ptrs[N];
  for (int64_t n = 0; n < numel; ++n) {
    for (size_t i = 0; i < N; ++i) {
      int64_t off = 0;
      for (size_t d = 0; d < ndim; ++d) off += index[d] * strides[i * ndim + d];
      ptrs[i] = base[i] + off;
    }
    body(ptrs);
    for (size_t d = ndim; d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
}

// "[2, 3]"
std::string shape_string(std::span<const int64_t> shape);
const char* dtype_name(LoomDType t);

}  // namespace loom::cpu
