// npu_sim: a simulated accelerator with two devices ("npu_sim:0", "npu_sim:1") whose
// memory is host memory and whose streams are worker threads, written on the SDK's
// helpers alone: the start of a real port. It claims a backend key, registers its device
// type (the SDK's host-memory device interface), and float32 kernels for 13 ops that
// queue their work on the call's stream; loom derives the functional, in-place and
// operator forms, broadcasting, type promotion and copies to and from other devices.
// While a profiler records, each kernel's run on its stream is timed and added to the
// profile as a device activity (loom/sdk/trace.hpp), linked to the op that queued it.
// Options (from the manifest): "driver_version".
#include <cmath>
#include <string>

#include "loom/sdk/device.hpp"
#include "loom/sdk/loop.hpp"
#include "loom/sdk/plugin.hpp"
#include "loom/sdk/trace.hpp"

namespace {

using loom::sdk::DispatchContext;
using loom::sdk::elementwise;
using loom::sdk::Scalar;
using loom::sdk::Tensor;

const LoomDeviceInterface kDevice = loom::sdk::host_memory_device<2>("npu_sim");

// Queues out[i] = f(inputs[i]...) on the call's stream: a worker thread per stream, or at
// once on the default stream (Note [Worker streams] in loom/sdk/device.hpp). The copies
// captured keep the tensors alive until the work has run. When a profiler records, the
// work shows as a kernel on the device's timeline, linked to the op that queued it
// (Note [Timing device work] in loom/sdk/trace.hpp).
template <typename F, typename... In>
Tensor queue(const DispatchContext& ctx, const Tensor& out, F f, const In&... inputs) {
  const loom::sdk::trace::Activity kernel(ctx.op_name(), out.device(), ctx.stream());
  loom::sdk::on_stream(ctx.stream(), [out, f, inputs..., kernel] {
    kernel.run([&] { elementwise<float>(out, f, inputs...); });
  });
  return out;
}

// Out= kernels of structured ops: inputs arrive broadcast to out's shape (any strides)
// and cast to float32, the only dtype claimed below.
template <float (*F)(float)>
Tensor unary_out(const DispatchContext& ctx, const Tensor& self, const Tensor& out) {
  return queue(ctx, out, F, self);
}
template <float (*F)(float, float)>
Tensor binary_out(const DispatchContext& ctx, const Tensor& self, const Tensor& other,
                  const Tensor& out) {
  return queue(ctx, out, F, self, other);
}
Tensor add_out(const DispatchContext& ctx, const Tensor& self, const Tensor& other, Scalar alpha,
               const Tensor& out) {
  const float a = static_cast<float>(alpha.to_double());
  return queue(
      ctx, out, [a](float x, float y) { return x + a * y; }, self, other);
}
Tensor sub_out(const DispatchContext& ctx, const Tensor& self, const Tensor& other, Scalar alpha,
               const Tensor& out) {
  const float a = static_cast<float>(alpha.to_double());
  return queue(
      ctx, out, [a](float x, float y) { return x - a * y; }, self, other);
}

float neg(float x) {
  return -x;
}
float relu(float x) {
  return x > 0 ? x : 0;
}
float sqrt_(float x) {
  return std::sqrt(x);
}
float exp_(float x) {
  return std::exp(x);
}
float abs_(float x) {
  return std::fabs(x);
}
float mul(float x, float y) {
  return x * y;
}
float div(float x, float y) {
  return x / y;
}
float maximum(float x, float y) {
  return std::isnan(x) || x > y ? x : y;
}
float minimum(float x, float y) {
  return std::isnan(x) || x < y ? x : y;
}

Tensor fill_(const DispatchContext& ctx, const Tensor& self, Scalar value) {
  const float v = static_cast<float>(value.to_double());
  return queue(ctx, self, [v] { return v; });
}

// Copies on one device (loom moves data between devices through kDevice's copy).
Tensor copy_(const DispatchContext& ctx, const Tensor& self, const Tensor& src, bool) {
  return queue(
      ctx, self, [](float x) { return x; }, src);
}

void init(loom::sdk::Registrar& r) {
  const uint32_t key = r.backend("npu_sim");
  r.device_type("npu_sim", key, &kDevice);
  const loom::sdk::DTypeSet f32{LOOM_DTYPE_FLOAT32};
  r.impl<&add_out>("loom::add.out", key, f32);
  r.impl<&sub_out>("loom::sub.out", key, f32);
  r.impl<&binary_out<mul>>("loom::mul.out", key, f32);
  r.impl<&binary_out<div>>("loom::div.out", key, f32);
  r.impl<&binary_out<maximum>>("loom::maximum.out", key, f32);
  r.impl<&binary_out<minimum>>("loom::minimum.out", key, f32);
  r.impl<&unary_out<neg>>("loom::neg.out", key, f32);
  r.impl<&unary_out<relu>>("loom::relu.out", key, f32);
  r.impl<&unary_out<sqrt_>>("loom::sqrt.out", key, f32);
  r.impl<&unary_out<exp_>>("loom::exp.out", key, f32);
  r.impl<&unary_out<abs_>>("loom::abs.out", key, f32);
  r.impl<&fill_>("loom::fill_.Scalar", key, f32);
  r.impl<&copy_>("loom::copy_", key, f32);
  r.attribute("driver_version", std::string(r.option("driver_version", "sim-1.0")).c_str());
  r.attribute("sdk_abi", (std::to_string(LOOM_ABI_VERSION_MAJOR) + "." +
                          std::to_string(LOOM_ABI_VERSION_MINOR))
                             .c_str());
}

}  // namespace

LOOM_PLUGIN("npu_sim", "0.1.0", init)
