// Derivatives of the embedding family: embedding (rows added back at their indices;
// padding_idx rows get none). embedding_bag has no formula yet.
#include "helpers.h"

namespace loom::autograd {
using namespace formulas;

void register_embedding_formulas(FormulaTable& t) {
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
