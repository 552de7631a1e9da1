// Derivatives of the shape family: cat, flip, roll, repeat, tril, triu. stack, split,
// chunk, flatten, reshape, pad and the pixel shuffles are decompositions.
#include "helpers.h"

namespace loom::autograd {
using namespace formulas;

void register_shape_formulas(FormulaTable& t) {
  // cat: each input's gradient is its slice of the output's.
  t.add({"loom::cat", 0, 0, [](BackwardContext& c) {
           const size_t n = c.list_length(0);
           int64_t dim = c.int_arg(1);
           const int64_t rank = c.grad().dim();
           if (dim < 0) dim += rank;
           int64_t offset = 0;
           for (size_t i = 0; i < n; ++i) {
             std::span<const int64_t> sizes = c.list_sizes(0, i);
             // A 1-D empty input takes part in cat without a place along dim.
             const int64_t length = static_cast<int64_t>(sizes.size()) == rank ? sizes[dim] : 0;
             c.set_element(0, i, [&] { return op::narrow(c.grad(), dim, offset, length); });
             offset += length;
           }
         }});
  t.add({"loom::flip", 0, 0,
         [](BackwardContext& c) { c.set(0, [&] { return op::flip(c.grad(), c.ints(1)); }); }});
  t.add({"loom::roll", 0, 0, [](BackwardContext& c) {
           c.set(0, [&] {
             std::vector<int64_t> back;
             for (int64_t s : c.ints(1)) back.push_back(-s);
             return op::roll(c.grad(), back, c.ints(2));
           });
         }});
  // repeat: the gradient of each tile is summed. The output is viewed as interleaved
  // [repeat_0, size_0, repeat_1, size_1, ...] and summed over the repeat dims.
  t.add({"loom::repeat", 0, 0, [](BackwardContext& c) {
           c.set(0, [&] {
             std::span<const int64_t> repeats = c.ints(1);
             std::span<const int64_t> sizes = c.input_sizes(0);
             const size_t lead = repeats.size() - sizes.size();
             std::vector<int64_t> tiled, summed;
             for (size_t d = 0; d < repeats.size(); ++d) {
               const int64_t size = d < lead ? 1 : sizes[d - lead];
               summed.push_back(static_cast<int64_t>(tiled.size()));
               tiled.push_back(repeats[d]);
               tiled.push_back(size);
             }
             Tensor g = op::reshape(c.grad(), tiled);
             return op::reshape(op::sum(g, std::optional<sdk::IntList>(summed)), sizes);
           });
         }});
  t.add({"loom::tril", 0, 0,
         [](BackwardContext& c) { c.set(0, [&] { return op::tril(c.grad(), c.int_arg(1)); }); }});
  t.add({"loom::triu", 0, 0,
         [](BackwardContext& c) { c.set(0, [&] { return op::triu(c.grad(), c.int_arg(1)); }); }});
}

}  // namespace loom::autograd
