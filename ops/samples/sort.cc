// Samples of the sorting family: topk, sort, argsort, searchsorted, bucketize, unique (Note
// [Op samples] in loom/ops/samples.h). Inputs of topk and sort hold distinct values, so the
// indices are unique; unique gets small integers, so values repeat.
#include "loom/ops/samples.h"

namespace loom::ops {
namespace {

using namespace sample_helpers;

TensorSpec distinct(std::vector<int64_t> shape, ScalarType dtype = kF32) {
  return T(std::move(shape), dtype, Fill::Distinct);
}

std::vector<OpSample> make() {
  std::vector<OpSample> s = {
      {"loom::topk", {distinct({3, 5}), I(2)}},
      {"loom::topk", {distinct({4, 3}, kI64), I(3), I(0)}},
      {"loom::topk", {distinct({3, 5}, kF64), I(2)}, {{"largest", B(false)}}},
      {"loom::topk", {distinct({2, 3, 4}), I(1), I(1), B(true), B(true)}},
      {"loom::topk", {distinct({}), I(1)}},
      {"loom::topk", {distinct({6}), I(0)}},
      {"loom::topk", {distinct({2, 4}), I(4)}, {{"sorted", B(true)}, {"largest", B(false)}}},
  };
  for (const char* op : {"loom::sort", "loom::argsort"}) {
    s.push_back({op, {distinct({3, 5})}});
    s.push_back({op, {distinct({4, 3}, kI64), I(0)}});
    s.push_back({op, {distinct({3, 5}, kF64)}, {{"descending", B(true)}}});
    s.push_back({op, {distinct({2, 3, 4}, kI32), I(1), B(true)}});
    s.push_back({op, {distinct({})}});
    s.push_back({op, {distinct({2, 0})}});
    s.push_back(OpSample{op, {distinct({2, 5}, kBF16)}}.with_note("0 .. 9 are exact in bfloat16"));
  }
  s.push_back({"loom::searchsorted.Tensor", {T({5}, kF32, Fill::Ascending), T({2, 3})}});
  s.push_back({"loom::searchsorted.Tensor",
               {T({2, 4}, kF64, Fill::Ascending), T({2, 3}, kF64)},
               {{"right", B(true)}}});
  s.push_back({"loom::searchsorted.Tensor",
               {T({6}, kI64, Fill::Ascending), T({4}, kI64)},
               {{"side", S("right")}, {"out_int32", B(true)}}});
  s.push_back({"loom::searchsorted.Tensor", {T({3}, kF32, Fill::Ascending), T({})}});
  s.push_back({"loom::bucketize.Tensor", {T({2, 3}), T({4}, kF32, Fill::Ascending)}});
  s.push_back({"loom::bucketize.Tensor",
               {T({5}, kI64), T({3}, kI64, Fill::Ascending)},
               {{"right", B(true)}}});
  s.push_back({"loom::bucketize.Tensor", {T({}, kF64), T({2}, kF64, Fill::Ascending)}});
  s.push_back(OpSample{"loom::bucketize.Tensor",
                       {T({2, 3}, kF32, Fill::Special), T({3}, kF32, Fill::Ascending)}}
                  .with_note("nan goes to the end, as in PyTorch"));
  const std::string data_dependent = "the output size is the number of distinct values";
  s.push_back(OpSample{"loom::unique", {T({3, 4}, kF32, Fill::SmallInt)}}.no_meta(data_dependent));
  s.push_back(OpSample{"loom::unique", {T({2, 5}, kI64, Fill::SmallInt), B(true), B(true), B(true)}}
                  .no_meta(data_dependent));
  s.push_back(
      OpSample{"loom::unique", {T({6}, kBool, Fill::Bool)}, {{"return_counts", B(true)}}}.no_meta(
          data_dependent));
  s.push_back(OpSample{"loom::unique", {T({}, kF64)}, {{"return_inverse", B(true)}}}.no_meta(
      data_dependent));
  s.push_back(OpSample{"loom::unique", {T({0, 2})}, {{"return_inverse", B(true)}}}.with_note(
      "no elements: the output sizes are known, also on meta"));
  return s;
}

}  // namespace

std::span<const OpSample> sort_samples() {
  static const std::vector<OpSample> samples = make();
  return samples;
}

}  // namespace loom::ops
