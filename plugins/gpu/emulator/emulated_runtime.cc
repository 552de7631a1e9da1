// The emulated GPU runtime (Note [The GPU emulator]): one device whose memory is host
// memory, streams that run their work when it is queued, events that record the host
// clock, and CUDA's error codes with the emulator's own message for a failed launch.
#include "emulated_runtime.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

namespace {

constexpr size_t kTotalMemory = size_t{16} << 30;  // what the device claims to have
constexpr size_t kAlignment = 256;                 // cudaMalloc's

struct Allocations {
  std::mutex mutex;
  std::map<uintptr_t, size_t> device, pinned;  // start -> bytes
  size_t device_bytes = 0;
};

Allocations& allocations() {
  static Allocations* a = new Allocations;  // outlives the plugin's static destructors
  return *a;
}

thread_local gpuError_t g_last_error = gpuSuccess;
thread_local std::string g_error_detail;
thread_local int g_device = 0;

// A failed call: err is the next gpuGetLastError, described by gpuGetErrorString's text.
gpuError_t fail(gpuError_t err) {
  loom::gpu::emu::record_error(err, {});
  return err;
}

bool contains(const std::map<uintptr_t, size_t>& blocks, const void* ptr) {
  const auto address = reinterpret_cast<uintptr_t>(ptr);
  auto it = blocks.upper_bound(address);
  if (it == blocks.begin()) return false;
  --it;
  return address < it->first + std::max<size_t>(it->second, 1);
}

gpuError_t allocate(void** ptr, size_t bytes, std::map<uintptr_t, size_t>& blocks, bool device) {
  if (ptr == nullptr) return fail(gpuErrorInvalidValue);
  *ptr = nullptr;
  if (bytes == 0) return gpuSuccess;
  Allocations& a = allocations();
  std::lock_guard<std::mutex> lock(a.mutex);
  if (device && bytes > kTotalMemory - a.device_bytes) return fail(gpuErrorMemoryAllocation);
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* block = std::aligned_alloc(kAlignment, rounded);
  if (block == nullptr) return fail(gpuErrorMemoryAllocation);
  blocks[reinterpret_cast<uintptr_t>(block)] = bytes;
  if (device) a.device_bytes += bytes;
  *ptr = block;
  return gpuSuccess;
}

gpuError_t release(void* ptr, std::map<uintptr_t, size_t>& blocks, bool device) {
  if (ptr == nullptr) return gpuSuccess;
  Allocations& a = allocations();
  std::lock_guard<std::mutex> lock(a.mutex);
  auto it = blocks.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == blocks.end()) return fail(gpuErrorInvalidValue);
  if (device) a.device_bytes -= it->second;
  blocks.erase(it);
  std::free(ptr);
  return gpuSuccess;
}

}  // namespace

struct EmulatedStream {
  unsigned int flags;
};
struct EmulatedEvent {
  std::chrono::steady_clock::time_point recorded;
};

namespace loom::gpu::emu {
void record_error(gpuError_t err, std::string detail) {
  g_last_error = err;
  g_error_detail = std::move(detail);
}
}  // namespace loom::gpu::emu

const char* gpuGetErrorName(gpuError_t err) {
  switch (err) {
    case gpuSuccess:
      return "cudaSuccess";
    case gpuErrorInvalidValue:
      return "cudaErrorInvalidValue";
    case gpuErrorMemoryAllocation:
      return "cudaErrorMemoryAllocation";
    case gpuErrorInvalidConfiguration:
      return "cudaErrorInvalidConfiguration";
    case gpuErrorInvalidDevice:
      return "cudaErrorInvalidDevice";
    case gpuErrorNotReady:
      return "cudaErrorNotReady";
    case gpuErrorLaunchFailure:
      return "cudaErrorLaunchFailure";
  }
  return "cudaErrorUnknown";
}

const char* gpuGetErrorString(gpuError_t err) {
  if (err != gpuSuccess && !g_error_detail.empty()) return g_error_detail.c_str();
  switch (err) {
    case gpuSuccess:
      return "no error";
    case gpuErrorInvalidValue:
      return "invalid argument";
    case gpuErrorMemoryAllocation:
      return "out of memory (the emulated device has 16 GiB)";
    case gpuErrorInvalidConfiguration:
      return "invalid configuration argument";
    case gpuErrorInvalidDevice:
      return "invalid device ordinal";
    case gpuErrorNotReady:
      return "device not ready";
    case gpuErrorLaunchFailure:
      return "unspecified launch failure";
  }
  return "unknown error";
}

gpuError_t gpuGetLastError() {
  const gpuError_t err = g_last_error;
  g_last_error = gpuSuccess;
  return err;
}

gpuError_t gpuGetDeviceCount(int* count) {
  *count = 1;
  return gpuSuccess;
}

gpuError_t gpuGetDevice(int* device) {
  *device = g_device;
  return gpuSuccess;
}

