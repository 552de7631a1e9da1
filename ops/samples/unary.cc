// Samples of the unary pointwise family: neg ... nan_to_num, clamp and relu's gradient
// threshold_backward (Note [Op samples] in loom/ops/samples.h).
#include "loom/ops/samples.h"

namespace loom::ops {
namespace {

using namespace sample_helpers;

// A float op on values `fill`: a matrix, a 0-dim tensor, float64, bfloat16, (when
// `ints`) an int64 input, which the rule promotes, an empty tensor and a large matrix.
void floating(std::vector<OpSample>& out, const char* op, Fill fill, bool ints = true) {
  out.push_back({op, {T({2, 3}, kF32, fill)}});
  out.push_back({op, {T({}, kF32, fill)}});
  out.push_back({op, {T({3, 2}, kF64, fill)}});
  out.push_back(OpSample{op, {T({2, 3}, kBF16, fill)}}.tol(2e-2));
  if (ints) out.push_back({op, {T({2, 3}, kI64, fill == Fill::Unit ? Fill::Bool : fill)}});
  out.push_back({op, {T({0, 3}, kF32, fill)}});
  out.push_back({op, {T({129, 257}, kF32, fill)}});  // vectorised, threaded, with a tail
}

// An op defined for integers too: float32, 0-dim, int64, int32, float16, empty, float64
// and a large float32 matrix.
void numeric(std::vector<OpSample>& out, const char* op, Fill fill = Fill::Normal) {
  out.push_back({op, {T({2, 3}, kF32, fill)}});
  out.push_back({op, {T({}, kF32, fill)}});
  out.push_back({op, {T({3, 2}, kI64, fill)}});
  out.push_back({op, {T({4}, kI32, fill)}});
  out.push_back(OpSample{op, {T({2, 3}, kF16, fill)}}.tol(1e-2));
  out.push_back({op, {T({3, 0}, kI64, fill)}});
  out.push_back({op, {T({3, 2}, kF64, fill)}});
  out.push_back({op, {T({129, 257}, kF32, fill)}});  // vectorised, threaded, with a tail
}

std::vector<OpSample> make() {
  std::vector<OpSample> s;
  for (const char* op : {"loom::neg", "loom::abs", "loom::sign", "loom::relu", "loom::floor",
                         "loom::ceil", "loom::round", "loom::trunc"}) {
    numeric(s, op);
  }
  for (const char* op : {"loom::exp", "loom::exp2", "loom::expm1", "loom::sin", "loom::cos",
                         "loom::tan", "loom::atan", "loom::sinh", "loom::cosh", "loom::tanh",
                         "loom::sigmoid", "loom::erf", "loom::silu"}) {
    floating(s, op, Fill::Normal);
  }
  // Activations PyTorch computes for floating dtypes only (int64 is refused, as there).
  for (const char* op :
       {"loom::hardswish", "loom::hardsigmoid", "loom::mish", "loom::log_sigmoid"}) {
    floating(s, op, Fill::Normal, /*ints=*/false);
    s.push_back(OpSample{op, {T({2, 3}, kF16)}}.tol(1e-2));
  }
  s.push_back(OpSample{"loom::log_sigmoid", {T({2, 3}, kF32, Fill::Special)}}.with_note(
      "nan, inf and -inf"));
  s.push_back({"loom::clamp_min", {T({2, 3}), D(-0.5)}});
  s.push_back({"loom::clamp_min", {T({3, 2}, kI64), I(0)}});
  s.push_back(OpSample{"loom::clamp_min", {T({3}, kI32), D(0.5)}}.with_note(
      "a float bound promotes an integer input to float32"));
  s.push_back({"loom::clamp_min", {T({}, kF64), D(1.0)}});
  s.push_back({"loom::clamp_max", {T({2, 3}), D(0.5)}});
  s.push_back({"loom::clamp_max", {T({3, 2}, kI64), I(1)}});
  s.push_back({"loom::clamp_max", {T({0, 3}), D(0.0)}});
  s.push_back({"loom::prelu", {T({2, 3, 4}), T({3}, kF32, Fill::Unit)}});
  s.push_back(OpSample{"loom::prelu", {T({2, 3}), T({}, kF32, Fill::Unit)}}.with_note(
      "one weight for every channel"));
  s.push_back({"loom::prelu", {T({5}, kF64), T({1}, kF64, Fill::Unit)}});
  s.push_back({"loom::glu", {T({2, 4})}});
  s.push_back({"loom::glu", {T({4, 3}, kF64), I(0)}});
  s.push_back({"loom::glu", {T({2, 2, 6})}, {{"dim", I(-1)}}});
  for (const char* op : {"loom::log", "loom::log2", "loom::log10", "loom::log1p", "loom::sqrt",
                         "loom::rsqrt", "loom::reciprocal"}) {
    floating(s, op, Fill::Positive);
  }
  for (const char* op : {"loom::asin", "loom::acos"}) floating(s, op, Fill::Unit);
  for (const char* op : {"loom::logical_not", "loom::isnan", "loom::isinf", "loom::isfinite"}) {
    s.push_back({op, {T({2, 3}, kF32, Fill::Special)}});
    s.push_back({op, {T({}, kF64, Fill::Special)}});
    s.push_back({op, {T({3, 2}, kI64, Fill::SmallInt)}});
    s.push_back({op, {T({5}, kBool, Fill::Bool)}});
    s.push_back({op, {T({2, 3}, kF16, Fill::Special)}});
  }
  s.push_back({"loom::gelu", {T({2, 3})}});
  s.push_back({"loom::gelu", {T({})}, {{"approximate", S("tanh")}}});
  s.push_back({"loom::gelu", {T({3, 2}, kF64)}, {{"approximate", S("none")}}});
  s.push_back(OpSample{"loom::gelu", {T({2, 3}, kBF16)}, {{"approximate", S("tanh")}}}.tol(2e-2));
  s.push_back({"loom::leaky_relu", {T({2, 3})}});
  s.push_back({"loom::leaky_relu", {T({}), D(0.2)}});
  s.push_back({"loom::leaky_relu", {T({3, 2}, kF64)}, {{"negative_slope", D(0.5)}}});
  // relu's gradient: the grad passes where self > threshold (self of the grad's shape, a
  // broadcast self, float64 with a non-zero threshold); mismatched shapes are refused.
  s.push_back({"loom::threshold_backward", {T({2, 3}), T({2, 3}), D(0.0)}});
  s.push_back({"loom::threshold_backward", {T({3, 4}, kF64), T({3, 4}, kF64), D(0.5)}});
  s.push_back({"loom::threshold_backward", {T({2, 3}), T({3}), I(0)}});
  s.push_back(
      OpSample{"loom::threshold_backward", {T({2, 3}, kBF16), T({2, 3}, kBF16), D(0.0)}}.tol(2e-2));
  s.push_back(OpSample{"loom::threshold_backward", {T({2, 3}), T({4}), D(0.0)}}.raises(
      "cannot be broadcast"));
  s.push_back({"loom::elu", {T({2, 3})}});
  s.push_back({"loom::elu", {T({3, 2}, kF64), D(0.5), D(2.0), D(1.5)}});
  s.push_back({"loom::elu", {T({})}, {{"alpha", D(2.0)}}});
  s.push_back({"loom::softplus", {T({2, 3})}});
  s.push_back({"loom::softplus", {T({3, 2}, kF64)}, {{"beta", D(2.0)}, {"threshold", D(1.0)}}});
  s.push_back({"loom::softplus", {T({})}, {{"beta", I(3)}}});
  s.push_back({"loom::hardtanh", {T({2, 3})}});
  s.push_back({"loom::hardtanh", {T({3, 2}, kI64), I(-2), I(3)}});
  s.push_back({"loom::hardtanh", {T({})}, {{"min_val", D(-0.5)}, {"max_val", D(0.5)}}});
  // Without posinf/neginf the result is the dtype's own largest value: dtype-dependent.
  s.push_back(OpSample{"loom::nan_to_num", {T({2, 3}, kF32, Fill::Special)}}.depends_on_dtype());
  s.push_back({"loom::nan_to_num",
               {T({3, 2}, kF64, Fill::Special)},
               {{"nan", D(1.0)}, {"posinf", D(9.0)}, {"neginf", D(-9.0)}}});
  s.push_back({"loom::nan_to_num", {T({}, kF32, Fill::Special), D(2.0)}});
  s.push_back({"loom::nan_to_num", {T({2, 2}, kI64)}});
  s.push_back(
      OpSample{"loom::nan_to_num", {T({2, 3}, kF16, Fill::Special)}}.tol(1e-2).depends_on_dtype());
  // clamp with Scalar bounds, and clamp.Tensor (the unary family's, in ops/schemas/unary.def).
  const std::vector<OpSample> clamps = {
      {"loom::clamp", {T({2, 3})}, {{"min", D(-0.5)}, {"max", D(0.5)}}},
      {"loom::clamp", {T({2, 3}), D(0.0)}},
      {"loom::clamp", {T({3, 2}, kI64)}, {{"max", I(2)}}},
      {"loom::clamp", {T({}), D(-1.0), D(1.0)}},
      {"loom::clamp", {T({4}, kI32), I(-1), I(1)}},
      OpSample{"loom::clamp", {T({2, 3}, kF16)}, {{"min", D(-0.25)}}}.tol(1e-2),
      {"loom::clamp", {T({2, 3}, kF32, Fill::Special), D(-1.0), D(1.0)}},
      OpSample{"loom::clamp", {T({2, 3}, kI64), D(-1.5), D(2.5)}}.with_note(
          "float bounds promote an integer input to float32"),
      {"loom::clamp.Tensor", {T({2, 3}), T({2, 3}), T({2, 3})}},
      OpSample{"loom::clamp.Tensor", {T({2, 3}), T({3}), none()}}.with_note("min only, broadcast"),
      {"loom::clamp.Tensor", {T({2, 3}, kI64), none(), T({}, kI64)}},
      {"loom::clamp.Tensor", {T({}, kF64), T({}, kF64), T({}, kF64)}},
      {"loom::clamp_.Tensor", {T({2, 3}), T({3}), T({2, 1})}},
      // Inverse hyperbolic functions and bitwise_not (decompositions).
      {"loom::asinh", {T({2, 3})}},
      {"loom::asinh", {T({3}, kF64, Fill::Special)}},
      {"loom::asinh", {T({4}, kI64)}},
      {"loom::acosh", {T({2, 3}, kF32, Fill::Positive)}},
      {"loom::acosh", {T({5}, kF64, Fill::Positive)}},
      {"loom::atanh", {T({2, 3}, kF32, Fill::Unit)}},
      {"loom::atanh", {T({}, kF64, Fill::Unit)}},
      {"loom::bitwise_not", {T({2, 3}, kI64)}},
      {"loom::bitwise_not", {T({4}, kBool, Fill::Bool)}},
      {"loom::bitwise_not", {T({3}, kU8, Fill::Positive)}},
      OpSample{"loom::bitwise_not", {T({2})}}.raises("expected an integer or bool tensor"),
  };
  s.insert(s.end(), clamps.begin(), clamps.end());
  // Quantized relu (Note [Quantized samples]); relu_ is its in-place variant.
  s.push_back(OpSample{"loom::relu", {Q({2, 3})}}.against({}));
  s.push_back(OpSample{"loom::relu", {Q({4, 5}, kQI8)}}.against({}));
  return s;
}

}  // namespace

std::span<const OpSample> unary_samples() {
  static const std::vector<OpSample> samples = make();
  return samples;
}

}  // namespace loom::ops
