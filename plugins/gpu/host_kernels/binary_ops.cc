// The binary family on GPU tensors: the out= kernels of the structured binary ops
// (arithmetic, comparisons, bitwise and logical ops). Inputs arrive broadcast to out's
// shape in the compute dtype, or as host scalars passed by value (Note [Host scalars by
// value]), so each wrapper checks devices, describes the operands and calls the binary
// launcher.
#include <string>

#include "../kernels/launch.h"
#include "loom/sdk/plugin.hpp"
#include "op_support.h"

namespace loom::gpu {

namespace {

using sdk::DispatchContext;
using sdk::Scalar;
using sdk::Tensor;

Tensor binary(const DispatchContext& ctx, const char* op, BinaryOp kind, const Tensor& self,
              const Tensor& other, const Tensor& out, double alpha = 1) {
  const HostScalars scalars = prepare_pointwise(op, out, {&self, &other});
  const Tensor* operands[3] = {&out, &self, &other};
  check_launch(launch_binary(kind, self.dtype(), alpha, space_of(op, out, operands), out.data(),
                             device_data(self), device_data(other), stream_of(ctx), scalars),
               op);
  return out;
}

template <BinaryOp Kind>
Tensor binary_out(const DispatchContext& ctx, const Tensor& self, const Tensor& other,
                  const Tensor& out) {
  return binary(ctx, ctx.op_name(), Kind, self, other, out);
}

template <BinaryOp Kind>
Tensor add_sub_out(const DispatchContext& ctx, const Tensor& self, const Tensor& other,
                   Scalar alpha, const Tensor& out) {
  const char* op = Kind == BinaryOp::Add ? "add" : "sub";
  const bool integral = !is_floating_dtype(out.dtype());
  if (integral && alpha.is_floating_point()) {
    throw sdk::Error(std::string("[") + op +
                     "] alpha must be an integer for integer tensors, found " +
                     std::to_string(alpha.d));
  }
  return binary(ctx, op, Kind, self, other, out, alpha.to_double());
}

}  // namespace

void register_binary_ops(sdk::Registrar& r, uint32_t key) {
  using namespace sdk::dtypes;
  r.impl<&add_sub_out<BinaryOp::Add>>("loom::add.out", key, all);
  r.impl<&add_sub_out<BinaryOp::Sub>>("loom::sub.out", key, numeric);
  r.impl<&binary_out<BinaryOp::Mul>>("loom::mul.out", key, all);
  r.impl<&binary_out<BinaryOp::Div>>("loom::div.out", key, floating);
  r.impl<&binary_out<BinaryOp::Maximum>>("loom::maximum.out", key, all);
  r.impl<&binary_out<BinaryOp::Minimum>>("loom::minimum.out", key, all);
  r.impl<&binary_out<BinaryOp::Pow>>("loom::pow.Tensor_Tensor_out", key, all);
  r.impl<&binary_out<BinaryOp::Atan2>>("loom::atan2.out", key, floating);
  r.impl<&binary_out<BinaryOp::Fmod>>("loom::fmod.out", key, numeric);
  r.impl<&binary_out<BinaryOp::Remainder>>("loom::remainder.out", key, numeric);
  r.impl<&binary_out<BinaryOp::BitAnd>>("loom::bitwise_and.out", key, integral_and_bool);
  r.impl<&binary_out<BinaryOp::BitOr>>("loom::bitwise_or.out", key, integral_and_bool);
  r.impl<&binary_out<BinaryOp::BitXor>>("loom::bitwise_xor.out", key, integral_and_bool);
  r.impl<&binary_out<BinaryOp::Eq>>("loom::eq.out", key, all);
  r.impl<&binary_out<BinaryOp::Ne>>("loom::ne.out", key, all);
  r.impl<&binary_out<BinaryOp::Lt>>("loom::lt.out", key, all);
  r.impl<&binary_out<BinaryOp::Le>>("loom::le.out", key, all);
  r.impl<&binary_out<BinaryOp::Gt>>("loom::gt.out", key, all);
  r.impl<&binary_out<BinaryOp::Ge>>("loom::ge.out", key, all);
  r.impl<&binary_out<BinaryOp::LogicalAnd>>("loom::logical_and.out", key, all);
  r.impl<&binary_out<BinaryOp::LogicalOr>>("loom::logical_or.out", key, all);
  r.impl<&binary_out<BinaryOp::LogicalXor>>("loom::logical_xor.out", key, all);
}

}  // namespace loom::gpu
