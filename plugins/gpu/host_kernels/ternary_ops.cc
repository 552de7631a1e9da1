// The ternary pointwise ops on GPU tensors (where, masked_fill, lerp, addcmul, addcdiv) and
// div with a rounding mode. Operands arrive broadcast to out's shape (the structured-op
// contract) or as host scalars passed by value (Note [Host scalars by value]). Integer
// division flags a zero divisor for the host's next wait, so it is refused with an error
// as on the CPU without the op waiting for the device.
#include <cmath>
#include <optional>
#include <string>
#include <string_view>

#include "../kernels/launch.h"
#include "op_support.h"

namespace loom::gpu {
namespace {

using sdk::DispatchContext;
using sdk::Scalar;
using sdk::Tensor;

ScalarArg scalar_arg(const Scalar& s) {
  return {s.is_floating_point(), s.to_double(), s.to_int()};
}

Tensor ternary(const DispatchContext& ctx, const char* op, TernaryOp kind, const Tensor& self,
               const Tensor& a, const Tensor& b, const ScalarArg& value, const Tensor& out) {
  const HostScalars scalars = prepare_pointwise(op, out, {&self, &a, &b});
  const Tensor* operands[4] = {&out, &self, &a, &b};
  check_launch(
      launch_ternary(kind, out.dtype(), value, space_of(op, out, operands), out.data(),
                     device_data(self), device_data(a), device_data(b), stream_of(ctx), scalars),
      op);
  return out;
}

Tensor masked_fill_out(const DispatchContext& ctx, const Tensor& self, const Tensor& mask,
                       Scalar value, const Tensor& out) {
  const HostScalars scalars = prepare_pointwise("masked_fill", out, {&self, &mask});
  if (mask.dtype() != LOOM_DTYPE_BOOL) {
    throw sdk::Error("[masked_fill] expected a bool mask, found dtype " +
                     std::to_string(mask.dtype()));
  }
  if (!is_floating_dtype(out.dtype()) && out.dtype() != LOOM_DTYPE_BOOL &&
      value.is_floating_point() && value.d != std::trunc(value.d)) {
    throw sdk::Error("[masked_fill] value " + std::to_string(value.d) +
                     " cannot be converted to an integer dtype without loss");
  }
  const Tensor* operands[3] = {&out, &self, &mask};
  check_launch(
      launch_masked_fill(out.dtype(), scalar_arg(value), space_of("masked_fill", out, operands),
                         out.data(), device_data(self), device_data(mask), stream_of(ctx), scalars),
      "masked_fill");
  return out;
}

Tensor lerp_scalar_out(const DispatchContext& ctx, const Tensor& self, const Tensor& end,
                       Scalar weight, const Tensor& out) {
  const HostScalars scalars = prepare_pointwise("lerp", out, {&self, &end});
  const Tensor* operands[3] = {&out, &self, &end};
  check_launch(launch_binary(BinaryOp::Lerp, out.dtype(), weight.to_double(),
                             space_of("lerp", out, operands), out.data(), device_data(self),
                             device_data(end), stream_of(ctx), scalars),
               "lerp");
  return out;
}

Tensor lerp_tensor_out(const DispatchContext& ctx, const Tensor& self, const Tensor& end,
                       const Tensor& weight, const Tensor& out) {
  return ternary(ctx, "lerp", TernaryOp::Lerp, self, end, weight, {}, out);
}

Tensor addcmul_out(const DispatchContext& ctx, const Tensor& self, const Tensor& t1,
                   const Tensor& t2, Scalar value, const Tensor& out) {
  if (!is_floating_dtype(out.dtype()) && value.is_floating_point()) {
    throw sdk::Error("[addcmul] value must be an integer for integer tensors, found " +
                     std::to_string(value.d));
  }
  return ternary(ctx, "addcmul", TernaryOp::Addcmul, self, t1, t2, scalar_arg(value), out);
}

Tensor addcdiv_out(const DispatchContext& ctx, const Tensor& self, const Tensor& t1,
                   const Tensor& t2, Scalar value, const Tensor& out) {
  return ternary(ctx, "addcdiv", TernaryOp::Addcdiv, self, t1, t2, scalar_arg(value), out);
}

// Integer division: the kernel flags a zero divisor (1) or lowest / -1 (2) in its
// launch's check slot, raised as the op's error at the host's next wait for the device
// (Note [Input errors found by kernels]), so the op does not wait for the stream.
void integer_divide(const DispatchContext& ctx, bool floor, const Tensor& self, const Tensor& other,
                    const Tensor& out, const StridedSpace<3>& space, const HostScalars& scalars) {
  const InputCheck check = input_check(ctx, out, [](int64_t kind) -> std::string {
    if (kind == 1) return "[loom::div.Tensor_mode] integer division by zero";
    return "[loom::div.Tensor_mode] integer overflow: the lowest value of the dtype divided by "
           "-1 does not fit the dtype";
  });
  check_launch(launch_integer_divide(out.dtype(), floor, space, out.data(), device_data(self),
                                     device_data(other), check.slot(), stream_of(ctx), scalars),
               "div");
}

Tensor div_mode_out(const DispatchContext& ctx, const Tensor& self, const Tensor& other,
                    std::optional<std::string_view> rounding_mode, const Tensor& out) {
  const HostScalars scalars = prepare_pointwise("div", out, {&self, &other});
  const bool trunc = rounding_mode && *rounding_mode == "trunc";
  const bool floor = rounding_mode && *rounding_mode == "floor";
  if (rounding_mode && !trunc && !floor) {
    throw sdk::Error("[div] expected rounding_mode None, 'trunc' or 'floor', found '" +
                     std::string(*rounding_mode) + "'");
  }
  const Tensor* operands[3] = {&out, &self, &other};
  const StridedSpace<3> space = space_of("div", out, operands);
  if (!is_floating_dtype(out.dtype())) {
    integer_divide(ctx, floor, self, other, out, space, scalars);
    return out;
  }
  const BinaryOp kind = trunc ? BinaryOp::DivTrunc : floor ? BinaryOp::DivFloor : BinaryOp::Div;
  check_launch(launch_binary(kind, out.dtype(), 1.0, space, out.data(), device_data(self),
                             device_data(other), stream_of(ctx), scalars),
               "div");
  return out;
}

Tensor where_out(const DispatchContext& ctx, const Tensor& condition, const Tensor& self,
                 const Tensor& other, const Tensor& out) {
  const HostScalars scalars = prepare_pointwise("where", out, {&condition, &self, &other});
  if (condition.dtype() != LOOM_DTYPE_BOOL) {
    throw sdk::Error("[where] expected a bool condition, found dtype " +
                     std::to_string(condition.dtype()));
  }
  const Tensor* operands[4] = {&out, &condition, &self, &other};
  check_launch(launch_where(out.dtype(), space_of("where", out, operands), out.data(),
                            device_data(condition), device_data(self), device_data(other),
                            stream_of(ctx), scalars),
               "where");
  return out;
}

}  // namespace

void register_ternary_ops(sdk::Registrar& r, uint32_t key) {
  using namespace sdk::dtypes;
  r.impl<&where_out>("loom::where.self_out", key, all);
  r.impl<&masked_fill_out>("loom::masked_fill.Scalar_out", key, all);
  r.impl<&lerp_scalar_out>("loom::lerp.Scalar_out", key, floating);
  r.impl<&lerp_tensor_out>("loom::lerp.out", key, floating);
  r.impl<&addcmul_out>("loom::addcmul.out", key, numeric);
  r.impl<&addcdiv_out>("loom::addcdiv.out", key, floating);
  r.impl<&div_mode_out>("loom::div.Tensor_mode_out", key, numeric);
}

}  // namespace loom::gpu
