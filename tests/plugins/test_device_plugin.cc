// A device type "testdev" on its own backend slot whose allocator hands out host
// memory; tensors on it keep the plugin loaded (unload refusal test). It counts its
// allocations and publishes them as "loom.device_memory.testdev"
// (loom/device_memory_api.h) for loom::memory_stats. Its copies are memcpy and release
// their source at once (ABI 1.7's LOOM_DEVICE_COPY_TO_DEVICE_RELEASES_SOURCE); fill_ with
// 13 plays a kernel that finds bad input, which the next wait reports as fill_'s error. It
// lends "pinned" host memory and has copy_async (ABI 1.8), and publishes how often each
// copy function and stream_synchronize ran as "test_device.counters", so tests see which
// copies the host waited for. With the option half_pinned: "1" it also registers a
// device type with host_allocate but no host_deallocate, which the host must refuse. With
// host_scalars: "1" it registers "scalardev" on a backend of its own, whose device takes
// host scalars by value (ABI 1.11's LOOM_DEVICE_TAKES_HOST_SCALARS), with float32 mul.out
// and where.self_out kernels that count the host scalars they are given.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <span>
#include <string>

#include "loom/device_memory_api.h"
#include "loom/sdk/plugin.hpp"

namespace {

std::atomic<int64_t> g_allocated{0}, g_peak{0}, g_allocations{0}, g_frees{0};
std::atomic<int64_t> g_copies{0}, g_async_copies{0}, g_stream_waits{0}, g_pinned_live{0},
    g_pinned_bytes{0}, g_pinned_allocations{0}, g_host_scalars{0};

LoomError* device_count(void*, int32_t* out) {
  *out = 1;
  return nullptr;
}

LoomError* allocate(void*, int32_t, size_t nbytes, void** out) {
  *out = std::malloc(nbytes == 0 ? 1 : nbytes);
  if (*out == nullptr) {
    return loom::sdk::make_error(LOOM_STATUS_RESOURCE_EXHAUSTED, "testdev: out of memory");
  }
  const int64_t now = g_allocated += static_cast<int64_t>(nbytes);
  int64_t peak = g_peak.load();
  while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
  }
  ++g_allocations;
  return nullptr;
}

void deallocate(void*, int32_t, void* ptr, size_t nbytes) {
  std::free(ptr);
  g_allocated -= static_cast<int64_t>(nbytes);
  ++g_frees;
}

// The memory table: one device, no cache (every request goes to malloc).
LoomError* check_index(int32_t index) {
  if (index == 0) return nullptr;
  return loom::sdk::make_error(
      LOOM_STATUS_INVALID_ARGUMENT,
      "[testdev] device index " + std::to_string(index) + " is out of range (1 device)");
}

// Copies `s` into the caller's struct (an older caller's shorter struct gets its part).
LoomError* fill(LoomDeviceMemoryStats s, LoomDeviceMemoryStats* out) {
  if (out == nullptr || out->struct_size < sizeof(size_t)) {
    return loom::sdk::make_error(LOOM_STATUS_INVALID_ARGUMENT, "[testdev] no stats struct");
  }
  s.struct_size = sizeof(s);
  std::copy_n(reinterpret_cast<const char*>(&s) + sizeof(size_t),
              std::min(out->struct_size, sizeof(s)) - sizeof(size_t),
              reinterpret_cast<char*>(out) + sizeof(size_t));
  return nullptr;
}

LoomError* memory_stats(int32_t index, LoomDeviceMemoryStats* out) {
  if (LoomError* err = check_index(index)) return err;
  LoomDeviceMemoryStats s{};
  s.allocated_bytes = s.reserved_bytes = g_allocated.load();
  s.peak_allocated_bytes = s.peak_reserved_bytes = g_peak.load();
  s.allocations = s.driver_allocations = g_allocations.load();
  s.driver_frees = g_frees.load();
  return fill(s, out);
}

// The "pinned" host memory: every request goes to malloc.
LoomError* host_stats(LoomDeviceMemoryStats* out) {
  LoomDeviceMemoryStats s{};
  s.allocated_bytes = s.reserved_bytes = g_pinned_bytes.load();
  s.allocations = s.driver_allocations = g_pinned_allocations.load();
  return fill(s, out);
}

