// The thin mapping header that lets one tree of sources build the CUDA plugin (nvcc,
// CUDA runtime), the ROCm plugin (hipcc, HIP runtime) and the emulated one (g++): every
// runtime call and type the plugin uses is spelled gpu*, and maps to cuda*, hip* or the
// emulator's here. LOOM_GPU_HIP selects HIP (CMake defines it for the ROCm plugin),
// LOOM_GPU_EMULATED the emulator; host-only translation units include the runtime API
// alone, device translation units the whole runtime.
//
// Note [One kernel tree]
// ~~~~~~~~~~~~~~~~~~~~~~
// The kernels are CUDA C++ in the common subset HIP accepts (__global__, threadIdx,
// __syncthreads, and warp shuffles behind one helper, shuffle_down in reduction.cu), so
// the ROCm plugin compiles the very same .cu files with hipcc -x hip. What the two
// platforms do differently lives in this header and in the matmul family (cuBLAS on
// CUDA, loom's tiled GEMM on ROCm, whose Debian packages have no rocBLAS). A third build,
// LOOM_GPU_EMULATED, compiles the same files for the host (Note [The GPU emulator] in
// emulator/block_scheduler.cc); for it a launch is spelled launch_kernel(...) and dynamic
// shared memory LOOM_GPU_DYNAMIC_SHARED.
#pragma once

#include <cstddef>
#include <utility>

#if defined(LOOM_GPU_EMULATED)
// The emulated plugin stands in for the CUDA one (Note [The GPU emulator]).
#include "../emulator/emulated_runtime.h"
#define LOOM_GPU_PLATFORM_NAME "cuda"
#define LOOM_GPU_DEVICE_TYPE "cuda"
#define LOOM_GPU_DISPATCH_KEY LOOM_KEY_CUDA
#define LOOM_GPU_WARP_SIZE_MAX 32
#elif defined(LOOM_GPU_HIP)
#if defined(__HIPCC__)
#include <hip/hip_runtime.h>
#else
#include <hip/hip_runtime_api.h>
#endif
#define LOOM_GPU_PLATFORM_NAME "rocm"
#define LOOM_GPU_DEVICE_TYPE "hip"
#define LOOM_GPU_DISPATCH_KEY LOOM_KEY_HIP
#define LOOM_GPU_WARP_SIZE_MAX 64
using gpuError_t = hipError_t;
using gpuStream_t = hipStream_t;
using gpuEvent_t = hipEvent_t;
using gpuDeviceProp_t = hipDeviceProp_t;
#define gpuSuccess hipSuccess
#define gpuErrorMemoryAllocation hipErrorOutOfMemory
#define gpuGetErrorString hipGetErrorString
#define gpuGetErrorName hipGetErrorName
#define gpuGetLastError hipGetLastError
#define gpuGetDeviceCount hipGetDeviceCount
#define gpuGetDevice hipGetDevice
#define gpuSetDevice hipSetDevice
#define gpuGetDeviceProperties hipGetDeviceProperties
#define gpuDriverGetVersion hipDriverGetVersion
#define gpuRuntimeGetVersion hipRuntimeGetVersion
#define gpuMalloc hipMalloc
#define gpuFree hipFree
#define gpuMallocHost hipHostMalloc
#define gpuFreeHost hipHostFree
#define gpuHostAlloc hipHostMalloc
#define gpuHostAllocMapped hipHostMallocMapped
#define gpuHostAllocPortable hipHostMallocPortable
#define gpuHostGetDevicePointer hipHostGetDevicePointer
#define gpuPointerAttributes_t hipPointerAttribute_t
#define gpuPointerGetAttributes hipPointerGetAttributes
#define gpuMemoryTypeHost hipMemoryTypeHost
#if HIP_VERSION >= 50500000  // ROCm 5.5 added `type`; 6.0 removed `memoryType`
#define gpuPointerMemoryType(attributes) ((attributes).type)
#else
#define gpuPointerMemoryType(attributes) ((attributes).memoryType)
#endif
#define gpuMemcpyAsync hipMemcpyAsync
#define gpuMemsetAsync hipMemsetAsync
#define gpuMemcpyHostToDevice hipMemcpyHostToDevice
#define gpuMemcpyDeviceToHost hipMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define gpuMemGetInfo hipMemGetInfo
#define gpuStreamCreateWithFlags hipStreamCreateWithFlags
#define gpuStreamNonBlocking hipStreamNonBlocking
#define gpuStreamDestroy hipStreamDestroy
#define gpuStreamSynchronize hipStreamSynchronize
#define gpuStreamWaitEvent hipStreamWaitEvent
#define gpuEventCreateWithFlags hipEventCreateWithFlags
#define gpuEventDisableTiming hipEventDisableTiming
#define gpuEventDefault hipEventDefault
#define gpuEventDestroy hipEventDestroy
#define gpuEventRecord hipEventRecord
#define gpuEventQuery hipEventQuery
#define gpuEventSynchronize hipEventSynchronize
#define gpuEventElapsedTime hipEventElapsedTime
#define gpuErrorNotReady hipErrorNotReady
#define gpuDeviceSynchronize hipDeviceSynchronize
#else
#if defined(__CUDACC__)
#include <cuda_runtime.h>
#else
#include <cuda_runtime_api.h>
#endif
#define LOOM_GPU_PLATFORM_NAME "cuda"
#define LOOM_GPU_DEVICE_TYPE "cuda"
#define LOOM_GPU_DISPATCH_KEY LOOM_KEY_CUDA
#define LOOM_GPU_WARP_SIZE_MAX 32
using gpuError_t = cudaError_t;
using gpuStream_t = cudaStream_t;
using gpuEvent_t = cudaEvent_t;
using gpuDeviceProp_t = cudaDeviceProp;
#define gpuSuccess cudaSuccess
#define gpuErrorMemoryAllocation cudaErrorMemoryAllocation
#define gpuGetErrorString cudaGetErrorString
#define gpuGetErrorName cudaGetErrorName
#define gpuGetLastError cudaGetLastError
#define gpuGetDeviceCount cudaGetDeviceCount
#define gpuGetDevice cudaGetDevice
#define gpuSetDevice cudaSetDevice
#define gpuGetDeviceProperties cudaGetDeviceProperties
#define gpuDriverGetVersion cudaDriverGetVersion
#define gpuRuntimeGetVersion cudaRuntimeGetVersion
#define gpuMalloc cudaMalloc
#define gpuFree cudaFree
#define gpuMallocHost cudaMallocHost
#define gpuFreeHost cudaFreeHost
#define gpuHostAlloc cudaHostAlloc
#define gpuHostAllocMapped cudaHostAllocMapped
#define gpuHostAllocPortable cudaHostAllocPortable
#define gpuHostGetDevicePointer cudaHostGetDevicePointer
#define gpuPointerAttributes_t cudaPointerAttributes
#define gpuPointerGetAttributes cudaPointerGetAttributes
#define gpuMemoryTypeHost cudaMemoryTypeHost
#define gpuPointerMemoryType(attributes) ((attributes).type)
#define gpuMemcpyAsync cudaMemcpyAsync
#define gpuMemsetAsync cudaMemsetAsync
#define gpuMemcpyHostToDevice cudaMemcpyHostToDevice
#define gpuMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define gpuMemGetInfo cudaMemGetInfo
#define gpuStreamCreateWithFlags cudaStreamCreateWithFlags
#define gpuStreamNonBlocking cudaStreamNonBlocking
#define gpuStreamDestroy cudaStreamDestroy
#define gpuStreamSynchronize cudaStreamSynchronize
#define gpuStreamWaitEvent cudaStreamWaitEvent
#define gpuEventCreateWithFlags cudaEventCreateWithFlags
#define gpuEventDisableTiming cudaEventDisableTiming
#define gpuEventDefault cudaEventDefault
#define gpuEventDestroy cudaEventDestroy
#define gpuEventRecord cudaEventRecord
#define gpuEventQuery cudaEventQuery
#define gpuEventSynchronize cudaEventSynchronize
#define gpuEventElapsedTime cudaEventElapsedTime
#define gpuErrorNotReady cudaErrorNotReady
#define gpuDeviceSynchronize cudaDeviceSynchronize
#endif

