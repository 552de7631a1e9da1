// The GPU emulator itself (Note [The GPU emulator] in plugins/gpu/emulator/block_scheduler.cc):
// barriers, warp shuffles, shared memory, atomics and the built-in indices behave as on a
// GPU, and what would hang or fail there (a barrier not every thread reaches, a launch
// past the limits) is a failed launch that names it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/gemm_math.h"
#include "runtime/gpu_runtime.h"

namespace loom::gpu {
namespace {

std::string last_error_message() {
  return gpuGetErrorString(gpuGetLastError());
}

// Every thread writes its slot, then reads its neighbour's after the barrier.
__global__ void rotate_kernel(int* out) {
  __shared__ int values[256];
  const unsigned int t = threadIdx.x;
  values[t] = static_cast<int>(t + 1000 * blockIdx.x);
  __syncthreads();
  out[blockIdx.x * blockDim.x + t] = values[(t + 1) % blockDim.x];
}

TEST(GpuEmulator, AfterABarrierEveryThreadReadsWhatTheOthersWrote) {
  std::vector<int> out(3 * 256);
  launch_kernel(rotate_kernel, 3, 256, 0, nullptr, out.data());
  ASSERT_EQ(gpuGetLastError(), gpuSuccess);
  for (int b = 0; b < 3; ++b) {
    for (int t = 0; t < 256; ++t) EXPECT_EQ(out[b * 256 + t], (t + 1) % 256 + 1000 * b) << t;
  }
}

// Sums each segment of `width` lanes into its first lane, as a reduction does.
template <typename T>
__global__ void segment_sum_kernel(T* out, int width) {
  T v = static_cast<T>(threadIdx.x);
  for (int offset = width / 2; offset > 0; offset /= 2) {
    v += __shfl_down_sync(0xffffffffu, v, offset, width);
  }
  out[threadIdx.x] = v;
}

TEST(GpuEmulator, ShufflesDownSumEverySegmentOfAWarpIntoItsFirstLane) {
  for (int width : {32, 8, 2}) {
    std::vector<double> out(40);  // the second warp has 8 lanes
    launch_kernel(segment_sum_kernel<double>, 1, 40, 0, nullptr, out.data(), width);
    ASSERT_EQ(gpuGetLastError(), gpuSuccess);
    for (int first = 0; first + width <= 40; first += width) {
      if (first / 32 != (first + width - 1) / 32) continue;  // a segment split by a warp end
      const double expected = width * first + width * (width - 1) / 2.0;
      EXPECT_EQ(out[first], expected) << "width " << width << ", lane " << first;
    }
  }
}

__global__ void butterfly_kernel(int* out) {
  int v = static_cast<int>(threadIdx.x);
  for (int mask = 16; mask > 0; mask /= 2) v += __shfl_xor_sync(0xffffffffu, v, mask);
  out[threadIdx.x] = v;
}

TEST(GpuEmulator, AnXorButterflyGivesEveryLaneTheWarpsTotal) {
  std::vector<int> out(64);
  launch_kernel(butterfly_kernel, 1, 64, 0, nullptr, out.data());
  ASSERT_EQ(gpuGetLastError(), gpuSuccess);
  for (int t = 0; t < 64; ++t) EXPECT_EQ(out[t], t < 32 ? 496 : 1520) << t;
}

// Threads that have exited do not hold a barrier shut (as on a GPU).
__global__ void early_exit_kernel(int* out) {
  __shared__ int total;
  if (threadIdx.x == 0) total = 0;
  __syncthreads();
  if (threadIdx.x >= 10) return;
  atomicAdd(&total, 1);
  __syncthreads();
  if (threadIdx.x == 0) *out = total;
}

TEST(GpuEmulator, ThreadsThatHaveExitedDoNotHoldABarrierShut) {
  int out = 0;
  launch_kernel(early_exit_kernel, 1, 128, 0, nullptr, &out);
  ASSERT_EQ(gpuGetLastError(), gpuSuccess);
  EXPECT_EQ(out, 10);
}

// Half the warp waits at __syncthreads, the other half in a shuffle: a GPU hangs.
__global__ void divergent_kernel(int* out) {
  if (threadIdx.x < 16) {
    __syncthreads();
  } else {
    out[threadIdx.x] = __shfl_down_sync(0xffffffffu, 1, 1);
  }
}

TEST(GpuEmulator, ABarrierThatNotEveryThreadReachesIsAFailedLaunchNamingWhoWaitsWhere) {
  std::vector<int> out(32);
  launch_kernel(divergent_kernel, 2, 32, 0, nullptr, out.data());
  const gpuError_t err = gpuGetLastError();
  EXPECT_EQ(err, gpuErrorLaunchFailure);
  const std::string message = gpuGetErrorString(err);
  EXPECT_NE(
      message.find("[gpu emulator] block (0, 0, 0) of 32 threads never finishes: 16 wait at "
                   "__syncthreads, 16 at a warp exchange (a shuffle or an MFMA), 0 have exited"),
      std::string::npos)
      << message;
  EXPECT_EQ(gpuGetLastError(), gpuSuccess);  // read once, as CUDA's
  // the next launch runs as if nothing had happened
  std::vector<int> rotated(256);
  launch_kernel(rotate_kernel, 1, 256, 0, nullptr, rotated.data());
  EXPECT_EQ(gpuGetLastError(), gpuSuccess);
  EXPECT_EQ(rotated[255], 0);
}

// Each wavefront adds the product of its own 16 x 16 A and B to its C through one MFMA,
// every lane giving and taking its elements as Note [MFMA fragments] lays them out.
__global__ void mfma_kernel(const float* a, const float* b, float* c) {
  const int lane = static_cast<int>(threadIdx.x % kMfmaWaveSize);
  const int matrix = static_cast<int>(threadIdx.x / kMfmaWaveSize) * 256;
  float ra[4], rb[4], rc[4];
  for (int e = 0; e < 4; ++e) {
    const TileSlot sa = mfma_a_element(lane, e), sb = mfma_b_element(lane, e),
                   sc = mfma_accumulator_element(lane, e);
    ra[e] = a[matrix + sa.row * 16 + sa.col];
    rb[e] = b[matrix + sb.row * 16 + sb.col];
    rc[e] = c[matrix + sc.row * 16 + sc.col];
  }
  emu::matrix_core_product_16x16x16(ra, rb, rc);
  for (int e = 0; e < 4; ++e) {
    const TileSlot sc = mfma_accumulator_element(lane, e);
    c[matrix + sc.row * 16 + sc.col] = rc[e];
  }
}

TEST(GpuEmulator, AnMfmaAddsEachWavefrontsProductInTheInstructionsLaneLayout) {
  std::vector<float> a(512), b(512), c(512, 1.0f);
  for (int i = 0; i < 512; ++i) {
    a[i] = static_cast<float>(i % 7) - 3.0f;  // small integers: every sum exact
    b[i] = static_cast<float>(i % 5) - 2.0f;
  }
  launch_kernel<kMfmaWaveSize>(mfma_kernel, 1, 128, 0, nullptr, a.data(), b.data(), c.data());
  ASSERT_EQ(gpuGetLastError(), gpuSuccess);
  for (int m = 0; m < 2; ++m) {
    for (int i = 0; i < 16; ++i) {
      for (int j = 0; j < 16; ++j) {
        float expected = 1.0f;
        for (int k = 0; k < 16; ++k) expected += a[m * 256 + i * 16 + k] * b[m * 256 + k * 16 + j];
        EXPECT_EQ(c[m * 256 + i * 16 + j], expected) << "matrix " << m << " at " << i << ", " << j;
      }
    }
  }
  // refused: 32-lane warps, a wavefront only half there, warps of another width
  launch_kernel(mfma_kernel, 1, 64, 0, nullptr, a.data(), b.data(), c.data());
  EXPECT_NE(last_error_message().find("an MFMA instruction in a kernel launched with 32-lane "
                                      "warps"),
            std::string::npos);
  launch_kernel<kMfmaWaveSize>(mfma_kernel, 1, 96, 0, nullptr, a.data(), b.data(), c.data());
  EXPECT_NE(last_error_message().find("an MFMA instruction that only 32 of its wavefront's 64 "
                                      "lanes reach"),
            std::string::npos);
  launch_kernel<48>(rotate_kernel, 1, 96, 0, nullptr, std::vector<int>(96).data());
  EXPECT_NE(last_error_message().find("warps of 48 lanes (32, or 64 for AMD's wavefronts)"),
            std::string::npos);
}

__global__ void index_kernel(int* seen) {
  const unsigned int block = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  const unsigned int thread = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  atomicAdd(&seen[block * blockDim.x * blockDim.y * blockDim.z + thread], 1);
}

TEST(GpuEmulator, EveryThreadOfAThreeDimensionalGridRunsOnce) {
  const dim3 grid(2, 3, 2), block(4, 2, 3);
  std::vector<int> seen(12 * 24);
  launch_kernel(index_kernel, grid, block, 0, nullptr, seen.data());
  ASSERT_EQ(gpuGetLastError(), gpuSuccess);
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], 1) << i;
}

