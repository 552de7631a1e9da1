// Training on the CUDA plugin: steps of a small CNN (convolutions, pooling, linear layers,
// cross entropy, backward, Adam) on the GPU against the same steps on the CPU, so every
// family a `loom train` step uses is checked in one place.
#include <gtest/gtest.h>

#include "cuda_test_util.h"
#include "loom/nn.h"
#include "loom/optim.h"

namespace loom {
namespace {

using test::CudaOps;

nn::Sequential small_cnn() {
  manual_seed(0);  // the same initial parameters each time
  return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 8, 3).padding(1)), nn::ReLU(),
                        nn::MaxPool2d(2), nn::Conv2d(nn::Conv2dOptions(8, 16, 3).padding(1)),
                        nn::ReLU(), nn::MaxPool2d(2), nn::Flatten(), nn::Linear(16 * 7 * 7, 32),
                        nn::ReLU(), nn::Linear(32, 10));
}

TEST_F(CudaOps, CnnTrainingStepsMatchTheCpu) {
  for (const bool fused : {false, true}) {  // Note [Fused Adam]: one kernel on the GPU
    SCOPED_TRACE(fused ? "fused Adam" : "Adam");
    nn::Sequential cpu_net = small_cnn(), gpu_net = small_cnn();
    Tensor x = randn({16, 1, 28, 28}), target = randint(10, {16});
    test::expect_training_matches_the_cpu(cpu_net, gpu_net, x, target,
                                          optim::AdamOptions().fused(fused), 1e-4);
  }
}

}  // namespace
}  // namespace loom
