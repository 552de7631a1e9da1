// Samples of the view family: view, as_strided, alias, permute, transpose, t, expand,
// slice, narrow, select, squeeze, unsqueeze, diagonal, unflatten, unfold, resize_ (Note
// [Op samples] in loom/ops/samples.h).
#include "loom/ops/samples.h"

namespace loom::ops {
namespace {

using namespace sample_helpers;

std::vector<OpSample> make() {
  const std::string reads_storage = "as_strided addresses the storage, not the elements";
  const std::string needs_strides = "view needs strides that express the new shape";
  // resize_ to at most self's elements: a larger size would read uninitialized memory.
  const std::string lays_out_anew = "resize_ lays self out anew over its storage";
  std::vector<OpSample> s = {
      OpSample{"loom::resize_", {T({2, 3}), L({3, 2})}}.no_strided(lays_out_anew),
      OpSample{"loom::resize_", {T({2, 3}, kI64), L({4})}}.no_strided(lays_out_anew),
      OpSample{"loom::resize_", {T({1, 2, 2, 2}), L({1, 2, 2, 2})}, {{"memory_format", I(2)}}}
          .no_strided(lays_out_anew),
      OpSample{"loom::resize_", {T({2, 3}), L({-1, 3})}}.raises(
          "expected non-negative sizes, found [-1, 3]"),
      OpSample{"loom::resize_", {T({2, 3}), L({6})}, {{"memory_format", I(2)}}}.raises(
          "expected 4 sizes for torch.channels_last, found 1"),
      OpSample{"loom::resize_", {T({2, 3}), L({6})}, {{"memory_format", I(4)}}}.raises("found 4"),
      {"loom::view_as_real", {T({2, 3}, kC64)}},
      {"loom::view_as_real", {T({}, kC128)}},
      OpSample{"loom::view_as_complex", {T({3, 2})}}.no_strided(
          "view_as_complex needs a last dim of stride 1"),
      OpSample{"loom::view_as_complex", {T({2, 2, 2}, kF64)}}.no_strided(
          "view_as_complex needs a last dim of stride 1"),
      OpSample{"loom::view_as_complex", {T({3, 3})}}.raises(
          "expected a last dimension of size 2, found sizes [3, 3]"),
      OpSample{"loom::view_as_real", {T({3})}}.raises("expected a complex tensor, found float32"),
      OpSample{"loom::view", {T({2, 3, 4}), L({4, -1})}}.no_strided(needs_strides),
      OpSample{"loom::view", {T({6}, kI64), L({2, 1, 3})}}.no_strided(needs_strides),
      OpSample{"loom::view", {T({}), L({1, 1})}}.no_strided(needs_strides),
      OpSample{"loom::view", {T({0, 3}, kF64), L({3, 0})}}.no_strided(needs_strides),
      OpSample{"loom::as_strided", {T({3, 4}), L({2, 2}), L({1, 2})}}.no_strided(reads_storage),
      OpSample{"loom::as_strided", {T({6}, kI64), L({3, 2}), L({1, 1}), I(1)}}.no_strided(
          reads_storage),
      OpSample{"loom::as_strided", {T({2, 3}, kF64), L({}), L({})}, {{"storage_offset", I(5)}}}
          .no_strided(reads_storage),
      {"loom::alias", {T({2, 3})}},
      {"loom::alias", {T({}, kI64)}},
      {"loom::permute", {T({2, 3, 4}), L({2, 0, 1})}},
      {"loom::permute", {T({2, 3}, kI64), L({-1, 0})}},
      {"loom::permute", {T({}), L({})}},
      {"loom::transpose.int", {T({2, 3}), I(0), I(1)}},
      {"loom::transpose.int", {T({2, 3, 4}, kI32), I(-1), I(0)}},
      {"loom::transpose.int", {T({}), I(0), I(-1)}},
      {"loom::t", {T({2, 3})}},
      {"loom::t", {T({4}, kF64)}},
      {"loom::t", {T({}, kBool, Fill::Bool)}},
      {"loom::expand", {T({3, 1}), L({3, 4})}},
      OpSample{"loom::expand", {T({3}, kI64), L({2, -1})}}.with_note("new leading dim, -1 kept"),
      {"loom::expand", {T({}), L({2, 2})}, {{"implicit", B(true)}}},
      {"loom::expand", {T({1, 0}), L({2, 0})}},
      {"loom::slice.Tensor", {T({5, 3})}},
      {"loom::slice.Tensor", {T({6, 3}, kI64), I(0), I(1), I(5), I(2)}},
      {"loom::slice.Tensor", {T({4, 5}, kF64), I(1), I(-3)}},
      {"loom::slice.Tensor", {T({4, 5})}, {{"dim", I(-1)}, {"end", I(100)}, {"step", I(3)}}},
      {"loom::slice.Tensor", {T({4}), I(0), I(3), I(1)}},
      {"loom::narrow", {T({5, 3}), I(0), I(1), I(3)}},
      {"loom::narrow", {T({2, 6}, kI64), I(-1), I(-4), I(2)}},
      {"loom::narrow", {T({3, 2}), I(0), I(3), I(0)}},
      {"loom::select.int", {T({3, 4}), I(0), I(1)}},
      {"loom::select.int", {T({3, 4}, kI64), I(1), I(-1)}},
      {"loom::select.int", {T({2}, kF64), I(0), I(0)}},
      {"loom::squeeze", {T({1, 3, 1, 2})}},
      {"loom::squeeze", {T({1}, kI64)}},
      {"loom::squeeze", {T({2, 3})}},
      {"loom::squeeze.dim", {T({1, 3, 1}), I(2)}},
      OpSample{"loom::squeeze.dim", {T({2, 3}, kI32), I(0)}}.with_note("size 2: unchanged"),
      {"loom::squeeze.dim", {T({}), I(0)}},
      {"loom::unsqueeze", {T({2, 3}), I(0)}},
      {"loom::unsqueeze", {T({2, 3}, kI64), I(-1)}},
      {"loom::unsqueeze", {T({}), I(0)}},
      {"loom::diagonal", {T({3, 4})}},
      {"loom::diagonal", {T({3, 4}, kI64), I(1)}},
      {"loom::diagonal", {T({2, 3, 4}, kF64), I(-1), I(2), I(0)}},
      {"loom::diagonal", {T({3, 3})}, {{"offset", I(5)}}},
      {"loom::unflatten.int", {T({2, 12}), I(1), L({3, 4})}},
      {"loom::unflatten.int", {T({6, 2}, kI64), I(0), L({-1, 2})}},
      {"loom::unflatten.int", {T({2, 0}), I(-1), L({0, 5})}},
      {"loom::unfold", {T({7}), I(0), I(3), I(2)}},
      {"loom::unfold", {T({2, 5}, kI64), I(1), I(2), I(1)}},
      {"loom::unfold", {T({4, 3}, kF64), I(0), I(4), I(3)}},
      {"loom::unfold", {T({}), I(0), I(1), I(1)}},
      // Error inputs (Note [Op samples]): each must raise.
      OpSample{"loom::view", {T({2, 3}), L({4})}}.raises("is invalid for a tensor of 6"),
      OpSample{"loom::permute", {T({2, 3}), L({0, 0})}}.raises("dim 0 repeats"),
      {"loom::squeeze.dims", {T({1, 3, 1, 2}), L({0, 2})}},
      {"loom::squeeze.dims", {T({2, 1}, kI64), L({-1, 0})}},
      {"loom::squeeze.dims", {T({}), L({0})}},
      OpSample{"loom::squeeze.dims", {T({1, 2}), L({0, 0})}}.raises("appears twice"),
      // Views of quantized tensors keep the quantizer (Note [Quantized samples]).
      OpSample{"loom::view", {Q({2, 3, 4}), L({4, -1})}}.against({}).no_strided(needs_strides),
      OpSample{"loom::permute", {Q({2, 3, 4}, kQI8), L({2, 0, 1})}}.against({}),
  };
  return s;
}

}  // namespace

std::span<const OpSample> view_samples() {
  static const std::vector<OpSample> samples = make();
  return samples;
}

}  // namespace loom::ops
