// acme_1_1: a device backend written the way the ABI 1.1 plugin guide taught, built
// against the frozen 1.1 headers beside it (plugin.h and the C++ helpers of that release).
// FROZEN: this source is never edited; it is what a vendor's unchanged 1.1 binary does.
//
// Its device interface has only device_count, allocate and deallocate: host <-> device and
// device <-> device copies are done by its own copy_ kernel, registered for its backend
// key, as the 1.1 guide's example did. Device memory is host memory (two simulated
// devices). Kernels: add/sub/mul/div out= (float32, float64), fill_, copy_ (float32,
// float64, int64, any strides, broadcast source, casts between them) and uniform_ on the
// 1.1 generator service.
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "loom/sdk/plugin.hpp"
#include "loom/sdk/random.hpp"

namespace {

using loom::sdk::Error;
using loom::sdk::Scalar;
using loom::sdk::Tensor;

constexpr int32_t kDevices = 2;
int16_t g_device_type = -1;

LoomError* device_count(void*, int32_t* out) {
  *out = kDevices;
  return nullptr;
}

LoomError* allocate(void*, int32_t index, size_t nbytes, void** out) {
  if (index < 0 || index >= kDevices) {
    return loom::sdk::make_error(
        LOOM_STATUS_INVALID_ARGUMENT,
        "[acme_1_1] device index " + std::to_string(index) + " is out of range (expected 0..1)");
  }
  *out = std::malloc(nbytes == 0 ? 1 : nbytes);
  if (*out == nullptr) {
    return loom::sdk::make_error(
        LOOM_STATUS_RESOURCE_EXHAUSTED,
        "[acme_1_1] out of memory for " + std::to_string(nbytes) + " bytes");
  }
  return nullptr;
}

void deallocate(void*, int32_t, void* ptr, size_t) {
  std::free(ptr);
}

const LoomDeviceInterface kInterface = [] {
  LoomDeviceInterface d{};
  d.struct_size = sizeof(LoomDeviceInterface);
  d.device_count = &device_count;
  d.allocate = &allocate;
  d.deallocate = &deallocate;
  return d;
}();

// One element of a tensor of float32, float64 or int64 as a long double (exact for all
// three).
long double load(const Tensor& t, int64_t offset) {
  switch (t.dtype()) {
    case LOOM_DTYPE_FLOAT32:
      return t.data<float>()[offset];
    case LOOM_DTYPE_FLOAT64:
      return t.data<double>()[offset];
    case LOOM_DTYPE_INT64:
      return static_cast<long double>(t.data<int64_t>()[offset]);
    default:
      throw Error("[acme_1_1] dtype " + std::to_string(t.dtype()) + " is not supported",
                  LOOM_STATUS_UNIMPLEMENTED);
  }
}

void store(const Tensor& t, int64_t offset, long double v) {
  switch (t.dtype()) {
    case LOOM_DTYPE_FLOAT32:
      t.data<float>()[offset] = static_cast<float>(v);
      return;
    case LOOM_DTYPE_FLOAT64:
      t.data<double>()[offset] = static_cast<double>(v);
      return;
    case LOOM_DTYPE_INT64:
      t.data<int64_t>()[offset] = static_cast<int64_t>(v);
      return;
    default:
      throw Error("[acme_1_1] dtype " + std::to_string(t.dtype()) + " is not supported",
                  LOOM_STATUS_UNIMPLEMENTED);
  }
}

// The strides of `t` read as a tensor of `out`'s shape (broadcast: 0 on new or size-1
// dims).
std::vector<int64_t> strides_as(const Tensor& t, const Tensor& out) {
  const int64_t n = out.dim(), m = t.dim();
  if (m > n) throw Error("[acme_1_1] a source of more dims than its destination");
  std::vector<int64_t> s(n, 0);
  for (int64_t d = 0; d < m; ++d) {
    const int64_t od = n - m + d;
    if (t.sizes()[d] == out.sizes()[od]) {
      s[od] = t.strides()[d];
    } else if (t.sizes()[d] != 1) {
      throw Error("[acme_1_1] shapes do not broadcast");
    }
  }
  return s;
}

// f(out offset, offsets of ins...) for every element of out.
template <typename F>
void for_each_element(const Tensor& out, const std::vector<std::vector<int64_t>>& ins, F f) {
  const int64_t n = out.dim();
  std::vector<int64_t> index(n, 0);
  std::vector<int64_t> offsets(ins.size());
  for (int64_t i = 0; i < out.numel(); ++i) {
    int64_t o = 0;
    for (size_t k = 0; k < ins.size(); ++k) offsets[k] = 0;
    for (int64_t d = 0; d < n; ++d) {
      o += index[d] * out.strides()[d];
      for (size_t k = 0; k < ins.size(); ++k) offsets[k] += index[d] * ins[k][d];
    }
    f(o, offsets);
    for (int64_t d = n; d-- > 0;) {
      if (++index[d] < out.sizes()[d]) break;
      index[d] = 0;
    }
  }
}

void require_acme(const char* op, const Tensor& t) {
  if (t.device().type != g_device_type) {
    throw Error(std::string("[") + op + "] expected a tensor on acme_1_1, found device type " +
                std::to_string(t.device().type));
  }
}

template <typename F>
Tensor binary_out(const char* op, const Tensor& a, const Tensor& b, const Tensor& out, F f) {
  require_acme(op, a);
  require_acme(op, b);
  require_acme(op, out);
  for_each_element(out, {strides_as(a, out), strides_as(b, out)},
                   [&](int64_t o, const std::vector<int64_t>& in) {
                     store(out, o, f(load(a, in[0]), load(b, in[1])));
                   });
  return out;
}

Tensor add_out(const Tensor& a, const Tensor& b, Scalar alpha, const Tensor& out) {
  const long double s = alpha.to_double();
  return binary_out("add", a, b, out, [s](long double x, long double y) { return x + s * y; });
}
Tensor sub_out(const Tensor& a, const Tensor& b, Scalar alpha, const Tensor& out) {
  const long double s = alpha.to_double();
  return binary_out("sub", a, b, out, [s](long double x, long double y) { return x - s * y; });
}
Tensor mul_out(const Tensor& a, const Tensor& b, const Tensor& out) {
  return binary_out("mul", a, b, out, [](long double x, long double y) { return x * y; });
}
Tensor div_out(const Tensor& a, const Tensor& b, const Tensor& out) {
  return binary_out("div", a, b, out, [](long double x, long double y) { return x / y; });
}

Tensor fill_(const Tensor& self, Scalar value) {
  require_acme("fill_", self);
  const long double v = value.is_floating_point() ? value.to_double() : value.to_int();
  for_each_element(self, {}, [&](int64_t o, const std::vector<int64_t>&) { store(self, o, v); });
  return self;
}

// Every copy that involves an acme device: host -> device, device -> host and device ->
// device, any strides, src broadcast to self's shape, converted to self's dtype. Device
// memory is host memory here; a real backend would queue DMA transfers.
Tensor copy_(const Tensor& self, const Tensor& src, bool /*non_blocking*/) {
  if (self.device().type != g_device_type && src.device().type != g_device_type) {
    throw Error("[copy_] acme_1_1 copies tensors of which one is on acme_1_1");
  }
  for_each_element(self, {strides_as(src, self)}, [&](int64_t o, const std::vector<int64_t>& in) {
    store(self, o, load(src, in[0]));
  });
  return self;
}

Tensor uniform_(const Tensor& self, double from, double to) {
  require_acme("uniform_", self);
  loom::sdk::PhiloxStream s =
      loom::sdk::reserve_random(self.device(), static_cast<uint64_t>(self.numel()));
  int64_t i = 0;
  for_each_element(self, {}, [&](int64_t o, const std::vector<int64_t>&) {
    const loom::sdk::PhiloxBlock b = s.block(static_cast<uint64_t>(i++));
    const double u = self.dtype() == LOOM_DTYPE_FLOAT64 ? loom::sdk::uniform_double(b[0], b[1])
                                                        : loom::sdk::uniform_float(b[0]);
    store(self, o, from + (to - from) * u);
  });
  return self;
}

void init(loom::sdk::Registrar& r) {
  const uint32_t key = r.backend("acme_1_1");
  g_device_type = r.device_type("acme_1_1", key, &kInterface);
  r.impl<&add_out>("loom::add.out", key);
  r.impl<&sub_out>("loom::sub.out", key);
  r.impl<&mul_out>("loom::mul.out", key);
  r.impl<&div_out>("loom::div.out", key);
  r.impl<&fill_>("loom::fill_.Scalar", key);
  r.impl<&copy_>("loom::copy_", key);
  r.impl<&uniform_>("loom::uniform_", key);
  for (const char* op :
       {"loom::add.out", "loom::sub.out", "loom::mul.out", "loom::div.out", "loom::uniform_"}) {
    r.capability(op, key, {LOOM_DTYPE_FLOAT32, LOOM_DTYPE_FLOAT64});
  }
  for (const char* op : {"loom::fill_.Scalar", "loom::copy_"}) {
    r.capability(op, key, {LOOM_DTYPE_FLOAT32, LOOM_DTYPE_FLOAT64, LOOM_DTYPE_INT64});
  }
  r.attribute("sdk_abi", "1.1");
}

}  // namespace

LOOM_PLUGIN("acme_1_1", "1.1.0", init)
