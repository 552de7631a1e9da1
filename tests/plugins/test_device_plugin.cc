// A device type "testdev" on its own backend slot whose allocator hands out host
// memory; tensors on it keep the plugin loaded (unload refusal test).
#include <cstdlib>

#include "loom/sdk/plugin.hpp"

namespace {

LoomError* device_count(void*, int32_t* out) {
  *out = 1;
  return nullptr;
}

LoomError* allocate(void*, int32_t, size_t nbytes, void** out) {
  *out = std::malloc(nbytes == 0 ? 1 : nbytes);
  return *out ? nullptr
              : loom::sdk::make_error(LOOM_STATUS_RESOURCE_EXHAUSTED, "testdev: out of memory");
}

void deallocate(void*, int32_t, void* ptr, size_t) {
  std::free(ptr);
}

const LoomDeviceInterface kDevice = [] {
  LoomDeviceInterface d{};
  d.struct_size = sizeof(LoomDeviceInterface);
  d.device_count = &device_count;
  d.allocate = &allocate;
  d.deallocate = &deallocate;
  return d;
}();

loom::sdk::Tensor fill_(const loom::sdk::Tensor& self, loom::sdk::Scalar value) {
  if (self.dtype() != LOOM_DTYPE_FLOAT32)
    throw loom::sdk::Error("[fill_] testdev supports float32 only");
  float* p = self.data<float>();
  for (int64_t i = 0; i < self.numel(); ++i) p[i] = static_cast<float>(value.to_double());
  return self;
}

void init(loom::sdk::Registrar& r) {
  uint32_t key = r.backend("testdev");
  r.device_type("testdev", key, &kDevice);
  r.impl<&fill_>("loom::fill_.Scalar", key);
}

}  // namespace

LOOM_PLUGIN("test_device", "0.0.1", init)
