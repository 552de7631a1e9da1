// The GPU device interface: devices and their properties from the runtime, memory through
// the caching allocator (Note [Caching allocator]) on the calling thread's current stream,
// streams and events as runtime handles, copies queued on the given stream; the
// allocator's figures as the "loom.device_memory.<type>" table.
#include "gpu_device.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>

#include "loom/sdk/error.hpp"
#include "loom/sdk/stream.hpp"

namespace loom::gpu {

namespace {

int16_t g_device_type = -1;
thread_local int tls_current_device = -1;

std::string describe(gpuError_t err) {
  const std::string name = gpuGetErrorName(err), text = gpuGetErrorString(err);
  return text == name ? name : name + ": " + text;  // HIP's text is often the name again
}

// Errors at the ABI: an SDK error object saying what failed and why.
LoomError* abi_error(gpuError_t err, const std::string& what) {
  const int32_t code =
      err == gpuErrorMemoryAllocation ? LOOM_STATUS_RESOURCE_EXHAUSTED : LOOM_STATUS_INTERNAL;
  return sdk::make_error(code, "[" LOOM_GPU_PLATFORM_NAME "] " + what + ": " + describe(err));
}

LoomError* bad_index(int32_t index) {
  return sdk::make_error(LOOM_STATUS_INVALID_ARGUMENT,
                         "[" LOOM_GPU_PLATFORM_NAME "] device index " + std::to_string(index) +
                             " is out of range: " + std::to_string(driver_state().device_count) +
                             " device(s) present");
}

// Runs `body` on device `index` and turns a runtime error into an ABI error.
template <typename Body>
LoomError* on_device(int32_t index, const char* what, Body&& body) {
  if (index < 0 || index >= driver_state().device_count) return bad_index(index);
  gpuError_t err = gpuSetDevice(index);
  if (err == gpuSuccess) {
    tls_current_device = index;
    err = body();
  }
  return err == gpuSuccess ? nullptr : abi_error(err, what);
}

class RuntimeMemory final : public RawDeviceMemory {
 public:
  void* allocate(int device, size_t nbytes) override {
    void* ptr = nullptr;
    if (gpuSetDevice(device) != gpuSuccess) return nullptr;
    tls_current_device = device;
    if (gpuMalloc(&ptr, nbytes) != gpuSuccess) {
      (void)gpuGetLastError();  // clear the sticky out-of-memory state
      return nullptr;
    }
    return ptr;
  }
  void release(int device, void* ptr) override {
    if (gpuSetDevice(device) == gpuSuccess) {
      tls_current_device = device;
      (void)gpuFree(ptr);
    }
  }
};

// The pinned staging pool's runtime calls (Note [Pinned staging]).
class RuntimeStaging final : public StagingRuntime {
 public:
  void* allocate_pinned(size_t nbytes) override {
    void* ptr = nullptr;
    if (gpuHostAlloc(&ptr, nbytes, gpuHostAllocPortable) != gpuSuccess) {
      (void)gpuGetLastError();
      return nullptr;
    }
    return ptr;
  }
  void release_pinned(void* ptr) override { (void)gpuFreeHost(ptr); }
  void* create_event(int device) override {
    gpuEvent_t event = nullptr;
    if (gpuSetDevice(device) != gpuSuccess) return nullptr;
    tls_current_device = device;
    if (gpuEventCreateWithFlags(&event, gpuEventDisableTiming) != gpuSuccess) {
      (void)gpuGetLastError();
      return nullptr;
    }
    return event;
  }
  void destroy_event(int, void* event) override {
    (void)gpuEventDestroy(static_cast<gpuEvent_t>(event));
  }
  bool record_event(int, void* event, void* stream) override {
    if (gpuEventRecord(static_cast<gpuEvent_t>(event), static_cast<gpuStream_t>(stream)) ==
        gpuSuccess) {
      return true;
    }
    // A stream of another device (the current stream is per device type): the caller
    // waits instead. Cleared so the next kernel launch is not blamed for it.
    (void)gpuGetLastError();
    return false;
  }
  bool event_done(int, void* event) override {
    const gpuError_t err = gpuEventQuery(static_cast<gpuEvent_t>(event));
    if (err == gpuErrorNotReady) {
      (void)gpuGetLastError();  // HIP records "not ready" as the last error
      return false;
    }
    return true;  // done, or an event of a failed device: nothing will read the block
  }
};

// Note [Input errors found by kernels]: 256 slots of mapped pinned memory, made at the
// first checked launch and kept for the process (as the allocator is).
constexpr size_t kCheckSlots = 256;
std::once_flag g_checks_once;
std::atomic<DeferredChecks*> g_checks{nullptr};
int64_t* g_check_words_on_device = nullptr;

// A full ring's wait, from inside an op that has selected its own device: that device is
// current again afterwards.
void wait_on_device(int device, void* stream) {
  int current = 0;
  check(gpuGetDevice(&current), "find the current device");
  use_device(device);
  const gpuError_t err = gpuStreamSynchronize(static_cast<gpuStream_t>(stream));
  use_device(current);
  check(err, "wait for a stream's kernel checks");
}

DeferredChecks& checks() {
  std::call_once(g_checks_once, [] {
    void* host = nullptr;
    void* on_device = nullptr;
    check(gpuHostAlloc(&host, 2 * kCheckSlots * sizeof(int64_t),
                       gpuHostAllocMapped | gpuHostAllocPortable),
          "allocate the pinned words kernels report bad input in");
    check(gpuHostGetDevicePointer(&on_device, host, 0), "map the kernels' report words");
    g_check_words_on_device = static_cast<int64_t*>(on_device);
    g_checks.store(
        new DeferredChecks(static_cast<volatile int64_t*>(host), kCheckSlots, &wait_on_device),
        std::memory_order_release);
  });
  return *g_checks.load(std::memory_order_acquire);
}

// After a wait for the device: the kernels' findings as the wait's error.
LoomError* after_wait(LoomError* waited, int device, void* stream, bool all_streams, bool retire) {
  DeferredChecks* pending = g_checks.load(std::memory_order_acquire);
  if (waited != nullptr || pending == nullptr) return waited;
  try {
    pending->after_wait(device, stream, all_streams, retire);
  } catch (const std::exception& e) {
    return sdk::make_error(LOOM_STATUS_INVALID_ARGUMENT, e.what());
  }
  return nullptr;
}

LoomError* device_count(void*, int32_t* out) {
  *out = driver_state().device_count;
  return nullptr;
}

LoomError* get_properties(void*, int32_t index, LoomDeviceProperties* out) {
  return on_device(index, "get_properties", [&] {
    gpuDeviceProp_t prop;
    const gpuError_t err = gpuGetDeviceProperties(&prop, index);
    if (err != gpuSuccess) return err;
    const size_t length = strnlen(prop.name, sizeof(out->name) - 1);
    std::memcpy(out->name, prop.name, length);
    out->name[length] = '\0';
    out->total_memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
    out->compute_units = prop.multiProcessorCount;
    return gpuSuccess;
  });
}

LoomError* allocate(void*, int32_t index, size_t nbytes, void** out_ptr) {
  if (index < 0 || index >= driver_state().device_count) return bad_index(index);
  void* stream = nullptr;
  try {
    stream = sdk::current_stream(g_device_type);
  } catch (const std::exception& e) {
    return sdk::make_error(LOOM_STATUS_INTERNAL, e.what());
  }
  *out_ptr = allocator().allocate(index, nbytes, stream);
  if (*out_ptr != nullptr) return nullptr;
  const MemoryStats s = allocator().stats(index);
  size_t free_bytes = 0, total_bytes = 0;
  (void)gpuMemGetInfo(&free_bytes, &total_bytes);
  return sdk::make_error(LOOM_STATUS_RESOURCE_EXHAUSTED,
                         "[" LOOM_GPU_PLATFORM_NAME "] out of memory: tried to allocate " +
                             std::to_string(nbytes) + " bytes on " LOOM_GPU_DEVICE_TYPE ":" +
                             std::to_string(index) + " (" + std::to_string(s.allocated_bytes) +
                             " bytes held by tensors, " + std::to_string(free_bytes) + " of " +
                             std::to_string(total_bytes) + " bytes free)");
}

void deallocate(void*, int32_t, void* ptr, size_t) {
  allocator().free(ptr);
}

LoomError* stream_create(void*, int32_t index, void** out) {
  return on_device(index, "stream_create", [&] {
    return gpuStreamCreateWithFlags(reinterpret_cast<gpuStream_t*>(out), gpuStreamNonBlocking);
  });
}
// A stream with launched checks is waited for first: its handle may be reused, and its
// slots must not wait for the new stream (Note [Input errors found by kernels]).
LoomError* stream_destroy(void*, int32_t index, void* stream) {
  return on_device(index, "stream_destroy", [&] {
    const auto s = static_cast<gpuStream_t>(stream);
    DeferredChecks* pending = g_checks.load(std::memory_order_acquire);
    if (pending != nullptr && pending->pending_on(index, stream)) {
      const gpuError_t err = gpuStreamSynchronize(s);
      if (err != gpuSuccess) return err;
      pending->stream_finished(index, stream);
    }
    return gpuStreamDestroy(s);
  });
}
LoomError* stream_synchronize(void*, int32_t index, void* stream) {
  return after_wait(
      on_device(index, "stream_synchronize",
                [&] { return gpuStreamSynchronize(static_cast<gpuStream_t>(stream)); }),
      index, stream, false, true);
}
LoomError* event_create(void*, int32_t index, void** out) {
  return on_device(index, "event_create", [&] {
    return gpuEventCreateWithFlags(reinterpret_cast<gpuEvent_t*>(out), gpuEventDisableTiming);
  });
}
LoomError* event_destroy(void*, int32_t index, void* event) {
  return on_device(index, "event_destroy",
                   [&] { return gpuEventDestroy(static_cast<gpuEvent_t>(event)); });
}
LoomError* event_record(void*, int32_t index, void* event, void* stream) {
  return on_device(index, "event_record", [&] {
    return gpuEventRecord(static_cast<gpuEvent_t>(event), static_cast<gpuStream_t>(stream));
  });
}
LoomError* event_wait(void*, int32_t index, void* event, void* stream) {
  return on_device(index, "event_wait", [&] {
    return gpuStreamWaitEvent(static_cast<gpuStream_t>(stream), static_cast<gpuEvent_t>(event), 0);
  });
}
LoomError* event_synchronize(void*, int32_t index, void* event) {
  return after_wait(on_device(index, "event_synchronize",
                              [&] { return gpuEventSynchronize(static_cast<gpuEvent_t>(event)); }),
                    index, nullptr, false, false);
}
LoomError* device_synchronize(void*, int32_t index) {
  return after_wait(on_device(index, "device_synchronize", [] { return gpuDeviceSynchronize(); }),
                    index, nullptr, true, true);
}

// Whether `ptr` is page-locked host memory (the runtime's own or registered with it).
bool is_pinned(const void* ptr) {
  gpuPointerAttributes_t attributes;
  if (gpuPointerGetAttributes(&attributes, ptr) != gpuSuccess) {
    (void)gpuGetLastError();  // HIP: memory it does not know is an error
    return false;
  }
  return gpuPointerMemoryType(attributes) == gpuMemoryTypeHost;
}

// A copy to the device from a pinned staging block (Note [Pinned staging]): the source
// is copied into the block and the DMA queued from it, without waiting for the stream.
// False when no block is free (the caller copies the runtime's way).
bool staged_copy_to_device(void* dst, const void* src, size_t nbytes, gpuStream_t stream,
                           int device, gpuError_t* err) {
  void* block = staging().acquire(device, nbytes);
  if (block == nullptr) return false;
  std::memcpy(block, src, nbytes);
  *err = gpuMemcpyAsync(dst, block, nbytes, gpuMemcpyHostToDevice, stream);
  // Without an event to hold the block by (or after an error, which may be an earlier
  // copy's), wait for the stream before the block is reused.
  if (*err != gpuSuccess || !staging().release_after(block, stream, true)) {
    const gpuError_t waited = gpuStreamSynchronize(stream);
    if (*err == gpuSuccess) *err = waited;
    staging().release_after(block, stream, false);
  }
  return true;
}

// Pinned host memory (ABI 1.8, Note [Caching pinned host blocks]): it needs a device, as
// the runtime pins memory for its devices' DMA.
LoomError* host_allocate(void*, size_t nbytes, void** out) {
  return sdk::catch_all([&] {
    if (driver_state().device_count == 0) {
      throw sdk::Error("[" LOOM_GPU_PLATFORM_NAME "] no pinned host memory without a device: " +
                       driver_state().unavailable_reason);
    }
    *out = pinned_host().allocate(nbytes);
    if (*out == nullptr) {
      throw sdk::Error("[" LOOM_GPU_PLATFORM_NAME "] the runtime refused to pin " +
                       std::to_string(PinnedHostAllocator::block_size(nbytes)) +
                       " bytes of host memory");
    }
  });
}

void host_deallocate(void*, void* ptr, size_t) {
  pinned_host().deallocate(ptr);
}

// A copy between pinned host memory and the device that returns once queued: the host
// block is held until the copy has run (or, when no event can say so, the copy is waited
// for). From memory that is not pinned it is as safe as any copy: the runtime stages
// pageable memory before returning, and a copy into it returns when done.
LoomError* copy_async(void*, int32_t index, LoomCopyKind kind, void* dst, const void* src,
                      size_t nbytes, void* stream) {
  return on_device(index, "copy", [&] {
    const auto direction = kind == LOOM_COPY_HOST_TO_DEVICE   ? gpuMemcpyHostToDevice
                           : kind == LOOM_COPY_DEVICE_TO_HOST ? gpuMemcpyDeviceToHost
                                                              : gpuMemcpyDeviceToDevice;
    const auto on = static_cast<gpuStream_t>(stream);
    gpuError_t err = gpuMemcpyAsync(dst, src, nbytes, direction, on);
    if (err != gpuSuccess || kind == LOOM_COPY_DEVICE_TO_DEVICE) return err;
    const void* host = kind == LOOM_COPY_HOST_TO_DEVICE ? src : dst;
    if (pinned_host().record_use(host, index, on) == PinnedHostAllocator::Use::Failed) {
      err = gpuStreamSynchronize(on);
    }
    return err;
  });
}

// A copy to the device releases its source on return (the interface's
// LOOM_DEVICE_COPY_TO_DEVICE_RELEASES_SOURCE): through a pinned staging block, or when
// none is free the runtime stages pageable memory before returning; from pinned memory
// the DMA reads the source later, so that copy waits.
LoomError* copy(void*, int32_t index, LoomCopyKind kind, void* dst, const void* src, size_t nbytes,
                void* stream) {
  return on_device(index, "copy", [&] {
    const auto direction = kind == LOOM_COPY_HOST_TO_DEVICE   ? gpuMemcpyHostToDevice
                           : kind == LOOM_COPY_DEVICE_TO_HOST ? gpuMemcpyDeviceToHost
                                                              : gpuMemcpyDeviceToDevice;
    const auto on = static_cast<gpuStream_t>(stream);
    gpuError_t err = gpuSuccess;
    if (kind == LOOM_COPY_HOST_TO_DEVICE &&
        staged_copy_to_device(dst, src, nbytes, on, index, &err)) {
      return err;
    }
    err = gpuMemcpyAsync(dst, src, nbytes, direction, on);
    if (err == gpuSuccess && kind == LOOM_COPY_HOST_TO_DEVICE && is_pinned(src)) {
      err = gpuStreamSynchronize(on);
    }
    return err;
  });
}

}  // namespace

void check(gpuError_t err, const char* what) {
  if (err != gpuSuccess) {
    throw sdk::Error("[" LOOM_GPU_PLATFORM_NAME "] " + std::string(what) + ": " + describe(err));
  }
}

void check_launch(const char* message, const char* op) {
  if (message != nullptr) {
    throw sdk::Error("[" + std::string(op) + "] " LOOM_GPU_PLATFORM_NAME " kernel: " + message);
  }
}

const DriverState& driver_state() {
  static const DriverState state = [] {
    DriverState s;
    int count = 0;
    const gpuError_t err = gpuGetDeviceCount(&count);
    if (err != gpuSuccess) {
      (void)gpuGetLastError();
      s.unavailable_reason = describe(err);
    } else if (count == 0) {
      s.unavailable_reason = "the runtime reports no device";
    } else {
      s.device_count = count;
    }
    return s;
  }();
  return state;
}

namespace {

// The memory table (loom/device_memory_api.h): the caching allocator's figures.
LoomDeviceMemoryStats to_abi(const MemoryStats& m) {
  LoomDeviceMemoryStats s{};
  s.struct_size = sizeof(s);
  s.allocated_bytes = m.allocated_bytes;
  s.reserved_bytes = m.reserved_bytes;
  s.peak_allocated_bytes = m.peak_allocated_bytes;
  s.peak_reserved_bytes = m.peak_reserved_bytes;
  s.allocations = m.allocations;
  s.cache_hits = m.cache_hits;
  s.driver_allocations = m.driver_allocations;
  s.driver_frees = m.driver_frees;
  return s;
}

// Copies `s` into the caller's struct: an older caller's shorter struct gets its part.
LoomError* fill_stats(const LoomDeviceMemoryStats& s, LoomDeviceMemoryStats* out,
                      const char* what) {
  if (out == nullptr || out->struct_size < sizeof(size_t)) {
    return sdk::make_error(
        LOOM_STATUS_INVALID_ARGUMENT,
        "[" LOOM_GPU_PLATFORM_NAME "] " + std::string(what) + ": no stats struct to fill");
  }
  std::memcpy(reinterpret_cast<char*>(out) + sizeof(size_t),
              reinterpret_cast<const char*>(&s) + sizeof(size_t),
              std::min(out->struct_size, sizeof(s)) - sizeof(size_t));
  return nullptr;
}

LoomError* memory_stats(int32_t index, LoomDeviceMemoryStats* out) {
  if (index < 0 || index >= driver_state().device_count) return bad_index(index);
  return fill_stats(to_abi(allocator().stats(index)), out, "memory_stats");
}

LoomError* memory_empty_cache(int32_t index) {
  if (index >= driver_state().device_count) return bad_index(index);
  return sdk::catch_all([&] { allocator().empty_cache(index < 0 ? -1 : index); });
}

LoomError* memory_reset_peak(int32_t index) {
  if (index < 0 || index >= driver_state().device_count) return bad_index(index);
  return sdk::catch_all([&] { allocator().reset_peak(index); });
}

// The pinned host allocator's figures (Note [Caching pinned host blocks]).
LoomError* memory_host_stats(LoomDeviceMemoryStats* out) {
  return fill_stats(to_abi(pinned_host().stats()), out, "host_stats");
}

const LoomDeviceMemoryApi kMemoryApi = {sizeof(LoomDeviceMemoryApi), &memory_stats,
                                        &memory_empty_cache, &memory_reset_peak,
                                        &memory_host_stats};

}  // namespace

const LoomDeviceMemoryApi* memory_api() {
  return &kMemoryApi;
}

const LoomDeviceInterface* device_interface() {
  static const LoomDeviceInterface device = {
      .struct_size = sizeof(LoomDeviceInterface),
      .ctx = nullptr,
      .device_count = &device_count,
      .get_properties = &get_properties,
      .allocate = &allocate,
      .deallocate = &deallocate,
      .stream_create = &stream_create,
      .stream_destroy = &stream_destroy,
      .stream_synchronize = &stream_synchronize,
      .event_create = &event_create,
      .event_destroy = &event_destroy,
      .event_record = &event_record,
      .event_wait = &event_wait,
      .event_synchronize = &event_synchronize,
      .device_synchronize = &device_synchronize,
      .copy = &copy,
      .flags = LOOM_DEVICE_COPY_TO_DEVICE_RELEASES_SOURCE | LOOM_DEVICE_TAKES_HOST_SCALARS,
      .host_allocate = &host_allocate,
      .host_deallocate = &host_deallocate,
      .copy_async = &copy_async,
  };
  return &device;
}

CachingAllocator& allocator() {
  // Never destroyed: at process exit the runtime may be gone before static destructors
  // run. The plugin's shutdown empties the cache instead.
  static RuntimeMemory* memory = new RuntimeMemory;
  static CachingAllocator* instance = new CachingAllocator(*memory);
  return *instance;
}

namespace {
RuntimeStaging& pinned_runtime() {
  static RuntimeStaging* runtime = new RuntimeStaging;
  return *runtime;
}
}  // namespace

PinnedStaging& staging() {
  // Never destroyed, as the allocator; the plugin's shutdown empties it.
  static PinnedStaging* instance = new PinnedStaging(pinned_runtime());
  return *instance;
}

PinnedHostAllocator& pinned_host() {
  // Never destroyed, as the allocator; the plugin's shutdown empties it.
  static PinnedHostAllocator* instance = new PinnedHostAllocator(pinned_runtime());
  return *instance;
}

void set_device_type(int16_t type) {
  g_device_type = type;
}
int16_t device_type() {
  return g_device_type;
}

InputCheck::InputCheck(int device, gpuStream_t stream, DeferredChecks::Describe describe)
    : slot_(checks().arm(device, stream, std::move(describe))) {}

InputCheck::~InputCheck() {
  if (armed_) checks().launched(slot_);
}

int64_t* InputCheck::slot() const {
  return g_check_words_on_device + 2 * slot_;
}

void use_device(int index) {
  if (index == tls_current_device) return;
  check(gpuSetDevice(index), "select the device");
  tls_current_device = index;
}

}  // namespace loom::gpu
