// Samples of the indexing family: index_select, gather, scatter (src, value, add, reduce),
// index.Tensor, nonzero, index_add, index_copy, masked_select, repeat_interleave, index_put,
// masked_scatter (Note [Op samples] in loom/ops/samples.h). index_put without accumulate
// writes distinct positions. index_copy gets distinct indices (a permutation). scatter writes
// each position of a row at most once (one index per row, or a permutation), so its result does not
// depend on the order of the writes.
#include "loom/ops/samples.h"

namespace loom::ops {
namespace {

using namespace sample_helpers;

TensorSpec mask(std::vector<int64_t> shape) {
  return T(std::move(shape), kBool, Fill::Bool);
}

std::vector<OpSample> make() {
  const std::string data_dependent = "the output shape depends on the values";
  std::vector<OpSample> s = {
      {"loom::index_select", {T({4, 3}), I(0), Idx({5}, 4)}},
      {"loom::index_select", {T({2, 5}, kI64), I(1), Idx({3}, 5)}},
      {"loom::index_select", {T({2, 3, 4}, kF64), I(-1), Idx({2}, 4, kI32)}},
      {"loom::index_select", {T({}), I(0), Idx({1}, 1)}},
      {"loom::index_select", {T({4, 3}), I(1), Idx({0}, 3)}},
      {"loom::index_select", {T({3, 2}, kBool, Fill::Bool), I(0), Idx({}, 3)}},
      {"loom::gather", {T({3, 4}), I(1), Idx({3, 2}, 4)}},
      {"loom::gather", {T({3, 4}, kI64), I(0), Idx({2, 4}, 3)}},
      {"loom::gather", {T({2, 3, 4}, kF64), I(-1), Idx({2, 3, 5}, 4)}, {{"sparse_grad", B(false)}}},
      {"loom::gather", {T({}), I(0), Idx({}, 1)}},
      {"loom::gather", {T({3, 4}), I(1), Idx({3, 0}, 4)}},
      {"loom::scatter.src", {T({3, 4}), I(1), Idx({3, 1}, 4), T({3, 2})}},
      {"loom::scatter.src", {T({3, 4}, kI64), I(0), Idx({1, 4}, 3), T({2, 4}, kI64)}},
      {"loom::scatter.src", {T({}, kF64), I(0), Idx({}, 1), T({}, kF64)}},
      {"loom::scatter.value", {T({3, 4}), I(1), Idx({3, 1}, 4), D(-1.5)}},
      {"loom::scatter.value", {T({3, 4}, kI32), I(0), Idx({1, 2}, 3), I(9)}},
      {"loom::scatter.value", {T({}), I(0), Idx({}, 1), D(2.0)}},
      OpSample{
          "loom::scatter_add",
          {T({3, 4}, kF32, Fill::SmallInt), I(1), Idx({3, 5}, 4), T({3, 5}, kF32, Fill::SmallInt)}}
          .with_note("repeated indices: integer-valued floats keep the sums exact"),
      {"loom::scatter_add", {T({3, 4}, kI64), I(0), Idx({4, 4}, 3), T({4, 4}, kI64)}},
      {"loom::scatter_add", {T({2, 3}, kF64), I(-1), Idx({2, 2}, 3), T({2, 3}, kF64)}},
      OpSample{"loom::scatter_reduce.two",
               {T({3, 4}, kF32, Fill::SmallInt), I(1), Idx({3, 5}, 4),
                T({3, 5}, kF32, Fill::SmallInt), S("sum")}}
          .with_note("repeated indices: integer-valued floats keep the sums exact"),
      {"loom::scatter_reduce.two",
       {T({3, 4}, kF64), I(0), Idx({4, 4}, 3), T({4, 4}, kF64), S("prod")},
       {{"include_self", B(false)}}},
      {"loom::scatter_reduce.two",
       {T({3, 4}, kF64), I(1), Idx({3, 2}, 4), T({3, 5}, kF64), S("mean")},
       {{"include_self", B(false)}}},
      {"loom::scatter_reduce.two", {T({3, 4}), I(1), Idx({3, 6}, 4), T({3, 6}), S("amax")}},
      {"loom::scatter_reduce.two",
       {T({2, 3}, kF64), I(-1), Idx({2, 4}, 3), T({2, 4}, kF64), S("amin")},
       {{"include_self", B(false)}}},
      {"loom::scatter_reduce.two",
       {T({3, 4}, kI64), I(0), Idx({4, 4}, 3), T({4, 4}, kI64), S("mean")}},
      {"loom::scatter_reduce.two",
       {T({3, 4}, kI32), I(0), Idx({4, 4}, 3), T({4, 4}, kI32), S("amax")},
       {{"include_self", B(false)}}},
      {"loom::scatter_reduce.two", {T({}, kF64), I(0), Idx({}, 1), T({}, kF64), S("prod")}},
      {"loom::index.Tensor", {T({4, 5}), TL({Idx({3}, 4)})}},
      {"loom::index.Tensor", {T({}), TL({})}},
      OpSample{"loom::index.Tensor", {T({4, 5}, kI64), TL({Idx({2, 3}, 4), Idx({3}, 5)})}}
          .with_note("two broadcast index tensors"),
      {"loom::index.Tensor", {T({2, 3, 4}, kF64), TL({Idx({2}, 2), Idx({2}, 3), Idx({1}, 4)})}},
      OpSample{"loom::index.Tensor", {T({3, 4}), TL({T({3, 4}, kBool, Fill::Bool)})}}.no_meta(
          data_dependent + " (the number of true elements of a mask)"),
      OpSample{"loom::index.Tensor", {T({3, 4}, kI64), TL({T({3}, kBool, Fill::Bool)})}}.no_meta(
          data_dependent + " (the number of true elements of a mask)"),
      OpSample{"loom::nonzero", {T({3, 4}, kF32, Fill::SmallInt)}}.no_meta(
          data_dependent + " (the number of nonzero elements)"),
      OpSample{"loom::nonzero", {T({2, 3, 2}, kBool, Fill::Bool)}}.no_meta(
          data_dependent + " (the number of nonzero elements)"),
      OpSample{"loom::nonzero", {T({}, kI64, Fill::Bool)}}.no_meta(
          data_dependent + " (the number of nonzero elements)"),
      {"loom::index_add", {T({4, 3}), I(0), Idx({5}, 4), T({5, 3})}},
      OpSample{"loom::index_add",
               {T({2, 4}, kF64), I(1), Idx({3}, 4), T({2, 3}, kF64)},
               {{"alpha", D(0.5)}}}
          .with_note("repeated indices accumulate"),
      {"loom::index_add", {T({3, 2}, kI64), I(-2), Idx({2}, 3, kI32), T({2, 2}, kI64)}},
      {"loom::index_add_", {T({4, 3}), I(0), Idx({2}, 4), T({2, 3})}, {{"alpha", I(2)}}},
      {"loom::index_copy", {T({4, 3}), I(0), T({3}, kI64, Fill::Distinct), T({3, 3})}},
      {"loom::index_copy", {T({2, 5}, kI64), I(1), T({5}, kI64, Fill::Distinct), T({2, 5}, kI64)}},
      {"loom::index_copy_", {T({3, 2}), I(0), T({2}, kI64, Fill::Distinct), T({2, 2})}},
      OpSample{"loom::masked_select", {T({3, 4}), mask({3, 4})}}.no_meta(data_dependent),
      OpSample{"loom::masked_select", {T({3, 1}, kI64), mask({4})}}.no_meta(
          data_dependent + " (self and mask broadcast)"),
      OpSample{"loom::masked_select", {T({}), mask({})}}.no_meta(data_dependent),
      OpSample{"loom::repeat_interleave.Tensor", {T({4}, kI64, Fill::Positive)}}.no_meta(
          data_dependent),
      OpSample{"loom::repeat_interleave.self_Tensor", {T({3, 2}), T({3}, kI64, Fill::Unit), I(0)}}
          .no_meta(data_dependent),
      OpSample{"loom::repeat_interleave.self_Tensor",
               {T({2, 2}, kI64), T({}, kI64, Fill::Positive)}}
          .no_meta(data_dependent + " (one count for every element, flattened)"),
      {"loom::repeat_interleave.self_int", {T({2, 3}), I(2), I(1)}},
      {"loom::repeat_interleave.self_int", {T({2, 2}, kI64), I(3)}},
      {"loom::repeat_interleave.self_int", {T({}), I(2)}},
      {"loom::repeat_interleave.self_int", {T({3}), I(0), I(0)}},
      {"loom::index_put", {T({4, 3}), TL({T({3}, kI64, Fill::Distinct)}), T({3, 3}), B(false)}},
      OpSample{"loom::index_put",
               {T({4, 3}, kF32, Fill::SmallInt), TL({Idx({5}, 4)}), T({5, 3}, kF32, Fill::SmallInt),
                B(true)}}
          .with_note("repeated indices accumulate: integer-valued floats keep the sums exact"),
      {"loom::index_put_",
       {T({2, 3, 4}, kI64), TL({Idx({}, 2), T({2}, kI64, Fill::Distinct)}), T({4}, kI64),
        B(false)}},
      OpSample{"loom::index_put_", {T({3, 4}, kF64), TL({mask({3, 4})}), T({}, kF64), B(false)}}
          .no_meta(data_dependent + " (index's positions of a mask)"),
      OpSample{"loom::masked_scatter", {T({3, 4}), mask({3, 4}), T({12})}}.no_meta(data_dependent),
      OpSample{"loom::masked_scatter", {T({3, 1}, kI64), mask({4}), T({13}, kI64)}}.no_meta(
          data_dependent),
      OpSample{"loom::masked_scatter_", {T({2, 3}, kF64), mask({3}), T({6}, kF64)}}.no_meta(
          data_dependent),
      // Error inputs (Note [Op samples]): each must raise.
      OpSample{"loom::index_select", {T({4, 3}), I(0), T({8}, kI64, Fill::Ascending)}}.raises(
          "index -2 is out of range"),
      OpSample{"loom::index_select", {T({4, 3}), I(2), Idx({2}, 3)}}.raises(
          "dim 2 is out of range"),
      OpSample{"loom::gather", {T({3, 4}), I(1), T({3, 6}, kI64, Fill::Ascending)}}.raises(
          "index -2 is out of range"),
      OpSample{"loom::scatter_reduce.two", {T({3, 4}), I(1), Idx({3, 2}, 4), T({3, 2}), S("max")}}
          .raises("expected reduce 'sum', 'prod', 'mean', 'amax' or 'amin', found 'max'"),
      OpSample{"loom::scatter_reduce.two",
               {T({3, 4}), I(1), Idx({3, 2}, 4), T({3, 2}, kF64), S("sum")}}
          .raises("expected src of self's dtype float32, found float64"),
      OpSample{"loom::index.Tensor", {T({4, 5}), TL({T({3}, kF32)})}}.raises(
          "expected int64 or bool index tensors, found float32 for index 0"),

  };
  return s;
}

}  // namespace

std::span<const OpSample> indexing_samples() {
  static const std::vector<OpSample> samples = make();
  return samples;
}

}  // namespace loom::ops
