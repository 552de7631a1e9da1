// npu_sim kernels: add and mul (float32, same shape), fill_, and copy_ between the host
// and the device. Each checks its inputs and names the op in its errors.
#include <cstring>
#include <string>

#include "npu_sim.h"

namespace npu_sim {
namespace {

using loom::sdk::Error;
using loom::sdk::Scalar;
using loom::sdk::Tensor;

int16_t g_device_type = -1;

void require_npu_float32(const char* op, const Tensor& t, const char* what) {
  if (t.device().type != g_device_type) {
    throw Error(std::string("[") + op + "] " + what + " must be on npu_sim, found device type " +
                std::to_string(t.device().type));
  }
  if (t.dtype() != LOOM_DTYPE_FLOAT32) {
    throw Error(std::string("[") + op + "] " + what + " must be float32 on npu_sim, found dtype " +
                    std::to_string(t.dtype()),
                LOOM_STATUS_UNIMPLEMENTED);
  }
  if (!t.is_contiguous()) {
    throw Error(std::string("[") + op + "] " + what + " must be contiguous on npu_sim");
  }
}

template <typename F>
Tensor binary(const char* op, const Tensor& a, const Tensor& b, F f) {
  require_npu_float32(op, a, "self");
  require_npu_float32(op, b, "other");
  if (!std::equal(a.sizes().begin(), a.sizes().end(), b.sizes().begin(), b.sizes().end())) {
    throw Error(std::string("[") + op + "] npu_sim needs equal shapes, found ranks " +
                std::to_string(a.dim()) + " and " + std::to_string(b.dim()) +
                " with different sizes");
  }
  Tensor out = loom::sdk::empty(a.sizes(), LOOM_DTYPE_FLOAT32, a.device());
  const float* x = a.data<float>();
  const float* y = b.data<float>();
  float* z = out.data<float>();
  for (int64_t i = 0; i < a.numel(); ++i) z[i] = f(x[i], y[i]);
  return out;
}

Tensor add(const Tensor& a, const Tensor& b, Scalar alpha) {
  float s = static_cast<float>(alpha.to_double());
  return binary("add", a, b, [s](float x, float y) { return x + s * y; });
}

Tensor mul(const Tensor& a, const Tensor& b) {
  return binary("mul", a, b, [](float x, float y) { return x * y; });
}

Tensor fill_(const Tensor& self, Scalar value) {
  require_npu_float32("fill_", self, "self");
  float v = static_cast<float>(value.to_double());
  float* p = self.data<float>();
  for (int64_t i = 0; i < self.numel(); ++i) p[i] = v;
  return self;
}

// Host <-> device copies of equal shape, dtype and contiguity, through the device's
// copy function (a real backend would enqueue it on a stream).
Tensor copy_(const Tensor& self, const Tensor& src, bool /*non_blocking*/) {
  if (self.dtype() != src.dtype() || self.numel() != src.numel() || !self.is_contiguous() ||
      !src.is_contiguous()) {
    throw Error("[copy_] npu_sim copies contiguous tensors of equal dtype and size only");
  }
  bool to_device = self.device().type == g_device_type;
  bool from_device = src.device().type == g_device_type;
  LoomCopyKind kind = to_device && from_device ? LOOM_COPY_DEVICE_TO_DEVICE
                      : to_device              ? LOOM_COPY_HOST_TO_DEVICE
                                               : LOOM_COPY_DEVICE_TO_HOST;
  size_t nbytes = static_cast<size_t>(self.numel()) * (self.view().dl.dtype.bits / 8);
  const LoomDeviceInterface& d = device_interface();
  int32_t index = to_device ? self.device().index : src.device().index;
  loom::sdk::check(
      d.copy(d.ctx, index < 0 ? 0 : index, kind, self.data(), src.data(), nbytes, nullptr));
  return self;
}

}  // namespace

void register_kernels(loom::sdk::Registrar& r, uint32_t key, int16_t device_type) {
  g_device_type = device_type;
  r.impl<&add>("loom::add.Tensor", key);
  r.impl<&mul>("loom::mul.Tensor", key);
  r.impl<&fill_>("loom::fill_.Scalar", key);
  r.impl<&copy_>("loom::copy_", key);
  for (const char* op :
       {"loom::add.Tensor", "loom::mul.Tensor", "loom::fill_.Scalar", "loom::copy_"}) {
    r.capability(op, key, {LOOM_DTYPE_FLOAT32});
  }
}

}  // namespace npu_sim