__global__ void read_shared_kernel(int* out) {
  LOOM_GPU_DYNAMIC_SHARED(int, words);
  out[threadIdx.x] = words[threadIdx.x];
  words[threadIdx.x] = 7;  // not seen by the next block
}

TEST(GpuEmulator, DynamicSharedMemoryStartsAsGarbageInEveryBlock) {
  std::vector<int> out(32);
  launch_kernel(read_shared_kernel, 2, 32, 32 * sizeof(int), nullptr, out.data());
  ASSERT_EQ(gpuGetLastError(), gpuSuccess);
  for (int v : out) EXPECT_EQ(v, -1);
}

__global__ void count_kernel(float* total, int64_t step) {
  atomicAdd(total, static_cast<float>(step));
}

TEST(GpuEmulator, AtomicsAddUpOverEveryBlockAndArgumentsConvertAsInALaunch) {
  float total = 0;
  launch_kernel(count_kernel, 4, 256, 0, nullptr, &total, 2);  // an int for an int64_t
  ASSERT_EQ(gpuGetLastError(), gpuSuccess);
  EXPECT_EQ(total, 2048.0f);
}

TEST(GpuEmulator, ALaunchPastTheLimitsIsRefusedNamingWhatWasAsked) {
  int out = 0;
  launch_kernel(early_exit_kernel, 1, 2048, 0, nullptr, &out);
  EXPECT_EQ(last_error_message(),
            "[gpu emulator] a launch with a block of (2048, 1, 1) threads (at most 1024, and z at "
            "most 64)");
  launch_kernel(early_exit_kernel, dim3(1, 70000), 32, 0, nullptr, &out);
  EXPECT_EQ(last_error_message(),
            "[gpu emulator] a launch with a grid of (1, 70000, 1) blocks (each at least 1, y and "
            "z at most 65535)");
  std::vector<int> words(32);
  launch_kernel(read_shared_kernel, 1, 32, 64 * 1024, nullptr, words.data());
  EXPECT_EQ(last_error_message(),
            "[gpu emulator] a launch with 65536 bytes of dynamic shared memory (at most 49152)");
  EXPECT_EQ(out, 0);  // none of them ran
}

