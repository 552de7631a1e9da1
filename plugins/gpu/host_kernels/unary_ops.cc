// The unary family on GPU tensors: the out= kernels of the structured unary ops (math,
// activations, clamp, nan_to_num and the predicates). Inputs arrive in the compute dtype
// with out's shape (the structured-op contract), so each wrapper checks devices,
// describes the operands and calls the unary launcher.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "../kernels/launch.h"
#include "loom/sdk/plugin.hpp"
#include "op_support.h"

namespace loom::gpu {

namespace {

using sdk::DispatchContext;
using sdk::Scalar;
using sdk::Tensor;

Tensor unary(const DispatchContext& ctx, const char* op, UnaryOp kind, const Tensor& self,
             const Tensor& out, const UnaryParams& params = {}) {
  prepare(op, out, {&self});
  const Tensor* operands[2] = {&out, &self};
  check_launch(launch_unary(kind, self.dtype(), params, space_of(op, out, operands), out.data(),
                            self.data(), stream_of(ctx)),
               op);
  return out;
}

template <UnaryOp Kind>
Tensor unary_out(const DispatchContext& ctx, const Tensor& self, const Tensor& out) {
  return unary(ctx, ctx.op_name(), Kind, self, out);
}

Tensor neg_out(const DispatchContext& ctx, const Tensor& self, const Tensor& out) {
  if (out.dtype() == LOOM_DTYPE_BOOL) {
    throw sdk::Error("[neg] negation on a bool tensor is not supported; use logical_not");
  }
  return unary(ctx, "neg", UnaryOp::Neg, self, out);
}

Tensor gelu_out(const DispatchContext& ctx, const Tensor& self, std::string_view approximate,
                const Tensor& out) {
  if (approximate == "none") return unary(ctx, "gelu", UnaryOp::Gelu, self, out);
  if (approximate == "tanh") return unary(ctx, "gelu", UnaryOp::GeluTanh, self, out);
  throw sdk::Error("[gelu] approximate must be 'none' or 'tanh', found '" +
                   std::string(approximate) + "'");
}

Tensor leaky_relu_out(const DispatchContext& ctx, const Tensor& self, Scalar slope,
                      const Tensor& out) {
  return unary(ctx, "leaky_relu", UnaryOp::LeakyRelu, self, out, {.a = slope.to_double()});
}

Tensor elu_out(const DispatchContext& ctx, const Tensor& self, Scalar alpha, Scalar scale,
               Scalar input_scale, const Tensor& out) {
  return unary(ctx, "elu", UnaryOp::Elu, self, out,
               {.a = alpha.to_double() * scale.to_double(),
                .b = scale.to_double(),
                .c = input_scale.to_double()});
}

Tensor softplus_out(const DispatchContext& ctx, const Tensor& self, Scalar beta, Scalar threshold,
                    const Tensor& out) {
  return unary(ctx, "softplus", UnaryOp::Softplus, self, out,
               {.a = beta.to_double(), .b = threshold.to_double()});
}

// The largest finite value of a floating dtype (nan_to_num's default for +inf).
double max_finite(int32_t dtype) {
  switch (dtype) {
    case LOOM_DTYPE_FLOAT16:
      return 65504.0;
    case LOOM_DTYPE_BFLOAT16:
      return 3.3895313892515355e38;
    case LOOM_DTYPE_FLOAT32:
      return 3.4028234663852886e38;
    default:
      return std::numeric_limits<double>::max();
  }
}

Tensor nan_to_num_out(const DispatchContext& ctx, const Tensor& self, std::optional<double> nan,
                      std::optional<double> posinf, std::optional<double> neginf,
                      const Tensor& out) {
  const double top = max_finite(out.dtype());
  return unary(ctx, "nan_to_num", UnaryOp::NanToNum, self, out,
               {.a = nan.value_or(0.0), .b = posinf.value_or(top), .c = neginf.value_or(-top)});
}

// An integer bound truncated and saturated to the dtype's range, which clamps every value
// of the dtype exactly as the real bound would (as the CPU plugin does).
int64_t integer_bound(const Scalar& bound, int32_t dtype) {
  int64_t lo = std::numeric_limits<int64_t>::lowest(), hi = std::numeric_limits<int64_t>::max();
  switch (dtype) {
    case LOOM_DTYPE_BOOL:
      lo = 0, hi = 1;
      break;
    case LOOM_DTYPE_UINT8:
      lo = 0, hi = 255;
      break;
    case LOOM_DTYPE_INT8:
      lo = -128, hi = 127;
      break;
    case LOOM_DTYPE_INT16:
      lo = -32768, hi = 32767;
      break;
    case LOOM_DTYPE_INT32:
      lo = std::numeric_limits<int32_t>::lowest(), hi = std::numeric_limits<int32_t>::max();
      break;
    default:
      break;
  }
  if (bound.is_floating_point()) {
    const double v = std::trunc(bound.d);
    if (std::isnan(v)) return 0;
    if (v <= static_cast<double>(lo)) return lo;
    if (v >= static_cast<double>(hi)) return hi;
    return static_cast<int64_t>(v);
  }
  return std::clamp(bound.i, lo, hi);
}

Tensor clamp_between(const DispatchContext& ctx, const char* op, const Tensor& self,
                     std::optional<Scalar> min, std::optional<Scalar> max, const Tensor& out) {
  UnaryParams params;
  if (is_floating_dtype(out.dtype())) {
    params.a = min ? min->to_double() : -INFINITY;
    params.b = max ? max->to_double() : INFINITY;
  } else {
    params.ia =
        integer_bound(min.value_or(Scalar(std::numeric_limits<int64_t>::lowest())), out.dtype());
    params.ib =
        integer_bound(max.value_or(Scalar(std::numeric_limits<int64_t>::max())), out.dtype());
  }
  return unary(ctx, op, UnaryOp::Clamp, self, out, params);
}

Tensor clamp_out(const DispatchContext& ctx, const Tensor& self, std::optional<Scalar> min,
                 std::optional<Scalar> max, const Tensor& out) {
  if (!min && !max) throw sdk::Error("[clamp] at least one of min and max must be given");
  return clamp_between(ctx, "clamp", self, min, max, out);
}
Tensor clamp_min_out(const DispatchContext& ctx, const Tensor& self, Scalar min,
                     const Tensor& out) {
  return clamp_between(ctx, "clamp_min", self, min, std::nullopt, out);
}
Tensor clamp_max_out(const DispatchContext& ctx, const Tensor& self, Scalar max,
                     const Tensor& out) {
  return clamp_between(ctx, "clamp_max", self, std::nullopt, max, out);
}
Tensor hardtanh_out(const DispatchContext& ctx, const Tensor& self, Scalar min, Scalar max,
                    const Tensor& out) {
  return clamp_between(ctx, "hardtanh", self, min, max, out);
}

}  // namespace

void register_unary_ops(sdk::Registrar& r, uint32_t key) {
  using namespace sdk::dtypes;
  r.impl<&neg_out>("loom::neg.out", key, numeric);
  r.impl<&unary_out<UnaryOp::Abs>>("loom::abs.out", key, all);
  r.impl<&unary_out<UnaryOp::Sign>>("loom::sign.out", key, all);
  r.impl<&unary_out<UnaryOp::Relu>>("loom::relu.out", key, numeric);
  r.impl<&unary_out<UnaryOp::Exp>>("loom::exp.out", key, floating);
  r.impl<&unary_out<UnaryOp::Exp2>>("loom::exp2.out", key, floating);
  r.impl<&unary_out<UnaryOp::Expm1>>("loom::expm1.out", key, floating);
  r.impl<&unary_out<UnaryOp::Log>>("loom::log.out", key, floating);
  r.impl<&unary_out<UnaryOp::Log2>>("loom::log2.out", key, floating);
  r.impl<&unary_out<UnaryOp::Log10>>("loom::log10.out", key, floating);
  r.impl<&unary_out<UnaryOp::Log1p>>("loom::log1p.out", key, floating);
  r.impl<&unary_out<UnaryOp::Sqrt>>("loom::sqrt.out", key, floating);
  r.impl<&unary_out<UnaryOp::Rsqrt>>("loom::rsqrt.out", key, floating);
  r.impl<&unary_out<UnaryOp::Reciprocal>>("loom::reciprocal.out", key, floating);
  r.impl<&unary_out<UnaryOp::Sin>>("loom::sin.out", key, floating);
  r.impl<&unary_out<UnaryOp::Cos>>("loom::cos.out", key, floating);
  r.impl<&unary_out<UnaryOp::Tan>>("loom::tan.out", key, floating);
  r.impl<&unary_out<UnaryOp::Asin>>("loom::asin.out", key, floating);
  r.impl<&unary_out<UnaryOp::Acos>>("loom::acos.out", key, floating);
  r.impl<&unary_out<UnaryOp::Atan>>("loom::atan.out", key, floating);
  r.impl<&unary_out<UnaryOp::Sinh>>("loom::sinh.out", key, floating);
  r.impl<&unary_out<UnaryOp::Cosh>>("loom::cosh.out", key, floating);
  r.impl<&unary_out<UnaryOp::Tanh>>("loom::tanh.out", key, floating);
  r.impl<&unary_out<UnaryOp::Sigmoid>>("loom::sigmoid.out", key, floating);
  r.impl<&unary_out<UnaryOp::Erf>>("loom::erf.out", key, floating);
  r.impl<&unary_out<UnaryOp::Silu>>("loom::silu.out", key, floating);
  r.impl<&unary_out<UnaryOp::Mish>>("loom::mish.out", key, floating);
  r.impl<&unary_out<UnaryOp::LogSigmoid>>("loom::log_sigmoid.out", key, floating);
  r.impl<&unary_out<UnaryOp::Hardswish>>("loom::hardswish.out", key, floating);
  r.impl<&unary_out<UnaryOp::Hardsigmoid>>("loom::hardsigmoid.out", key, floating);
  r.impl<&unary_out<UnaryOp::Floor>>("loom::floor.out", key, all);
  r.impl<&unary_out<UnaryOp::Ceil>>("loom::ceil.out", key, all);
  r.impl<&unary_out<UnaryOp::Round>>("loom::round.out", key, all);
  r.impl<&unary_out<UnaryOp::Trunc>>("loom::trunc.out", key, all);
  r.impl<&unary_out<UnaryOp::IsNan>>("loom::isnan.out", key, all);
  r.impl<&unary_out<UnaryOp::IsInf>>("loom::isinf.out", key, all);
  r.impl<&unary_out<UnaryOp::IsFinite>>("loom::isfinite.out", key, all);
  r.impl<&unary_out<UnaryOp::LogicalNot>>("loom::logical_not.out", key, all);
  r.impl<&gelu_out>("loom::gelu.out", key, floating);
  r.impl<&leaky_relu_out>("loom::leaky_relu.out", key, floating);
  r.impl<&elu_out>("loom::elu.out", key, floating);
  r.impl<&softplus_out>("loom::softplus.out", key, floating);
  r.impl<&nan_to_num_out>("loom::nan_to_num.out", key, all);
  r.impl<&clamp_out>("loom::clamp.out", key, numeric);
  r.impl<&clamp_min_out>("loom::clamp_min.out", key, numeric);
  r.impl<&clamp_max_out>("loom::clamp_max.out", key, numeric);
  r.impl<&hardtanh_out>("loom::hardtanh.out", key, numeric);
}

}  // namespace loom::gpu
