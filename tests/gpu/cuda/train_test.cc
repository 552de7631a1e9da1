// Training on the CUDA plugin: steps of a small CNN (convolutions, pooling, linear layers,
// cross entropy, backward, Adam) on the GPU against the same steps on the CPU, so every
// family a `loom train` step uses is checked in one place.
#include <gtest/gtest.h>

#include <vector>

#include "cuda_test_util.h"
#include "loom/nn.h"
#include "loom/optim.h"

namespace loom {
namespace {

using test::CudaOps;
using test::expect_close;

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
    gpu_net->to("cuda:0");
    Tensor x = randn({16, 1, 28, 28}), target = randint(10, {16});
    optim::Adam cpu_adam(cpu_net->parameters(), optim::AdamOptions(1e-2));
    optim::Adam gpu_adam(gpu_net->parameters(), optim::AdamOptions(1e-2).fused(fused));
    nn::CrossEntropyLoss criterion;
    for (int step = 0; step < 3; ++step) {
      cpu_adam.zero_grad();
      gpu_adam.zero_grad();
      Tensor cpu_loss = criterion(cpu_net(x), target);
      Tensor gpu_loss = criterion(gpu_net(x.to(cuda())), target.to(cuda()));
      expect_close(gpu_loss, cpu_loss, 1e-4);
      cpu_loss.backward();
      gpu_loss.backward();
      cpu_adam.step();
      gpu_adam.step();
    }
    const std::vector<Tensor> cpu_params = cpu_net->parameters(),
                              gpu_params = gpu_net->parameters();
    ASSERT_EQ(gpu_params.size(), cpu_params.size());
    for (size_t i = 0; i < cpu_params.size(); ++i) {
      SCOPED_TRACE(testing::Message() << "parameter " << i);
      EXPECT_EQ(gpu_params[i].device(), cuda());
      expect_close(gpu_params[i], cpu_params[i], 1e-4);
    }
  }
}

}  // namespace
}  // namespace loom
