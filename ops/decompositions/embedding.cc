// Decompositions of the embedding family: embedding_bag (sums, means or maxima of bags of
// embedding rows; _embedding_bag, Core ATen IR's spelling) and embedding's weight gradient
// embedding_dense_backward.
#include <algorithm>
#include <vector>

#include "checks/argument_check.h"
#include "decomposition.h"
#include "loom/core/type_promotion.h"

namespace loom::ops {
namespace {

enum BagMode : int64_t { kSum = 0, kMean = 1, kMax = 2 };

// The int64 values of a 1-D integer tensor, on the host.
std::vector<int64_t> host_ints(const Tensor& t) {
  Tensor host = loom::to(t, Device{kCPU, -1}, ScalarType::Int64, false, true).contiguous();
  const int64_t* p = host.data<int64_t>();
  return std::vector<int64_t>(p, p + host.numel());
}

Tensor int64_tensor(const std::vector<int64_t>& values, Device device) {
  Tensor t = empty(std::vector<int64_t>{static_cast<int64_t>(values.size())}, ScalarType::Int64,
                   Device{kCPU, -1});
  std::copy(values.begin(), values.end(), t.data<int64_t>());
  return device.type == kCPU ? t : loom::to(t, device);
}

// Note [embedding_bag]
// ~~~~~~~~~~~~~~~~~~~~
// Bag b holds indices[offsets[b] : offsets[b + 1]], and the last bag runs to the end of
// the indices, also with include_last_offset (where offsets has one entry more than there
// are bags, and PyTorch does not read it as the end either). Indices
// equal to padding_idx are left out of their bag. The rows are gathered with one
// index_select; sums (and means, divided by the bag's size) are one scatter_add into the
// [bags, dim] result by each index's bag (offset2bag); maxima take max.dim per bag. An
// empty bag gives zeros, as in PyTorch. Returns PyTorch's four tensors: the result,
// offset2bag, bag_size (the indices each bag counts; PyTorch's CPU kernel leaves it zero
// in sum mode) and max_indices (the weight row of each maximum, [bags, dim], in max mode;
// the bag sizes otherwise, as in PyTorch's mean mode). The offsets, which the op library
// checked (first 0, non-decreasing, within the indices), are read on the host; meta
// tensors get the shapes only.
std::tuple<Tensor, Tensor, Tensor, Tensor> embedding_bag(
    const Tensor& weight, const Tensor& indices, const Tensor& offsets, bool scale_grad_by_freq,
    int64_t mode, bool sparse, const std::optional<Tensor>& per_sample_weights,
    bool include_last_offset, std::optional<int64_t> padding_idx) {
  // The op library checked the arguments (Note [Argument checks]); the offsets are checked
  // again below, as a call that decomposes above the Structured key skipped the check.
  const char* op = "loom::embedding_bag";
  const int64_t num_rows = weight.size(0), dim = weight.size(1), n = indices.size(0);
  const int64_t bags = offsets.size(0) - (include_last_offset ? 1 : 0);
  const Device device = weight.device();
  if (device.type == kMeta) {
    return {empty(std::vector<int64_t>{bags, dim}, weight.dtype(), device),
            empty(std::vector<int64_t>{n}, ScalarType::Int64, device),
            empty(std::vector<int64_t>{bags}, ScalarType::Int64, device),
            empty(mode == kMax ? std::vector<int64_t>{bags, dim} : std::vector<int64_t>{bags},
                  ScalarType::Int64, device)};
  }
  std::vector<int64_t> starts = host_ints(offsets);
  std::vector<int64_t> ids = host_ints(indices);
  check_bag_offsets(op, starts, n);  // the loops below rely on them
  for (int64_t i : ids) {
    if (i < 0 || i >= num_rows) {
      fail(op, "index ", i, " is out of range for a weight of ", num_rows, " rows");
    }
  }
  const int64_t pad = padding_idx.value_or(-1) < 0 && padding_idx ? *padding_idx + num_rows
                                                                  : padding_idx.value_or(-1);
  // offset2bag, bag sizes and the positions that count (not padding_idx).
  std::vector<int64_t> offset2bag(static_cast<size_t>(n), 0),
      bag_size(static_cast<size_t>(bags), 0);
  std::vector<int64_t> kept_positions;
  for (int64_t b = 0; b < bags; ++b) {
    const int64_t end = b + 1 < bags ? starts[b + 1] : n;
    for (int64_t i = starts[b]; i < end; ++i) {
      offset2bag[static_cast<size_t>(i)] = b;
      if (ids[static_cast<size_t>(i)] == pad) continue;
      ++bag_size[static_cast<size_t>(b)];
      kept_positions.push_back(i);
    }
  }
  Tensor out = zeros_of({bags, dim}, weight.dtype(), device);
  Tensor offset2bag_t = int64_tensor(offset2bag, device);
  Tensor bag_size_t = int64_tensor(bag_size, device);
  Tensor max_indices =
      mode == kMax ? zeros_of({bags, dim}, ScalarType::Int64, device) : loom::clone(bag_size_t);
  const bool all_kept = static_cast<int64_t>(kept_positions.size()) == n;
  Tensor kept = all_kept ? Tensor() : int64_tensor(kept_positions, device);
  Tensor kept_indices = all_kept ? indices : loom::index_select(indices, 0, kept);
  Tensor kept_bags = all_kept ? offset2bag_t : loom::index_select(offset2bag_t, 0, kept);
  if (kept_indices.numel() == 0 || bags == 0) {
    return {out, offset2bag_t, bag_size_t, max_indices};
  }
  Tensor rows = loom::index_select(weight, 0, kept_indices);
  if (mode == kMax) {
    Tensor row_ids = cast(kept_indices, ScalarType::Int64);
    int64_t first = 0;
    for (int64_t b = 0; b < bags; ++b) {
      const int64_t size = bag_size[static_cast<size_t>(b)];
      if (size == 0) continue;
      auto [values, where] = loom::max(rows.narrow(0, first, size), 0, false);
      loom::copy_(out.select(0, b), values);
      loom::copy_(max_indices.select(0, b),
                  loom::index_select(row_ids.narrow(0, first, size), 0, where));
      first += size;
    }
    return {out, offset2bag_t, bag_size_t, max_indices};
  }
  if (per_sample_weights) {
    Tensor w = all_kept ? *per_sample_weights : loom::index_select(*per_sample_weights, 0, kept);
    rows = loom::mul(rows, w.unsqueeze(1));
  }
  loom::scatter_add_(out, 0, kept_bags.unsqueeze(1).expand({kept_bags.size(0), dim}), rows);
  if (mode == kMean) {
    Tensor divisor = loom::clamp_min(cast(bag_size_t, weight.dtype()), Scalar(1.0));
    out = loom::div(out, divisor.unsqueeze(1));
  }
  return {out, offset2bag_t, bag_size_t, max_indices};
}

// Core ATen IR's spelling, whose padding_idx -1 means none.
std::tuple<Tensor, Tensor, Tensor, Tensor> embedding_bag_core(
    const Tensor& weight, const Tensor& indices, const Tensor& offsets, bool scale_grad_by_freq,
    int64_t mode, bool sparse, const std::optional<Tensor>& per_sample_weights,
    bool include_last_offset, int64_t padding_idx) {
  if (padding_idx < -1) {
    fail("loom::_embedding_bag", "expected padding_idx -1 (none) or a row index, found ",
         padding_idx);
  }
  std::optional<int64_t> pad;
  if (padding_idx >= 0) pad = padding_idx;
  return loom::embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
                             per_sample_weights, include_last_offset, pad);
}

// The weight gradient of embedding: each row of grad_output added into the row its index
// names, none into padding_idx's row, each divided by its index's count when
// scale_grad_by_freq.
Tensor embedding_dense_backward(const Tensor& grad_output, const Tensor& indices,
                                int64_t num_weights, int64_t padding_idx, bool scale_grad_by_freq) {
  const char* op = "loom::embedding_dense_backward";
  if (!is_integral(indices.dtype(), false)) {
    fail(op, "expected integer indices, found ", scalar_type_name(indices.dtype()));
  }
  if (num_weights < 0) fail(op, "expected a non-negative num_weights, found ", num_weights);
  if (grad_output.dim() != indices.dim() + 1) {
    fail(op, "expected grad_output of the indices' shape ", shape_to_string(indices.sizes()),
         " plus the embedding dim, found ", shape_to_string(grad_output.sizes()));
  }
  const int64_t dim = grad_output.size(grad_output.dim() - 1);
  Tensor flat = loom::reshape(indices, {-1}).to(ScalarType::Int64);
  Tensor rows = loom::reshape(grad_output, {-1, dim});
  if (padding_idx >= 0) rows = loom::mul(rows, loom::ne(flat, padding_idx).unsqueeze(1));
  if (scale_grad_by_freq) {
    // Counts by index_add_ rather than bincount: the meta device computes it too.
    Tensor counts = zeros_of({num_weights}, rows.dtype(), rows.device());
    loom::index_add_(counts, 0, flat, loom::add(loom::mul(flat, 0), 1).to(rows.dtype()));
    rows = loom::div(rows, loom::index_select(counts, 0, flat).unsqueeze(1));
  }
  Tensor out = zeros_of({num_weights, dim}, grad_output.dtype(), grad_output.device());
  return loom::index_add_(out, 0, flat, rows.to(out.dtype()));
}

constexpr DecompositionEntry kDecompositions[] = {
    {"loom::embedding_dense_backward", decomposition<&embedding_dense_backward>()},
    {"loom::embedding_bag", decomposition<&embedding_bag>()},
    {"loom::_embedding_bag", decomposition<&embedding_bag_core>()},
};

}  // namespace

std::span<const DecompositionEntry> embedding_decompositions() {
  return kDecompositions;
}

}  // namespace loom::ops
