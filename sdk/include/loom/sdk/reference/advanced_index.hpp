// Where index.Tensor's result takes its dims from (Note [Advanced indexing]), for every
// backend: given self's sizes and the shape of each dim's index (none for a dim not
// indexed), the broadcast shape B of the indices and, per result dim, the dim of self it
// walks or -1 for a dim of B.
//
// Note [Advanced indexing]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// index.Tensor(self, indices) follows PyTorch: entry i of `indices` indexes dim i of self
// (None keeps the dim whole). A bool index of k dims stands for the k int64 indices of its
// nonzero elements and covers k dims of self (its shape must match theirs). The int64
// indices broadcast together to a shape B. The result's shape is self's with the indexed
// dims replaced by B: in their place when the indexed dims are adjacent, else B first.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "loom/sdk/shape.hpp"

namespace loom::sdk {

// A bool (or uint8) mask given as index `i` and covering self's dims from `first`: at
// least one dim, and its shape self's there.
inline void check_index_mask(const char* op, size_t i, int64_t first,
                             std::span<const int64_t> mask_sizes,
                             std::span<const int64_t> self_sizes) {
  if (mask_sizes.empty()) {
    throw Error(std::string("[") + op + "] expected a mask with at least one dim, " +
                "found a 0-dim mask for index " + std::to_string(i));
  }
  for (size_t d = 0; d < mask_sizes.size(); ++d) {
    const size_t at = static_cast<size_t>(first) + d;
    if (at >= self_sizes.size() || mask_sizes[d] != self_sizes[at]) {
      throw Error(std::string("[") + op + "] the mask of shape " + shape_string(mask_sizes) +
                  " (index " + std::to_string(i) + ") does not match self's shape " +
                  shape_string(self_sizes) + " from dim " + std::to_string(first));
    }
  }
}

struct AdvancedIndexLayout {
  std::vector<int64_t> indexed;          // the dims of self with an index, in order
  std::vector<int64_t> broadcast_shape;  // B
  int64_t broadcast_at = 0;              // the result dim where B's dims start
  std::vector<int64_t> out_shape;
  std::vector<int64_t> source_dim;  // per result dim: self's dim, or -1 for a dim of B
};

// index_shapes[d]: the shape of dim d's index, or nullptr (at most one entry per dim of
// self; missing ones are None). `indexed` is empty when no dim has an index (the result is
// a copy of self).
inline AdvancedIndexLayout advanced_index_layout(
    std::span<const int64_t> self_sizes, std::span<const std::vector<int64_t>* const> index_shapes,
    const char* op) {
  if (index_shapes.size() > self_sizes.size()) {
    throw Error(std::string("[") + op + "] too many indices for a tensor of " +
                std::to_string(self_sizes.size()) + " dims: found " +
                std::to_string(index_shapes.size()));
  }
  AdvancedIndexLayout l;
  std::vector<std::span<const int64_t>> shapes;
  for (size_t d = 0; d < index_shapes.size(); ++d) {
    if (index_shapes[d] == nullptr) continue;
    shapes.push_back(*index_shapes[d]);
    l.indexed.push_back(static_cast<int64_t>(d));
  }
  if (l.indexed.empty()) return l;
  l.broadcast_shape = broadcast_shape(shapes, op);
  const bool adjacent =
      l.indexed.back() - l.indexed.front() + 1 == static_cast<int64_t>(l.indexed.size());
  l.broadcast_at = adjacent ? l.indexed.front() : 0;
  auto add_broadcast_dims = [&] {
    for (int64_t s : l.broadcast_shape) {
      l.out_shape.push_back(s);
      l.source_dim.push_back(-1);
    }
  };
  if (!adjacent) add_broadcast_dims();
  for (size_t d = 0; d < self_sizes.size(); ++d) {
    if (adjacent && static_cast<int64_t>(d) == l.indexed.front()) add_broadcast_dims();
    if (d < index_shapes.size() && index_shapes[d] != nullptr) continue;
    l.out_shape.push_back(self_sizes[d]);
    l.source_dim.push_back(static_cast<int64_t>(d));
  }
  return l;
}

}  // namespace loom::sdk
