// acme_1_8: a device backend written the way the ABI 1.8 plugin guide teaches, built
// against the frozen 1.8 headers beside it (plugin.h and the C++ helpers of that release).
// FROZEN: this source is never edited; it is what a vendor's unchanged 1.8 binary does.
//
// Its device is the SDK's host-memory device (two devices whose memory is host memory,
// streams on worker threads, copies and pinned memory in its interface), so loom moves
// tensors between devices through the interface and its copy_ kernel copies within a
// device only. Kernels with typed dtype claims: add/sub/mul/div out= (float32, float64),
// neg out=, fill_ and copy_ (float32, float64).
#include <string>

#include "loom/sdk/device.hpp"
#include "loom/sdk/loop.hpp"
#include "loom/sdk/plugin.hpp"

namespace {

using loom::sdk::DispatchContext;
using loom::sdk::elementwise;
using loom::sdk::Error;
using loom::sdk::Scalar;
using loom::sdk::Tensor;

const LoomDeviceInterface kDevice = loom::sdk::host_memory_device<2>("acme_1_8");

// out[i] = f(inputs[i]...) in out's dtype, queued on the call's stream.
template <typename F, typename... In>
Tensor queue(const DispatchContext& ctx, const Tensor& out, F f, const In&... inputs) {
  if (out.dtype() != LOOM_DTYPE_FLOAT32 && out.dtype() != LOOM_DTYPE_FLOAT64) {
    throw Error(std::string("[") + ctx.op_name() + "] acme_1_8 computes float32 and float64",
                LOOM_STATUS_UNIMPLEMENTED);
  }
  loom::sdk::on_stream(ctx.stream(), [out, f, inputs...] {
    if (out.dtype() == LOOM_DTYPE_FLOAT64) {
      elementwise<double>(out, f, inputs...);
    } else {
      elementwise<float>(out, f, inputs...);
    }
  });
  return out;
}

Tensor add_out(const DispatchContext& ctx, const Tensor& self, const Tensor& other, Scalar alpha,
               const Tensor& out) {
  const double a = alpha.to_double();
  return queue(
      ctx, out, [a](auto x, auto y) { return x + static_cast<decltype(x)>(a) * y; }, self, other);
}
Tensor sub_out(const DispatchContext& ctx, const Tensor& self, const Tensor& other, Scalar alpha,
               const Tensor& out) {
  const double a = alpha.to_double();
  return queue(
      ctx, out, [a](auto x, auto y) { return x - static_cast<decltype(x)>(a) * y; }, self, other);
}
Tensor mul_out(const DispatchContext& ctx, const Tensor& self, const Tensor& other,
               const Tensor& out) {
  return queue(
      ctx, out, [](auto x, auto y) { return x * y; }, self, other);
}
Tensor div_out(const DispatchContext& ctx, const Tensor& self, const Tensor& other,
               const Tensor& out) {
  return queue(
      ctx, out, [](auto x, auto y) { return x / y; }, self, other);
}
Tensor neg_out(const DispatchContext& ctx, const Tensor& self, const Tensor& out) {
  return queue(
      ctx, out, [](auto x) { return -x; }, self);
}

Tensor fill_(const DispatchContext& ctx, const Tensor& self, Scalar value) {
  const double v = value.to_double();
  return queue(ctx, self, [v] { return v; });
}

// Copies within one device of one dtype; loom converts dtypes through the host and moves
// tensors between devices through kDevice's copy.
Tensor copy_(const DispatchContext& ctx, const Tensor& self, const Tensor& src, bool) {
  if (self.dtype() != src.dtype()) {
    throw Error("[copy_] acme_1_8 copies without converting dtypes", LOOM_STATUS_UNIMPLEMENTED);
  }
  return queue(
      ctx, self, [](auto x) { return x; }, src);
}

void init(loom::sdk::Registrar& r) {
  const uint32_t key = r.backend("acme_1_8");
  r.device_type("acme_1_8", key, &kDevice);
  const loom::sdk::DTypeSet floats{LOOM_DTYPE_FLOAT32, LOOM_DTYPE_FLOAT64};
  r.impl<&add_out>("loom::add.out", key, floats);
  r.impl<&sub_out>("loom::sub.out", key, floats);
  r.impl<&mul_out>("loom::mul.out", key, floats);
  r.impl<&div_out>("loom::div.out", key, floats);
  r.impl<&neg_out>("loom::neg.out", key, floats);
  r.impl<&fill_>("loom::fill_.Scalar", key, floats);
  r.impl<&copy_>("loom::copy_", key, floats);
  r.attribute("sdk_abi", "1.8");
}

}  // namespace

LOOM_PLUGIN("acme_1_8", "1.8.0", init)
