// Samples of the shape family: cat, stack, split, chunk, flatten, reshape, flip, roll,
// repeat, tril, triu, pad, constant_pad_nd, split_with_sizes, select_scatter, slice_scatter,
// the reflection and replication pads, the sym_* size queries
// (Note [Op samples] in loom/ops/samples.h).
#include "loom/ops/samples.h"

namespace loom::ops {
namespace {

using namespace sample_helpers;

std::vector<OpSample> make() {
  std::vector<OpSample> s = {
      {"loom::cat", {TL({T({2, 3}), T({1, 3})})}},
      {"loom::cat", {TL({T({2, 3}, kI64), T({2, 1}, kI64), T({2, 2}, kI64)}), I(1)}},
      {"loom::cat", {TL({T({2, 3}, kF64), T({2, 3}, kF64)})}, {{"dim", I(-1)}}},
      OpSample{"loom::cat", {TL({T({2, 2}), T({2, 2}, kF64)}), I(0)}}.with_note(
          "mixed dtypes promote"),
      {"loom::cat", {TL({T({3}, kBool, Fill::Bool), T({2}, kBool, Fill::Bool)})}},
      {"loom::cat", {TL({T({0, 3}), T({2, 3})})}},
      {"loom::stack", {TL({T({2, 3}), T({2, 3}), T({2, 3})})}},
      {"loom::stack", {TL({T({2, 3}, kI64), T({2, 3}, kI64)}), I(2)}},
      {"loom::stack", {TL({T({}), T({})})}},
      {"loom::stack", {TL({T({3}, kF64), T({3}, kF64)})}, {{"dim", I(-1)}}},
      {"loom::split.Tensor", {T({5, 2}), I(2)}},
      {"loom::split.Tensor", {T({2, 6}, kI64), I(3), I(1)}},
      {"loom::split.Tensor", {T({4, 3}, kF64), I(4)}, {{"dim", I(0)}}},
      {"loom::chunk", {T({5, 2}), I(3)}},
      {"loom::chunk", {T({2, 6}, kI32), I(2), I(-1)}},
      {"loom::chunk", {T({3, 2}), I(5)}, {{"dim", I(0)}}},
      {"loom::flatten.using_ints", {T({2, 3, 4})}},
      {"loom::flatten.using_ints", {T({2, 3, 4}, kI64), I(1), I(2)}},
      {"loom::flatten.using_ints", {T({2, 3, 4, 2})}, {{"start_dim", I(1)}, {"end_dim", I(-2)}}},
      {"loom::flatten.using_ints", {T({})}},
      {"loom::reshape", {T({2, 3, 4}), L({4, -1})}},
      {"loom::reshape", {T({6}, kI64), L({2, 1, 3})}},
      {"loom::reshape", {T({}), L({1, 1})}},
      {"loom::reshape", {T({1}, kF64), L({})}},
      {"loom::pixel_shuffle", {T({1, 8, 2, 3}), I(2)}},
      {"loom::pixel_shuffle", {T({2, 2, 9, 2, 2}, kI64), I(3)}},
      {"loom::pixel_shuffle", {T({4, 1, 1}), I(2)}},
      {"loom::pixel_unshuffle", {T({1, 2, 4, 6}), I(2)}},
      {"loom::pixel_unshuffle", {T({3, 3, 3}, kF64), I(3)}},
      {"loom::pixel_unshuffle", {T({1, 1, 2, 2}), I(1)}},
      {"loom::flip", {T({2, 3, 4}), L({0, 2})}},
      {"loom::flip", {T({3, 4}, kI64), L({-1})}},
      {"loom::flip", {T({}), L({})}},
      {"loom::flip", {T({0, 3}), L({1})}},
      {"loom::flip", {T({5}, kBool, Fill::Bool), L({0})}},
      {"loom::roll", {T({3, 4}), L({1}), L({0})}},
      OpSample{"loom::roll", {T({3, 4}, kI64), L({2})}}.with_note("no dims: rolls the flattened"),
      {"loom::roll", {T({3, 4}, kF64), L({1, -1}), L({0, 1})}},
      {"loom::roll", {T({2, 3, 2}), I(5), I(1)}},
      {"loom::roll", {T({}), L({1})}},
      {"loom::repeat", {T({2, 3}), L({2, 1})}},
      OpSample{"loom::repeat", {T({2, 3}, kI64), L({2, 1, 2})}}.with_note("leading new dim"),
      {"loom::repeat", {T({}), L({3})}},
      {"loom::repeat", {T({2, 3}), L({0, 2})}},
      {"loom::repeat", {T({3}, kBool, Fill::Bool), L({1, 2})}},
      {"loom::tril", {T({3, 4})}},
      {"loom::tril", {T({3, 4}, kI64), I(-1)}},
      {"loom::tril", {T({2, 3, 3}, kF64)}, {{"diagonal", I(1)}}},
      {"loom::tril", {T({4, 2}, kBool, Fill::Bool), I(2)}},
      {"loom::triu", {T({3, 4})}},
      {"loom::triu", {T({3, 4}, kI32), I(1)}},
      {"loom::triu", {T({2, 3, 3}, kF64)}, {{"diagonal", I(-1)}}},
      {"loom::triu", {T({4, 2}), I(-5)}},
      {"loom::pad", {T({2, 3}), L({1, 2})}},
      {"loom::pad", {T({1, 2, 3}, kI64), L({0, 1, 2, 0})}, {{"value", D(7.0)}}},
      {"loom::pad", {T({2, 4}), L({-1, 1})}},
      {"loom::pad", {T({1, 2, 3, 4}), L({1, 2, 2, 1}), S("reflect")}},
      {"loom::pad", {T({1, 2, 3}, kF64), L({2, 1}), S("replicate")}},
      {"loom::pad", {T({1, 2, 3, 3}), L({1, 1, 2, 0})}, {{"mode", S("circular")}}},
      {"loom::pad", {T({2, 3}), L({1, 1}), S("constant"), D(-2.5)}},
      {"loom::split_with_sizes", {T({5, 2}), L({2, 3})}},
      {"loom::split_with_sizes", {T({2, 6}, kI64), L({1, 0, 5}), I(1)}},
      {"loom::split_with_sizes", {T({4, 3}, kF64), L({4})}, {{"dim", I(-2)}}},
      {"loom::constant_pad_nd", {T({2, 3}), L({1, 2})}},
      {"loom::constant_pad_nd", {T({1, 2, 3}, kI64), L({0, 1, 2, 0}), I(7)}},
      {"loom::constant_pad_nd", {T({2, 4}, kF64), L({-1, 1}), D(-2.5)}},
      {"loom::select_scatter", {T({3, 4}), T({4}), I(0), I(1)}},
      {"loom::select_scatter", {T({2, 3, 4}, kI64), T({2, 4}, kI64), I(1), I(-1)}},
      {"loom::select_scatter", {T({2, 3}, kF64), T({2}, kF32), I(1), I(2)}},
      {"loom::slice_scatter", {T({6, 2}), T({2, 2}), I(0), I(1), I(5), I(2)}},
      {"loom::slice_scatter", {T({3, 5}, kI64), T({3, 5}, kI64)}, {{"dim", I(1)}}},
      {"loom::slice_scatter", {T({4, 6}, kF64), T({4, 2}, kF64), I(1), I(-2)}},
      // Error inputs (Note [Op samples]): each must raise.
      OpSample{"loom::cat", {TL({T({2, 3}), T({2, 4})})}}.raises("expected size 3 in dim 1"),
      OpSample{"loom::split_with_sizes", {T({5, 2}), L({2, 2})}}.raises(
          "expected split_sizes to sum to 5"),
      OpSample{"loom::select_scatter", {T({3, 4}), T({3}), I(0), I(1)}}.raises(
          "expected src of the slice's shape [4]"),
      OpSample{"loom::slice_scatter", {T({6, 2}), T({6, 2}), I(0), I(1)}}.raises(
          "expected src of the slice's shape [5, 2]"),
      {"loom::reflection_pad1d", {T({2, 5}), L({2, 1})}},
      {"loom::reflection_pad2d", {T({1, 3, 4}), L({1, 2, 0, 2})}},
      {"loom::reflection_pad3d", {T({1, 1, 3, 3, 4}, kF64), L({1, 1, 2, 0, 1, 2})}},
      {"loom::replication_pad2d", {T({2, 2, 3}), L({2, 0, 1, 3})}},
      {"loom::replication_pad3d", {T({1, 2, 2, 3}), L({0, 1, 1, 0, 2, 1})}},
      OpSample{"loom::reflection_pad2d", {T({4}), L({1, 1, 1, 1})}}.raises(
          "expected a 3-D or 4-D input"),
      {"loom::sym_size.int", {T({2, 3}), I(1)}},
      {"loom::sym_size.int", {T({4, 1, 5}, kI64), I(-1)}},
      {"loom::sym_stride.int", {T({2, 3}), I(0)}},
      {"loom::sym_numel", {T({2, 3, 4})}},
      {"loom::sym_storage_offset", {T({3})}},
      {"loom::sym_is_contiguous", {T({2, 3})}},
      {"loom::sym_is_contiguous", {T({2, 3, 4, 5}), I(2)}},
      {"loom::sym_is_contiguous", {T({1, 2, 1, 3, 4}), I(3)}},
      OpSample{"loom::sym_is_contiguous", {T({2, 3}), I(4)}}.raises(
          "expected memory_format torch.contiguous_format (1), torch.channels_last (2) or "
          "torch.channels_last_3d (3), found 4"),
      OpSample{"loom::sym_size.int", {T({2, 3}), I(2)}}.raises("out of range"),
      {"loom::_assert_tensor_metadata", {T({2, 3})}, {{"size", L({2, 3})}, {"dtype", kF32}}},
      {"loom::_assert_tensor_metadata", {T({4}, kI64), none(), none(), kI64}},
      OpSample{"loom::_assert_tensor_metadata", {T({2, 3})}, {{"dtype", kF64}}}.raises(
          "expected a tensor of dtype float64, found float32"),
      OpSample{"loom::_assert_tensor_metadata", {T({2, 3}), L({3, 2})}}.raises(
          "expected a tensor of shape [3, 2], found [2, 3]"),
      // Quantized concatenation and flattening (Note [Quantized samples]).
      OpSample{"loom::cat", {TL({Q({2, 3}), Q({1, 3})})}}.against({}),
      OpSample{"loom::cat", {TL({Q({2, 3}, kQI8), Q({2, 2}, kQI8)}), I(1)}}.against({}),
      OpSample{"loom::flatten.using_ints", {Q({2, 3, 4}), I(1)}}.against({}),
  };
  return s;
}

}  // namespace

std::span<const OpSample> shape_samples() {
  static const std::vector<OpSample> samples = make();
  return samples;
}

}  // namespace loom::ops