gpuError_t gpuSetDevice(int device) {
  if (device != 0) return fail(gpuErrorInvalidDevice);
  g_device = device;
  return gpuSuccess;
}

gpuError_t gpuGetDeviceProperties(gpuDeviceProp_t* prop, int device) {
  if (device != 0) return fail(gpuErrorInvalidDevice);
  *prop = gpuDeviceProp_t{};
  std::strncpy(prop->name, "loom GPU emulator", sizeof(prop->name) - 1);
  prop->totalGlobalMem = kTotalMemory;
  prop->multiProcessorCount = 1;
  prop->warpSize = 32;
  prop->maxThreadsPerBlock = 1024;
  prop->sharedMemPerBlock = 48 * 1024;
  return gpuSuccess;
}

gpuError_t gpuDriverGetVersion(int* version) {
  *version = 13000;
  return gpuSuccess;
}

gpuError_t gpuRuntimeGetVersion(int* version) {
  *version = 13000;
  return gpuSuccess;
}

gpuError_t gpuMalloc(void** ptr, size_t bytes) {
  return allocate(ptr, bytes, allocations().device, true);
}

gpuError_t gpuFree(void* ptr) {
  return release(ptr, allocations().device, true);
}

gpuError_t gpuMallocHost(void** ptr, size_t bytes) {
  return allocate(ptr, bytes, allocations().pinned, false);
}

gpuError_t gpuHostAlloc(void** ptr, size_t bytes, unsigned int /*flags*/) {
  return allocate(ptr, bytes, allocations().pinned, false);
}

gpuError_t gpuFreeHost(void* ptr) {
  return release(ptr, allocations().pinned, false);
}

gpuError_t gpuHostGetDevicePointer(void** device, void* host, unsigned int /*flags*/) {
  *device = host;  // mapped memory: the device sees the same bytes
  return gpuSuccess;
}

gpuError_t gpuPointerGetAttributes(gpuPointerAttributes_t* attributes, const void* ptr) {
  Allocations& a = allocations();
  std::lock_guard<std::mutex> lock(a.mutex);
  *attributes = gpuPointerAttributes_t{};
  if (contains(a.pinned, ptr)) {
    attributes->type = 1;
  } else if (contains(a.device, ptr)) {
    attributes->type = 2;
  }
  attributes->devicePointer = const_cast<void*>(ptr);
  attributes->hostPointer = const_cast<void*>(ptr);
  return gpuSuccess;
}

gpuError_t gpuMemcpyAsync(void* dst, const void* src, size_t bytes, gpuMemcpyKind /*kind*/,
                          gpuStream_t /*runs now*/) {
  if (bytes > 0) std::memmove(dst, src, bytes);
  return gpuSuccess;
}

gpuError_t gpuMemsetAsync(void* dst, int value, size_t bytes, gpuStream_t /*runs now*/) {
  if (bytes > 0) std::memset(dst, value, bytes);
  return gpuSuccess;
}

gpuError_t gpuMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  Allocations& a = allocations();
  std::lock_guard<std::mutex> lock(a.mutex);
  *total_bytes = kTotalMemory;
  *free_bytes = kTotalMemory - a.device_bytes;
  return gpuSuccess;
}

gpuError_t gpuStreamCreateWithFlags(gpuStream_t* stream, unsigned int flags) {
  *stream = new EmulatedStream{flags};
  return gpuSuccess;
}

gpuError_t gpuStreamDestroy(gpuStream_t stream) {
  delete stream;
  return gpuSuccess;
}

gpuError_t gpuStreamSynchronize(gpuStream_t /*its work has run*/) {
  return gpuSuccess;
}

gpuError_t gpuStreamWaitEvent(gpuStream_t, gpuEvent_t, unsigned int) {
  return gpuSuccess;
}

gpuError_t gpuEventCreateWithFlags(gpuEvent_t* event, unsigned int /*flags*/) {
  *event = new EmulatedEvent{std::chrono::steady_clock::now()};
  return gpuSuccess;
}

gpuError_t gpuEventDestroy(gpuEvent_t event) {
  delete event;
  return gpuSuccess;
}

gpuError_t gpuEventRecord(gpuEvent_t event, gpuStream_t /*its work has run*/) {
  event->recorded = std::chrono::steady_clock::now();
  return gpuSuccess;
}

gpuError_t gpuEventQuery(gpuEvent_t /*complete when recorded*/) {
  return gpuSuccess;
}

gpuError_t gpuEventSynchronize(gpuEvent_t /*complete when recorded*/) {
  return gpuSuccess;
}

gpuError_t gpuEventElapsedTime(float* ms, gpuEvent_t start, gpuEvent_t end) {
  *ms = std::chrono::duration<float, std::milli>(end->recorded - start->recorded).count();
  return gpuSuccess;
}

gpuError_t gpuDeviceSynchronize() {
  return gpuSuccess;
}
