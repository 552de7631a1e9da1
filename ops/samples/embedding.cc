// Samples of the embedding family: embedding, embedding_bag, _embedding_bag, one_hot (Note [Op
// samples] in loom/ops/samples.h).
#include "loom/ops/samples.h"

namespace loom::ops {
namespace {

using namespace sample_helpers;

std::vector<OpSample> make() {
  std::vector<OpSample> s = {
      {"loom::embedding", {T({10, 3}), Idx({2, 4}, 10)}},
      // Zero offsets: every index in the last bag, the bags before it empty.
      {"loom::embedding_bag", {T({10, 3}), Idx({8}, 10), T({3}, kI64, Fill::Zeros)}},
      {"loom::embedding_bag",
       {T({10, 3}, kF64), Idx({5}, 10), T({1}, kI64, Fill::Zeros)},
       {{"mode", I(1)}, {"padding_idx", I(2)}}},
      {"loom::embedding_bag",
       {T({10, 3}), Idx({6}, 10, kI32), T({2}, kI32, Fill::Zeros)},
       {{"mode", I(2)}}},
      {"loom::embedding_bag",
       {T({10, 3}), Idx({4}, 10), T({2}, kI64, Fill::Zeros)},
       {{"per_sample_weights", T({4})}, {"include_last_offset", B(true)}}},
      {"loom::_embedding_bag", {T({10, 3}), Idx({8}, 10), T({3}, kI64, Fill::Zeros)}},
      {"loom::_embedding_bag",
       {T({10, 3}, kF64), Idx({5}, 10), T({1}, kI64, Fill::Zeros)},
       {{"mode", I(1)}, {"padding_idx", I(2)}}},
      OpSample{"loom::_embedding_bag",
               {T({10, 3}), Idx({4}, 10), T({1}, kI64, Fill::Zeros)},
               {{"padding_idx", I(-3)}}}
          .raises("expected padding_idx -1 (none) or a row index, found -3"),
      {"loom::embedding", {T({5, 2}, kF64), Idx({6}, 5)}, {{"padding_idx", I(0)}}},
      {"loom::embedding", {T({4, 3}, kI32), Idx({}, 4)}},
      {"loom::embedding", {T({6, 2}), Idx({3, 2}, 6, kI32), I(2), B(false), B(false)}},
      {"loom::one_hot", {Idx({2, 3}, 4), I(5)}},
      {"loom::one_hot", {Idx({4}, 3)}, {{"num_classes", I(3)}}},
      {"loom::one_hot", {Idx({}, 2), I(2)}},
      OpSample{"loom::one_hot", {Idx({2, 3}, 4)}}.no_meta(
          "num_classes=-1: the class count is the largest value plus one"),
      // Error inputs (Note [Op samples]): each must raise.
      OpSample{"loom::embedding", {T({4, 3}), T({8}, kI64, Fill::Ascending)}}.raises(
          "index -2 is out of range"),
      // embedding_bag's offsets, checked by the op library (Note [Argument checks]).
      OpSample{"loom::embedding_bag", {T({10, 3}), Idx({4}, 10), T({3}, kI64, Fill::Ascending)}}
          .raises("offsets[0] has to be 0"),
      OpSample{"loom::embedding_bag",
               {T({10, 3}), Idx({4}, 10), T({2}, kI64, Fill::Zeros)},
               {{"mode", I(1)}, {"per_sample_weights", T({4})}}}
          .raises("per_sample_weights is only supported for mode='sum'"),
      {"loom::embedding_dense_backward", {T({2, 3, 4}), Idx({2, 3}, 5), I(5), I(-1), B(false)}},
      {"loom::embedding_dense_backward", {T({4, 3}, kF64), Idx({4}, 6), I(6), I(2), B(true)}},
      OpSample{"loom::embedding_dense_backward", {T({4, 3}), T({4}), I(6), I(-1), B(false)}}.raises(
          "expected integer indices"),
  };
  return s;
}

}  // namespace

std::span<const OpSample> embedding_samples() {
  static const std::vector<OpSample> samples = make();
  return samples;
}

}  // namespace loom::ops