LoomError* empty_cache(int32_t index) {
  return index < 0 ? nullptr : check_index(index);
}

LoomError* reset_peak(int32_t index) {
  if (LoomError* err = check_index(index)) return err;
  g_peak = g_allocated.load();
  return nullptr;
}

const LoomDeviceMemoryApi kMemory = {sizeof(LoomDeviceMemoryApi), &memory_stats, &empty_cache,
                                     &reset_peak, &host_stats};

// A finding of a "kernel" not yet reported (fill_ with 13), raised by the next wait.
std::mutex g_finding_mutex;
std::string g_finding;

LoomError* wait() {
  std::lock_guard<std::mutex> lock(g_finding_mutex);
  if (g_finding.empty()) return nullptr;
  LoomError* err = loom::sdk::make_error(LOOM_STATUS_INVALID_ARGUMENT, g_finding);
  g_finding.clear();
  return err;
}
LoomError* stream_synchronize(void*, int32_t index, void*) {
  if (LoomError* err = check_index(index)) return err;
  ++g_stream_waits;
  return wait();
}
LoomError* device_synchronize(void*, int32_t index) {
  if (LoomError* err = check_index(index)) return err;
  return wait();
}
// A memcpy counted in `calls`: both copy functions are done at once (the default stream
// runs work as it is queued, so copy_async never has a block to hold).
template <std::atomic<int64_t>& calls>
LoomError* counted_copy(void*, int32_t index, LoomCopyKind, void* dst, const void* src,
                        size_t nbytes, void*) {
  if (LoomError* err = check_index(index)) return err;
  ++calls;
  std::memcpy(dst, src, nbytes);
  return nullptr;
}

LoomError* host_allocate(void*, size_t nbytes, void** out) {
  *out = std::malloc(nbytes == 0 ? 1 : nbytes);
  if (*out == nullptr) {
    return loom::sdk::make_error(LOOM_STATUS_RESOURCE_EXHAUSTED, "testdev: out of host memory");
  }
  ++g_pinned_live;
  ++g_pinned_allocations;
  g_pinned_bytes += static_cast<int64_t>(nbytes);
  return nullptr;
}

void host_deallocate(void*, void* ptr, size_t nbytes) {
  std::free(ptr);
  --g_pinned_live;
  g_pinned_bytes -= static_cast<int64_t>(nbytes);
}

// "test_device.counters": count("copy" | "copy_async" | "stream_synchronize" |
// "pinned_live"), -1 for another name.
struct Counters {
  size_t struct_size;
  int64_t (*count)(const char* name);
};

int64_t count(const char* name) {
  const std::string n = name == nullptr ? "" : name;
  if (n == "copy") return g_copies.load();
  if (n == "copy_async") return g_async_copies.load();
  if (n == "stream_synchronize") return g_stream_waits.load();
  if (n == "pinned_live") return g_pinned_live.load();
  if (n == "host_scalars") return g_host_scalars.load();
  return -1;
}

const Counters kCounters = {sizeof(Counters), &count};

const LoomDeviceInterface kDevice = [] {
  LoomDeviceInterface d{};
  d.struct_size = sizeof(LoomDeviceInterface);
  d.device_count = &device_count;
  d.allocate = &allocate;
  d.deallocate = &deallocate;
  d.stream_synchronize = &stream_synchronize;
  d.device_synchronize = &device_synchronize;
  d.copy = &counted_copy<g_copies>;
  d.flags = LOOM_DEVICE_COPY_TO_DEVICE_RELEASES_SOURCE;
  d.host_allocate = &host_allocate;
  d.host_deallocate = &host_deallocate;
  d.copy_async = &counted_copy<g_async_copies>;
  return d;
}();

const LoomDeviceInterface kHalfPinnedDevice = [] {
  LoomDeviceInterface d = kDevice;
  d.host_deallocate = nullptr;
  return d;
}();

loom::sdk::Tensor fill_(const loom::sdk::Tensor& self, loom::sdk::Scalar value) {
  if (self.dtype() != LOOM_DTYPE_FLOAT32)
    throw loom::sdk::Error("[fill_] testdev supports float32 only");
  float* p = self.data<float>();
  for (int64_t i = 0; i < self.numel(); ++i) p[i] = static_cast<float>(value.to_double());
  if (value.to_double() == 13) {
    std::lock_guard<std::mutex> lock(g_finding_mutex);
    g_finding = "[loom::fill_] value 13 flagged by the kernel";
  }
  return self;
}

