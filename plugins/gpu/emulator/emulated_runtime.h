// The GPU runtime API of the emulated GPU plugin (Note [The GPU emulator]): the gpu* names
// runtime/gpu_runtime.h maps to CUDA or HIP elsewhere, here implemented on the host.
// Device memory is host memory, every stream runs its work when it is queued (a launch or
// copy has finished when its call returns), events are always complete, and there is one
// device. Kernel launches run on the emulator's block scheduler (kernel_language.h).
#pragma once

#include <cstddef>
#include <string>

enum gpuError_t : int {
  gpuSuccess = 0,
  gpuErrorInvalidValue = 1,
  gpuErrorMemoryAllocation = 2,
  gpuErrorInvalidConfiguration = 9,
  gpuErrorInvalidDevice = 101,
  gpuErrorNotReady = 600,
  gpuErrorLaunchFailure = 719,
};

enum gpuMemcpyKind : int {
  gpuMemcpyHostToDevice = 1,
  gpuMemcpyDeviceToHost = 2,
  gpuMemcpyDeviceToDevice = 3,
};

struct EmulatedStream;
struct EmulatedEvent;
using gpuStream_t = EmulatedStream*;
using gpuEvent_t = EmulatedEvent*;

struct gpuDeviceProp_t {
  char name[256];
  size_t totalGlobalMem;
  int multiProcessorCount;
  int warpSize;
  int maxThreadsPerBlock;
  size_t sharedMemPerBlock;
};

struct gpuPointerAttributes_t {
  int type;  // 0 unknown to the runtime, 1 pinned host memory, 2 device memory
  int device;
  void* devicePointer;
  void* hostPointer;
};
#define gpuMemoryTypeHost 1
#define gpuPointerMemoryType(attributes) ((attributes).type)

#define gpuHostAllocPortable 1u
#define gpuHostAllocMapped 2u
#define gpuStreamNonBlocking 1u
#define gpuEventDefault 0u
#define gpuEventDisableTiming 2u

const char* gpuGetErrorString(gpuError_t err);
const char* gpuGetErrorName(gpuError_t err);
gpuError_t gpuGetLastError();
gpuError_t gpuGetDeviceCount(int* count);
gpuError_t gpuGetDevice(int* device);
gpuError_t gpuSetDevice(int device);
gpuError_t gpuGetDeviceProperties(gpuDeviceProp_t* prop, int device);
gpuError_t gpuDriverGetVersion(int* version);
gpuError_t gpuRuntimeGetVersion(int* version);
gpuError_t gpuMalloc(void** ptr, size_t bytes);
gpuError_t gpuFree(void* ptr);
gpuError_t gpuMallocHost(void** ptr, size_t bytes);
gpuError_t gpuHostAlloc(void** ptr, size_t bytes, unsigned int flags);
gpuError_t gpuFreeHost(void* ptr);
gpuError_t gpuHostGetDevicePointer(void** device, void* host, unsigned int flags);
gpuError_t gpuPointerGetAttributes(gpuPointerAttributes_t* attributes, const void* ptr);
gpuError_t gpuMemcpyAsync(void* dst, const void* src, size_t bytes, gpuMemcpyKind kind,
                          gpuStream_t stream = nullptr);
gpuError_t gpuMemsetAsync(void* dst, int value, size_t bytes, gpuStream_t stream = nullptr);
gpuError_t gpuMemGetInfo(size_t* free_bytes, size_t* total_bytes);
gpuError_t gpuStreamCreateWithFlags(gpuStream_t* stream, unsigned int flags);
gpuError_t gpuStreamDestroy(gpuStream_t stream);
gpuError_t gpuStreamSynchronize(gpuStream_t stream);
gpuError_t gpuStreamWaitEvent(gpuStream_t stream, gpuEvent_t event, unsigned int flags);
gpuError_t gpuEventCreateWithFlags(gpuEvent_t* event, unsigned int flags);
gpuError_t gpuEventDestroy(gpuEvent_t event);
gpuError_t gpuEventRecord(gpuEvent_t event, gpuStream_t stream = nullptr);
gpuError_t gpuEventQuery(gpuEvent_t event);
gpuError_t gpuEventSynchronize(gpuEvent_t event);
gpuError_t gpuEventElapsedTime(float* ms, gpuEvent_t start, gpuEvent_t end);
gpuError_t gpuDeviceSynchronize();

namespace loom::gpu::emu {
// Makes `err` what the next gpuGetLastError returns, and `detail` what gpuGetErrorString
// says of it on this thread.
void record_error(gpuError_t err, std::string detail);
}  // namespace loom::gpu::emu

#include "kernel_language.h"
