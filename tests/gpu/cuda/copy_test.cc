// The copy family on the CUDA plugin: copies to the device that do not wait for queued
// kernels (Note [Pinned staging]) and non-blocking copies of pinned memory.
#include <gtest/gtest.h>

#include <tuple>

#include "cuda_test_util.h"

namespace loom {
namespace {

using test::CudaOps;
using test::expect_close;

// Note [Pinned staging]: an 800 KB batch copied from pageable host memory is staged, so
// the copy returns while a long product queued before it still runs (the runtime's own
// path would wait for it), and the batch arrives intact.
TEST_F(CudaOps, ACopyToTheDeviceDoesNotWaitForKernelsQueuedBeforeIt) {
  Tensor a = randn({8192, 8192}, TensorOptions().device(cuda()));
  Tensor batch = randn({256, 1, 28, 28});
  synchronize(cuda());
  Tensor product = a.mm(a);  // about 20 ms on an H100
  Tensor on_device = batch.to(cuda());
  const bool product_still_running = cudaStreamQuery(nullptr) == cudaErrorNotReady;
  EXPECT_TRUE(product_still_running) << "the copy waited for the product queued before it";
  expect_close(on_device, batch, 0);
}

// Note [Pinned host memory]: pinned tensors come from the plugin's cache; a non-blocking
// copy either way returns while a product queued before it still runs, and the host
// reads the copy back after synchronising. The pinned source is dropped at once: its
// block is held until the copy has run (Note [Caching pinned host blocks]).
//
// Note [No first use in a timed window]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// What is checked is the steady state, as in a training loop: the first use of a size
// may wait for the device for reasons of the driver's, not loom's. Pinning a new block
// (cudaHostAlloc; HIP's hipHostMalloc synchronises the device every time), a device
// segment from cudaMalloc, a kernel's lazy module load or the driver's first staging
// buffer for a pageable upload (the `* 2.0`) can each wait for the product, and in the
// full suite whether one happens depends on what earlier tests left cached. So the round
// trip runs once before the product is queued, and the window asserts its precondition:
// neither cache asked the driver for memory in it.
TEST_F(CudaOps, NonBlockingCopiesOfPinnedMemoryDoNotWait) {
  Tensor batch = randn({256, 1, 28, 28});
  Tensor pinned = batch.pin_memory();
  EXPECT_TRUE(pinned.is_pinned());
  EXPECT_FALSE(batch.is_pinned());
  expect_close(pinned, batch, 0);
  EXPECT_GE(pinned_memory_stats("cuda").allocated_bytes, 256 * 28 * 28 * 4);
  auto round_trip = [&] {
    Tensor on_device = batch.pin_memory().to(cuda(), /*non_blocking=*/true);
    Tensor back = empty({256, 1, 28, 28}, TensorOptions().pinned_memory(true));
    back.copy_(on_device * 2.0, /*non_blocking=*/true);
    return std::pair<Tensor, Tensor>(on_device, back);
  };
  {
    auto [on_device, back] = round_trip();  // caches what the window reuses
    synchronize(cuda());
    expect_close(back, batch * 2.0, 0);
  }
  Tensor a = randn({8192, 8192}, TensorOptions().device(cuda()));
  synchronize(cuda());
  Tensor product = a.mm(a);  // about 20 ms on an H100
  const MemoryStats pinned_before = pinned_memory_stats("cuda");
  const MemoryStats device_before = memory_stats(cuda());
  auto [on_device, back] = round_trip();
  const bool product_still_running = cudaStreamQuery(nullptr) == cudaErrorNotReady;
  EXPECT_EQ(pinned_memory_stats("cuda").driver_allocations, pinned_before.driver_allocations)
      << "the window pinned new memory (Note [No first use in a timed window])";
  EXPECT_EQ(memory_stats(cuda()).driver_allocations, device_before.driver_allocations)
      << "the window took a new device segment (Note [No first use in a timed window])";
  EXPECT_TRUE(product_still_running) << "a non-blocking copy waited for the product";
  synchronize(cuda());
  expect_close(back, batch * 2.0, 0);
  // a blocking copy into pinned memory waits
  Tensor again = empty({256, 1, 28, 28}, TensorOptions().pinned_memory(true));
  again.copy_(on_device);
  expect_close(again, batch, 0);
}

}  // namespace
}  // namespace loom
