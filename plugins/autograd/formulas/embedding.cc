// Derivatives of the embedding family: embedding and embedding_bag (rows added back at
// their indices; padding_idx rows get none); one_hot is not differentiable.
#include "helpers.h"

namespace loom::autograd {
using namespace formulas;

namespace {

constexpr int64_t kSum = 0, kMean = 1, kMax = 2;

Tensor as_int64(const Tensor& t) {
  return t.dtype() == LOOM_DTYPE_INT64 ? t : op::to(t, LOOM_DTYPE_INT64);
}

// The indices equal to padding_idx (none when it is None).
Tensor padded_positions(BackwardContext& c, const Tensor& indices) {
  if (c.is_none(8)) return Tensor();
  return op::eq(indices, sdk::full(std::span<const int64_t>(), static_cast<double>(c.int_arg(8)),
                                   indices.dtype(), indices.device()));
}

// embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
// per_sample_weights, include_last_offset, padding_idx): returns (out, offset2bag,
// bag_size, max_indices). Sum and mean add each bag's gradient to the rows it read
// (scaled by the per-sample weight, or divided by the bag's count); max adds it to the
// row each maximum came from.
void embedding_bag_backward(BackwardContext& c) {
  const int64_t mode = c.int_arg(4);
  Tensor indices = as_int64(c.input(1));
  Tensor offset2bag = as_int64(c.result(1));
  Tensor padded = padded_positions(c, indices);
  Tensor grad = c.grad(0);  // [bags, dim]
  // The indices each bag counts (padding left out); an empty bag's output is a constant.
  Tensor kept = sdk::ones_like(op::to(indices, grad.dtype()));
  if (padded.defined()) kept = zero_where(kept, padded);
  Tensor counts = op::index_add(
      sdk::full(std::vector<int64_t>{grad.size(0)}, 0.0, grad.dtype(), grad.device()), 0,
      offset2bag, kept);
  c.set(0, [&] {
    std::span<const int64_t> sizes = c.input_sizes(0);
    Tensor zeros = sdk::full(sizes, 0.0, grad.dtype(), grad.device());
    if (mode == kMax) {
      Tensor empty = op::unsqueeze(op::eq(counts, scalar_like(counts, 0.0)), 1);
      Tensor rows = op::clamp_min(as_int64(c.result(3)), sdk::Scalar(0));
      return op::scatter_add(zeros, 0, rows, zero_where(grad, empty));
    }
    Tensor per_index = op::index_select(grad, 0, offset2bag);  // [indices, dim]
    if (!c.is_none(6)) per_index = per_index * op::unsqueeze(c.input(6), 1);
    if (mode == kMean) {
      Tensor divisor = op::clamp_min(counts, sdk::Scalar(1.0));
      per_index = per_index / op::unsqueeze(op::index_select(divisor, 0, offset2bag), 1);
    }
    if (padded.defined()) per_index = zero_where(per_index, op::unsqueeze(padded, 1));
    return op::index_add(zeros, 0, indices, per_index);
  });
  // per_sample_weights (sum mode): each weight's gradient is its row dotted with its bag's
  // gradient.
  c.set(6, [&] {
    Tensor rows = op::index_select(c.input(0), 0, indices);
    Tensor g = op::sum(rows * op::index_select(grad, 0, offset2bag),
                       std::optional<sdk::IntList>({1}));
    return padded.defined() ? zero_where(g, padded) : g;
  });
}

}  // namespace

void register_embedding_formulas(FormulaTable& t) {
  t.add({"loom::embedding_bag", inputs({0, 1, 6}), outputs({1, 3}), embedding_bag_backward, true,
         outputs({0})});
  t.not_differentiable({"loom::one_hot"});
  t.add({"loom::embedding", inputs({1}), 0, [](BackwardContext& c) {
           c.set(0, [&] {
             std::span<const int64_t> sizes = c.input_sizes(0);
             Tensor indices = op::reshape(c.input(1), {-1});
             Tensor rows = op::reshape(c.grad(), {-1, sizes[1]});
             const int64_t padding_idx = c.int_arg(2);
             if (padding_idx >= 0) {
               Tensor padded = op::eq(
                   indices, sdk::full(std::span<const int64_t>(), static_cast<double>(padding_idx),
                                      indices.dtype(), indices.device()));
               rows = zero_where(rows, op::unsqueeze(padded, 1));
             }
             Tensor zeros = sdk::full(sizes, 0.0, c.grad().dtype(), c.grad().device());
             return op::index_add(zeros, 0, indices, rows);
           });
         }});
}

}  // namespace loom::autograd
