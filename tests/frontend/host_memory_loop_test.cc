// The large-block pool in a training-shaped loop through real ops (Note [Large host
// blocks]): a forward, a weight gradient and an in-place update per step hold the pool's
// mapped bytes at the first step's peak for 1,000 steps, and a smaller last batch per
// epoch costs one more block class, once.
#include <gtest/gtest.h>

#include <cmath>

#include "frontend_test_util.h"
#include "loom/core/host_memory.h"

namespace loom {
namespace {

class HostMemoryLoop : public test::LoadedRuntimeTest {};

// One step of a linear layer's training: 256 KiB inputs, a 1 MiB weight and gradient.
void train_step(Tensor& weight, int64_t batch) {
  Tensor x = randn({batch, 1024});
  Tensor scaled = x * 0.5 + 1.0;  // elementwise temporaries of the input's size
  Tensor h = relu(matmul(scaled, weight));
  Tensor grad_h = h - 1.0;
  Tensor grad_weight = matmul(scaled.t(), grad_h);
  weight.sub_(grad_weight * 1e-6);
}

TEST_F(HostMemoryLoop, MappedBytesStayAtTheFirstStepsPeak) {
  empty_cache();
  Tensor weight = randn({1024, 256});
  train_step(weight, 64);
  HostMemoryStats first = host_memory_stats();
  for (int step = 1; step < 1000; ++step) train_step(weight, 64);
  HostMemoryStats last = host_memory_stats();
  EXPECT_EQ(last.peak_reserved_bytes, first.peak_reserved_bytes);
  EXPECT_EQ(last.peak_allocated_bytes, first.peak_allocated_bytes);
  EXPECT_EQ(last.os_maps, first.os_maps);  // every later block came from the cache
  EXPECT_GE(last.cache_hits, first.cache_hits + 999 * 4);
  EXPECT_TRUE(std::isfinite(weight.sum().item<double>()));
}

TEST_F(HostMemoryLoop, ASmallerLastBatchMapsItsClassOnce) {
  empty_cache();
  Tensor weight = randn({1024, 256});
  auto epoch = [&] {
    for (int step = 0; step < 9; ++step) train_step(weight, 64);
    train_step(weight, 40);  // the last batch of the epoch is smaller
  };
  epoch();
  HostMemoryStats first = host_memory_stats();
  for (int i = 1; i < 50; ++i) epoch();
  HostMemoryStats last = host_memory_stats();
  EXPECT_EQ(last.peak_reserved_bytes, first.peak_reserved_bytes);
  EXPECT_EQ(last.os_maps, first.os_maps);
}

}  // namespace
}  // namespace loom
