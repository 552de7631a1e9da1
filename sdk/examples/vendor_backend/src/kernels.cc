// npu_sim kernels: add and mul (their out= variants: float32, contiguous), fill_, and
// copy_ between the host and the device. Each checks its inputs and names the op.
#include <cstring>
#include <string>
#include <vector>

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
}

// Calls f(i, offset_a, offset_b) for every element of out's shape, with element offsets
// of a and b (any strides, 0 on broadcast dims).
template <typename F>
void for_each_offset(const Tensor& out, const Tensor& a, const Tensor& b, F f) {
  const int64_t n = out.dim();
  std::vector<int64_t> index(n, 0);
  for (int64_t i = 0; i < out.numel(); ++i) {
    int64_t oa = 0, ob = 0;
    for (int64_t d = 0; d < n; ++d) {
      oa += index[d] * a.strides()[d];
      ob += index[d] * b.strides()[d];
    }
    f(i, oa, ob);
    for (int64_t d = n; d-- > 0;) {
      if (++index[d] < out.sizes()[d]) break;
      index[d] = 0;
    }
  }
}

// Structured ops arrive with every input already broadcast to out's shape and cast to
// out's dtype (Note [Structured ops] in loom's dispatcher): only the math is left.
template <typename F>
Tensor binary_out(const char* op, const Tensor& a, const Tensor& b, const Tensor& out, F f) {
  require_npu_float32(op, a, "self");
  require_npu_float32(op, b, "other");
  require_npu_float32(op, out, "out");
  if (!out.is_contiguous())
    throw Error(std::string("[") + op + "] out must be contiguous on npu_sim");
  const float* x = a.data<float>();
  const float* y = b.data<float>();
  float* z = out.data<float>();
  for_each_offset(out, a, b, [&](int64_t i, int64_t oa, int64_t ob) { z[i] = f(x[oa], y[ob]); });
  return out;
}

Tensor add_out(const Tensor& a, const Tensor& b, Scalar alpha, const Tensor& out) {
  float s = static_cast<float>(alpha.to_double());
  return binary_out("add", a, b, out, [s](float x, float y) { return x + s * y; });
}

Tensor mul_out(const Tensor& a, const Tensor& b, const Tensor& out) {
  return binary_out("mul", a, b, out, [](float x, float y) { return x * y; });
}

Tensor fill_(const Tensor& self, Scalar value) {
  require_npu_float32("fill_", self, "self");
  if (!self.is_contiguous()) throw Error("[fill_] npu_sim fills contiguous tensors only");
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
  r.impl<&add_out>("loom::add.out", key);
  r.impl<&mul_out>("loom::mul.out", key);
  r.impl<&fill_>("loom::fill_.Scalar", key);
  r.impl<&copy_>("loom::copy_", key);
  for (const char* op : {"loom::add.out", "loom::mul.out", "loom::fill_.Scalar", "loom::copy_"}) {
    r.capability(op, key, {LOOM_DTYPE_FLOAT32});
  }
}

}  // namespace npu_sim
