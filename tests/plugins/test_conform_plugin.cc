// faulty_npu: a backend that gets some ops wrong on purpose, for `loom conform`'s own
// tests (tests/conform/conform_test.cc): neg computes the wrong values, abs crashes
// (SIGSEGV), exp never returns, relu claims float64 but computes float32 only (it
// lies about a dtype), sqrt is right. Host memory, on the SDK's device helpers.
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstring>

#include "loom/sdk/device.hpp"
#include "loom/sdk/loop.hpp"
#include "loom/sdk/plugin.hpp"

namespace {

using loom::sdk::DispatchContext;
using loom::sdk::elementwise;
using loom::sdk::Scalar;
using loom::sdk::Tensor;

const LoomDeviceInterface kDevice = loom::sdk::host_memory_device<1>("faulty_npu");

Tensor neg_out(const DispatchContext&, const Tensor& self, const Tensor& out) {
  elementwise<float>(
      out, [](float x) { return x; }, self);  // wrong: the sign is lost
  return out;
}

Tensor abs_out(const DispatchContext&, const Tensor&, const Tensor& out) {
  raise(SIGSEGV);
  return out;
}

Tensor exp_out(const DispatchContext&, const Tensor&, const Tensor& out) {
  for (;;) pause();
  return out;
}

// Claims float32 and float64, but only float32 is computed: a float64 out is zeroed.
Tensor relu_out(const DispatchContext&, const Tensor& self, const Tensor& out) {
  if (out.dtype() == LOOM_DTYPE_FLOAT64) {
    if (out.is_contiguous()) std::memset(out.data(), 0, sizeof(double) * out.numel());
    return out;
  }
  elementwise<float>(
      out, [](float x) { return x > 0 ? x : 0.0f; }, self);
  return out;
}

Tensor sqrt_out(const DispatchContext&, const Tensor& self, const Tensor& out) {
  elementwise<float>(
      out, [](float x) { return std::sqrt(x); }, self);
  return out;
}

Tensor fill_(const DispatchContext&, const Tensor& self, Scalar value) {
  const float v = static_cast<float>(value.to_double());
  elementwise<float>(self, [v] { return v; });
  return self;
}

Tensor copy_(const DispatchContext&, const Tensor& self, const Tensor& src, bool) {
  if (self.dtype() == LOOM_DTYPE_FLOAT64) {
    elementwise<double>(
        self, [](double x) { return x; }, src);
  } else {
    elementwise<float>(
        self, [](float x) { return x; }, src);
  }
  return self;
}

void init(loom::sdk::Registrar& r) {
  const uint32_t key = r.backend("faulty_npu");
  r.device_type("faulty_npu", key, &kDevice);
  const loom::sdk::DTypeSet f32{LOOM_DTYPE_FLOAT32};
  const loom::sdk::DTypeSet f32_f64{LOOM_DTYPE_FLOAT32, LOOM_DTYPE_FLOAT64};
  r.impl<&neg_out>("loom::neg.out", key, f32);
  r.impl<&abs_out>("loom::abs.out", key, f32);
  r.impl<&exp_out>("loom::exp.out", key, f32);
  r.impl<&relu_out>("loom::relu.out", key, f32_f64);
  r.impl<&sqrt_out>("loom::sqrt.out", key, f32);
  r.impl<&fill_>("loom::fill_.Scalar", key, f32);
  r.impl<&copy_>("loom::copy_", key, f32_f64);
}

}  // namespace

LOOM_PLUGIN("faulty_npu", "0.1.0", init)
