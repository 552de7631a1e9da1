// Element addressing for the shape and indexing kernels (cat, flip, gather, scatter,
// sort, ...): multi-index iteration in row-major order (whole, or one chunk of a
// parallel loop), byte offsets of strided tensors, index tensors read as int64 with
// range checks, and dtype conversion into a contiguous temporary.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "loom/sdk/plugin.hpp"
#include "parallel.h"

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

// Calls body(index, linear) for the row-major positions linear in [begin, end) of
// `shape` (no size 0), index being linear's multi-index: one chunk of a parallel loop.
template <typename Body>
void for_each_index_in(std::span<const int64_t> shape, int64_t begin, int64_t end, Body&& body) {
  if (begin >= end) return;
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t rest = begin, d = static_cast<int64_t>(shape.size()); d-- > 0;) {
    index[d] = rest % shape[d];
    rest /= shape[d];
  }
  for (int64_t linear = begin; linear < end; ++linear) {
    body(static_cast<const int64_t*>(index.data()), linear);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
}

// The number of positions of `shape` (1 for an empty shape).
inline int64_t count_of(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

// Copies one element of `item` bytes (fixed-size copies for the usual sizes).
inline void copy_element(char* dst, const char* src, int64_t item) {
  switch (item) {
    case 1:
      *dst = *src;
      return;
    case 2:
      std::memcpy(dst, src, 2);
      return;
    case 4:
      std::memcpy(dst, src, 4);
      return;
    case 8:
      std::memcpy(dst, src, 8);
      return;
    default:
      std::memcpy(dst, src, static_cast<size_t>(item));
  }
}

// Copies the elements of `shape` from `src` to `dst` (element strides aligned with shape,
// elements of `item` bytes) on the parallel, vectorised loop of copy_: moves whole runs
// where cat, index_select and friends would otherwise move one element at a time.
void copy_strided(std::span<const int64_t> shape, char* dst, const int64_t* dst_strides,
                  const char* src, const int64_t* src_strides, int64_t item);

// The sizes of `t`, with {1} for a 0-dim tensor.
std::vector<int64_t> sizes_at_least_1d(const sdk::Tensor& t);

// Copies every element of the contiguous `out` from `src` at the index that
// map(out_index, src_index) writes (both at least 1-D, see StridedBytes); the elements
// are split over the thread pool, so map may be called concurrently.
template <typename Map>
void copy_mapped(const sdk::Tensor& src, const sdk::Tensor& out, const Map& map) {
  const StridedBytes s(src);
  char* const dst = out.data<char>();
  const std::vector<int64_t> shape = sizes_at_least_1d(out);
  constexpr int64_t kWorkPerElement = 8;  // index arithmetic and one small copy
  parallel_for(0, out.numel(), grain_for(kWorkPerElement), [&](int64_t begin, int64_t end) {
    std::vector<int64_t> src_index(s.sizes.size());
    for_each_index_in(shape, begin, end, [&](const int64_t* index, int64_t linear) {
      map(index, src_index.data());
      copy_element(dst + linear * s.item, s.at(src_index.data()), s.item);
    });
  });
}

// The elements of an int64 (or int32) index tensor in row-major order.
std::vector<int64_t> read_indices(const sdk::Tensor& index, const char* op);

// The elements of an int64 (or int32) index tensor in row-major order: the tensor's own
// memory when it is a contiguous int64 tensor, else a copy kept in `storage`.
std::span<const int64_t> index_values(const sdk::Tensor& index, const char* op,
                                      std::vector<int64_t>& storage);

// Whether any of values[0, count) lies outside [0, size): one branch-free pass, in the
// ISA clones (Note [ISA dispatch]), on the calling thread.
bool any_index_outside(const int64_t* values, int64_t count, int64_t size);

// Throws checked_index's error for the first of `values` outside [0, size), if any.
void check_each_index(std::span<const int64_t> values, int64_t size, int64_t dim, const char* op);

// index_values, each checked to lie in [0, size) (checked_index's error for the first
// that does not); the check is split over the thread pool.
std::span<const int64_t> checked_indices(const sdk::Tensor& index, int64_t size, int64_t dim,
                                         const char* op, std::vector<int64_t>& storage);

// Throws "[op] index 5 is out of range for dim 0 of size 3" unless 0 <= i < size (or,
// with allow_negative, -size <= i < 0, wrapped).
int64_t checked_index(int64_t i, int64_t size, int64_t dim, const char* op,
                      bool allow_negative = false);

// `t` itself when it has `dtype`, else a contiguous copy converted to `dtype`.
sdk::Tensor converted(const sdk::Tensor& t, LoomDType dtype, const char* op);

// Wraps a possibly negative dim into [0, max(ndim, 1)).
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);

}  // namespace loom::cpu