const LoomDeviceInterface kScalarDevice = [] {
  LoomDeviceInterface d = kDevice;
  d.flags |= LOOM_DEVICE_TAKES_HOST_SCALARS;
  return d;
}();

// The offset of element i (row-major over `shape`) of t, which has that shape.
int64_t offset_of(const loom::sdk::Tensor& t, std::span<const int64_t> shape, int64_t i) {
  int64_t offset = 0;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    offset += (i % shape[d]) * t.strides()[d];
    i /= shape[d];
  }
  return offset;
}

// Element i of t, or t's one element when it is a host scalar.
template <typename T>
T element(const loom::sdk::Tensor& t, std::span<const int64_t> shape, int64_t i) {
  if (t.device().type == LOOM_DEVICE_CPU && t.dim() == 0) return *t.data<T>();
  return t.data<T>()[offset_of(t, shape, i)];
}

float& element_at(const loom::sdk::Tensor& out, int64_t i) {
  return out.data<float>()[offset_of(out, out.sizes(), i)];
}

void count_host_scalars(const loom::sdk::Tensor& out,
                        std::initializer_list<const loom::sdk::Tensor*> inputs) {
  if (out.dtype() != LOOM_DTYPE_FLOAT32) throw loom::sdk::Error("[scalardev] float32 only");
  for (const loom::sdk::Tensor* t : inputs) {
    if (t->device().type == LOOM_DEVICE_CPU) {
      if (t->dim() != 0) throw loom::sdk::Error("[scalardev] a CPU input that is not 0-dim");
      ++g_host_scalars;
    }
  }
}

loom::sdk::Tensor mul_out(const loom::sdk::Tensor& self, const loom::sdk::Tensor& other,
                          const loom::sdk::Tensor& out) {
  count_host_scalars(out, {&self, &other});
  for (int64_t i = 0; i < out.numel(); ++i) {
    element_at(out, i) =
        element<float>(self, out.sizes(), i) * element<float>(other, out.sizes(), i);
  }
  return out;
}

loom::sdk::Tensor where_out(const loom::sdk::Tensor& condition, const loom::sdk::Tensor& self,
                            const loom::sdk::Tensor& other, const loom::sdk::Tensor& out) {
  count_host_scalars(out, {&condition, &self, &other});
  for (int64_t i = 0; i < out.numel(); ++i) {
    element_at(out, i) = element<bool>(condition, out.sizes(), i)
                             ? element<float>(self, out.sizes(), i)
                             : element<float>(other, out.sizes(), i);
  }
  return out;
}

void init(loom::sdk::Registrar& r) {
  uint32_t key = r.backend("testdev");
  r.device_type("testdev", key, &kDevice);
  r.impl<&fill_>("loom::fill_.Scalar", key);
  LoomExtensionArgs a{};
  a.struct_size = sizeof(a);
  a.plugin = loom::sdk::plugin_state().context;
  a.name = LOOM_DEVICE_MEMORY_EXTENSION_PREFIX "testdev";
  a.table = &kMemory;
  loom::sdk::check(loom::sdk::host().extension_publish(&a));
  LoomExtensionArgs c{};
  c.struct_size = sizeof(c);
  c.plugin = loom::sdk::plugin_state().context;
  c.name = "test_device.counters";
  c.table = &kCounters;
  loom::sdk::check(loom::sdk::host().extension_publish(&c));
  if (r.option("half_pinned") == "1") r.device_type("testdev_bad", key, &kHalfPinnedDevice);
  if (r.option("host_scalars") == "1") {
    const uint32_t scalar_key = r.backend("scalardev");
    r.device_type("scalardev", scalar_key, &kScalarDevice);
    r.impl<&mul_out>("loom::mul.out", scalar_key, loom::sdk::dtypes::all);
    r.impl<&where_out>("loom::where.self_out", scalar_key, loom::sdk::dtypes::all);
  }
}

}  // namespace

LOOM_PLUGIN("test_device", "0.0.1", init)
