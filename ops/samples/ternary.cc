// Samples of the family of pointwise ops with masks, modes or three operands: where,
// masked_fill, lerp, addcmul, addcdiv, div with a rounding mode (Note [Masks and
// modes] in ops/src/structured_ops.cc; Note [Op samples] in loom/ops/samples.h).
#include "loom/ops/samples.h"

namespace loom::ops {
namespace {

using namespace sample_helpers;

TensorSpec mask(std::vector<int64_t> shape) {
  return T(std::move(shape), kBool, Fill::Bool);
}

std::vector<OpSample> make() {
  std::vector<OpSample> s = {
      {"loom::where.self", {mask({2, 3}), T({2, 3}), T({2, 3})}},
      OpSample{"loom::where.self", {mask({2, 3}), T({3}), T({})}}.with_note(
          "condition, self and other broadcast"),
      {"loom::where.self", {mask({3, 1}), T({1, 4}, kI64), T({3, 4}, kF64)}},
      {"loom::where.self", {mask({}), T({}, kI32), T({}, kI32)}},
      {"loom::where.self", {mask({4}), T({4}, kBool, Fill::Bool), T({4}, kBool, Fill::Bool)}},
      {"loom::masked_fill.Scalar", {T({2, 3}), mask({2, 3}), D(-1.5)}},
      {"loom::masked_fill.Scalar", {T({2, 3}, kI64), mask({3}), I(7)}},
      {"loom::masked_fill.Scalar", {T({}), mask({}), D(2.0)}},
      OpSample{"loom::masked_fill.Scalar", {T({2, 3}, kF16), mask({2, 1}), D(0.5)}}.tol(1e-2),
      {"loom::lerp.Scalar", {T({2, 3}), T({2, 3}), D(0.3)}},
      {"loom::lerp.Scalar", {T({2, 3}, kF64), T({3}, kF64), D(0.75)}},
      {"loom::lerp.Scalar", {T({}), T({}), D(0.5)}},
      {"loom::lerp.Tensor", {T({2, 3}), T({2, 3}), T({2, 3}, kF32, Fill::Unit)}},
      {"loom::lerp.Tensor", {T({2, 3}, kF64), T({3}, kF64), T({2, 1}, kF64, Fill::Unit)}},
      {"loom::lerp.Tensor", {T({}), T({}), T({}, kF32, Fill::Unit)}},
      OpSample{"loom::lerp.Tensor", {T({2, 3}, kBF16), T({2, 3}, kBF16), T({3}, kBF16, Fill::Unit)}}
          .tol(2e-2),
      {"loom::addcmul", {T({2, 3}), T({2, 3}), T({2, 3})}},
      {"loom::addcmul", {T({2, 3}), T({3}), T({2, 1})}, {{"value", D(0.5)}}},
      {"loom::addcmul", {T({2, 3}, kI64), T({2, 3}, kI64), T({3}, kI64)}, {{"value", I(2)}}},
      {"loom::addcmul", {T({}, kF64), T({}, kF64), T({}, kF64)}},
      {"loom::addcdiv", {T({2, 3}), T({2, 3}), T({2, 3}, kF32, Fill::Positive)}},
      {"loom::addcdiv", {T({3}), T({2, 3}), T({2, 1}, kF32, Fill::Positive)}, {{"value", D(-2.0)}}},
      {"loom::addcdiv", {T({}, kF64), T({}, kF64), T({}, kF64, Fill::Positive)}},
      {"loom::div.Tensor_mode",
       {T({2, 3}), T({2, 3}, kF32, Fill::Positive)},
       {{"rounding_mode", none()}}},
      {"loom::div.Tensor_mode",
       {T({2, 3}), T({3}, kF32, Fill::Positive)},
       {{"rounding_mode", S("trunc")}}},
      {"loom::div.Tensor_mode",
       {T({2, 3}, kF64), T({2, 3}, kF64)},
       {{"rounding_mode", S("floor")}}},
      OpSample{"loom::div.Tensor_mode",
               {T({2, 3}, kI64), T({2, 3}, kI64, Fill::Positive)},
               {{"rounding_mode", S("floor")}}}
          .with_note("integer floor division keeps int64"),
      {"loom::div.Tensor_mode",
       {T({3, 1}, kI32), T({4}, kI32, Fill::Positive)},
       {{"rounding_mode", S("trunc")}}},
      {"loom::div.Tensor_mode",
       {T({2, 3}, kI64), T({3}, kI64, Fill::Positive)},
       {{"rounding_mode", none()}}},
      {"loom::div.Tensor_mode",
       {T({}), T({}, kF32, Fill::Positive)},
       {{"rounding_mode", S("floor")}}},
      {"loom::div.Scalar_mode", {T({2, 3}), D(1.5)}, {{"rounding_mode", S("floor")}}},
      {"loom::div.Scalar_mode", {T({2, 3}, kI64), I(3)}, {{"rounding_mode", S("trunc")}}},
      OpSample{"loom::div.Scalar_mode", {T({2, 3}, kI64), I(-2)}, {{"rounding_mode", S("floor")}}}
          .with_note("integer floor division keeps int64"),
      {"loom::div.Scalar_mode", {T({2, 3}, kI32), D(0.5)}, {{"rounding_mode", none()}}},
      {"loom::div.Scalar_mode", {T({}, kF64), I(4)}, {{"rounding_mode", S("trunc")}}},
      {"loom::div_.Scalar_mode", {T({2, 3}), D(-1.5)}, {{"rounding_mode", S("floor")}}},
      {"loom::div_.Scalar_mode", {T({2, 3}, kI64), I(3)}, {{"rounding_mode", S("trunc")}}},
      OpSample{"loom::div_.Scalar_mode", {T({2, 3}, kI64), D(0.5)}, {{"rounding_mode", S("floor")}}}
          .raises("can't be cast"),
  };
  return s;
}

}  // namespace

std::span<const OpSample> ternary_samples() {
  static const std::vector<OpSample> samples = make();
  return samples;
}

}  // namespace loom::ops