// cuBLAS and cuDNN: the CUDA plugin's; ROCm and the emulator multiply and convolve on
// loom's own kernels.
#if defined(LOOM_GPU_EMULATED) || defined(LOOM_GPU_HIP)
#define LOOM_GPU_VENDOR_LIBRARIES 0
#else
#define LOOM_GPU_VENDOR_LIBRARIES 1
#endif

// A kernel's dynamic shared memory, and its launch: launch_kernel(kernel, grid, block,
// shared_bytes, stream, args...) is kernel<<<grid, block, shared_bytes, stream>>>(args...)
// in a form the emulator's host compiler parses as well.
#if defined(LOOM_GPU_EMULATED)
#define LOOM_GPU_DYNAMIC_SHARED(type, name) \
  type* name = reinterpret_cast<type*>(::loom::gpu::emu::dynamic_shared())
#else
#define LOOM_GPU_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#endif
// launch_kernel<64>(...) launches a kernel written for AMD's 64-lane wavefronts (the MFMA
// GEMM): the hardware decides a warp's width, the emulator runs such a kernel's warps 64
// lanes wide.
#if defined(LOOM_GPU_EMULATED) || defined(__CUDACC__) || defined(__HIPCC__)
namespace loom::gpu {
template <unsigned int kEmulatedWarpSize = 32, typename... Params, typename... Args>
void launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes,
                   gpuStream_t stream, Args&&... args) {
#if defined(LOOM_GPU_EMULATED)
  (void)stream;  // the emulator runs a launch when it is queued
  emu::launch(kernel, emu::LaunchConfig{grid, block, shared_bytes, kEmulatedWarpSize},
              std::forward<Args>(args)...);
#else
  // A .h file is C++ to clang-format, which has no <<< >>>.
  // clang-format off
  kernel<<<grid, block, shared_bytes, stream>>>(std::forward<Args>(args)...);
  // clang-format on
#endif
}
}  // namespace loom::gpu
#endif
