// The random family on the CUDA plugin: the CPU's values for the same seed.
#include <gtest/gtest.h>

#include <vector>

#include "cuda_test_util.h"

namespace loom {
namespace {

using test::CudaOps;
using test::expect_close;

TEST_F(CudaOps, RandomTensorsEqualTheCpusForTheSameSeed) {
  manual_seed(1234);
  Tensor cpu = rand({1000});
  Tensor cpu_normal = randn({999});
  manual_seed(1234);
  Tensor gpu = rand({1000}, TensorOptions().device(cuda()));
  Tensor gpu_normal = randn({999}, TensorOptions().device(cuda()));
  expect_close(gpu, cpu, 0);
  expect_close(gpu_normal, cpu_normal, 1e-6);
}

// bernoulli of a tensor, dropout, random_ over a range (randint) and randperm (its keys
// sorted by the sort kernel): the CPU's values for the same seed; a probability outside
// [0, 1] refused at the next wait.
TEST_F(CudaOps, RandomOpsOfTensorsAndIntegersEqualTheCpus) {
  Tensor p = rand({40, 7}), x = randn({40, 7});  // made before seeding
  auto draw = [](const Tensor& probs, const Tensor& in, Device dev) {
    manual_seed(99);
    std::vector<Tensor> r;
    r.push_back(probs.bernoulli());
    r.push_back(dropout(in, 0.3, true));
    r.push_back(randint(-5, 17, {300}, TensorOptions().device(dev)));
    r.push_back(randint(0, 100, {64}, TensorOptions().dtype(ScalarType::Float32).device(dev)));
    r.push_back(randperm(1000, TensorOptions().dtype(ScalarType::Int64).device(dev)));
    r.push_back(randperm(5, TensorOptions().dtype(ScalarType::Int32).device(dev)));
    return r;
  };
  const std::vector<Tensor> cpu = draw(p, x, parse_device("cpu"));
  const std::vector<Tensor> gpu = draw(p.to(cuda()), x.to(cuda()), cuda());
  ASSERT_EQ(cpu.size(), gpu.size());
  for (size_t i = 0; i < cpu.size(); ++i) {
    SCOPED_TRACE(i);
    expect_close(gpu[i], cpu[i], 1e-6);
  }
  expect_close(dropout(x.to(cuda()), 0.3, false), x, 0);
  Tensor bad = (p * 2.0).to(cuda());
  test::expect_error(
      [&] {
        (void)bad.bernoulli();
        synchronize(cuda());
      },
      "loom::bernoulli", "expected probabilities in [0, 1]");
}

}  // namespace
}  // namespace loom