TEST(GpuEmulator, MemoryIsTheHostsAndPinnedBlocksAreKnownAsSuch) {
  void* device = nullptr;
  void* pinned = nullptr;
  ASSERT_EQ(gpuMalloc(&device, 1000), gpuSuccess);
  ASSERT_EQ(gpuHostAlloc(&pinned, 1000, gpuHostAllocPortable), gpuSuccess);
  gpuPointerAttributes_t attributes;
  ASSERT_EQ(gpuPointerGetAttributes(&attributes, static_cast<char*>(pinned) + 999), gpuSuccess);
  EXPECT_EQ(gpuPointerMemoryType(attributes), gpuMemoryTypeHost);
  ASSERT_EQ(gpuPointerGetAttributes(&attributes, device), gpuSuccess);
  EXPECT_NE(gpuPointerMemoryType(attributes), gpuMemoryTypeHost);
  ASSERT_EQ(gpuMemsetAsync(device, 3, 1000), gpuSuccess);
  ASSERT_EQ(gpuMemcpyAsync(pinned, device, 1000, gpuMemcpyDeviceToHost), gpuSuccess);
  EXPECT_EQ(static_cast<unsigned char*>(pinned)[999], 3);
  EXPECT_EQ(gpuFree(device), gpuSuccess);
  EXPECT_EQ(gpuFree(device), gpuErrorInvalidValue);  // not twice
  (void)gpuGetLastError();
  EXPECT_EQ(gpuFreeHost(pinned), gpuSuccess);
  size_t free_bytes = 0, total_bytes = 0;
  ASSERT_EQ(gpuMemGetInfo(&free_bytes, &total_bytes), gpuSuccess);
  EXPECT_EQ(free_bytes, total_bytes);
}

}  // namespace
}  // namespace loom::gpu
