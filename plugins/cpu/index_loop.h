// Element addressing for the shape and indexing kernels (cat, flip, gather, scatter,
// sort, ...): multi-index iteration in row-major order, byte offsets of strided tensors,
// index tensors read as int64 with range checks, and dtype conversion into a
// contiguous temporary.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "loom/sdk/plugin.hpp"

namespace loom::cpu {

// A tensor seen through byte strides; a 0-dim tensor reads as one element of dims {1}.
struct StridedBytes {
  explicit StridedBytes(const sdk::Tensor& t);
  char* at(const int64_t* index) const {
    int64_t off = 0;
    for (size_t d = 0; d < sizes.size(); ++d) off += index[d] * strides[d];
    return base + off;
  }
  int64_t ndim() const { return static_cast<int64_t>(sizes.size()); }
  char* base;
  int64_t item;                  // bytes per element
  std::vector<int64_t> sizes;    // at least one dim
  std::vector<int64_t> strides;  // in bytes
};

// Calls body(index) for every multi-index of `shape` in row-major order (none when a size
// is 0; once, with an empty index, for an empty shape).
template <typename Body>
void for_each_index(std::span<const int64_t> shape, Body&& body) {
  for (int64_t s : shape) {
    if (s == 0) return;
  }
  std::vector<int64_t> index(shape.size(), 0);
  for (;;) {
    body(static_cast<const int64_t*>(index.data()));
    size_t d = shape.size();
    for (; d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
    if (d == static_cast<size_t>(-1)) return;
  }
}

// The sizes of `t`, with {1} for a 0-dim tensor.
std::vector<int64_t> sizes_at_least_1d(const sdk::Tensor& t);

// Copies every element of the contiguous `out` from `src` at the index that
// map(out_index, src_index) writes (both at least 1-D, see StridedBytes).
template <typename Map>
void copy_mapped(const sdk::Tensor& src, const sdk::Tensor& out, Map&& map) {
  StridedBytes s(src);
  char* dst = out.data<char>();
  std::vector<int64_t> src_index(s.sizes.size());
  for_each_index(sizes_at_least_1d(out), [&](const int64_t* index) {
    map(index, src_index.data());
    std::memcpy(dst, s.at(src_index.data()), static_cast<size_t>(s.item));
    dst += s.item;
  });
}

// The elements of an int64 (or int32) index tensor in row-major order.
std::vector<int64_t> read_indices(const sdk::Tensor& index, const char* op);

// Throws "[op] index 5 is out of range for dim 0 of size 3" unless 0 <= i < size (or,
// with allow_negative, -size <= i < 0, wrapped).
int64_t checked_index(int64_t i, int64_t size, int64_t dim, const char* op,
                      bool allow_negative = false);

// `t` itself when it has `dtype`, else a contiguous copy converted to `dtype`.
sdk::Tensor converted(const sdk::Tensor& t, LoomDType dtype, const char* op);

// Wraps a possibly negative dim into [0, max(ndim, 1)).
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);

}  // namespace loom::cpu
