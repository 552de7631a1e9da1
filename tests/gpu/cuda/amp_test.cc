// The amp family on the CUDA plugin (Note [Loss scaling ops]): the multi-tensor unscale
// against the CPU's bits over many gradients of every floating dtype (several launches,
// a non-contiguous one, an inf), and the scale's update; then a GradScaler step on the GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <vector>

#include "cuda_test_util.h"
#include "loom/grad_scaler.h"
#include "loom/optim.h"

namespace loom {
namespace {

using test::CudaOps;

Tensor one(float v, Device device) {
  return full({1}, v, TensorOptions().dtype(ScalarType::Float32).device(device));
}

bool same_bits(const Tensor& gpu, const Tensor& cpu) {
  Tensor g = gpu.to(parse_device("cpu")).contiguous(), c = cpu.contiguous();
  return g.dtype() == c.dtype() && g.numel() == c.numel() &&
         (c.numel() == 0 ||
          std::memcmp(g.data_ptr(), c.data_ptr(), c.numel() * element_size(c.dtype())) == 0);
}

TEST_F(CudaOps, AmpUnscaleMatchesTheCpuOverManyGradients) {
  const Device cpu = parse_device("cpu");
  std::vector<Tensor> host, device;
  const ScalarType dtypes[] = {ScalarType::Float32, ScalarType::Float64, ScalarType::BFloat16,
                               ScalarType::Float16};
  for (int i = 0; i < 120; ++i) {  // more tensors and chunks than one launch takes
    const int64_t n = 1 + (i * 7919) % 200000;
    Tensor t = randn({n}).to(dtypes[i % 4]);
    host.push_back(t);
    device.push_back(t.to(cuda()));
  }
  Tensor strided = randn({64, 33}).t();
  host.push_back(strided);
  device.push_back(strided.contiguous().to(cuda()).t().contiguous().t());
  Tensor found_cpu = one(0, cpu), found_gpu = one(0, cuda());
  _amp_foreach_non_finite_check_and_unscale_(host, found_cpu, one(1.0f / 3.0f, cpu));
  _amp_foreach_non_finite_check_and_unscale_(device, found_gpu, one(1.0f / 3.0f, cuda()));
  for (size_t i = 0; i < host.size(); ++i) EXPECT_TRUE(same_bits(device[i], host[i])) << i;
  EXPECT_EQ(found_gpu.item<float>(), 0.0f);
  device[57].view({-1}).select(0, 0).fill_(std::numeric_limits<float>::infinity());
  _amp_foreach_non_finite_check_and_unscale_(device, found_gpu, one(1.0f, cuda()));
  EXPECT_EQ(found_gpu.item<float>(), 1.0f);
}

TEST_F(CudaOps, AmpUpdateScaleAndAGradScalerStepRunOnTheDevice) {
  Tensor scale = one(1024, cuda());
  Tensor tracker = zeros({1}, TensorOptions().dtype(ScalarType::Int32).device(cuda()));
  _amp_update_scale_(scale, tracker, one(0, cuda()), 2.0, 0.5, 1);
  EXPECT_EQ(scale.item<float>(), 2048.0f);
  _amp_update_scale_(scale, tracker, one(1, cuda()), 2.0, 0.5, 1);
  EXPECT_EQ(scale.item<float>(), 1024.0f);

  Tensor w = randn({8}, TensorOptions().device(cuda()));
  w.requires_grad_();
  optim::SGD sgd({w}, optim::SGDOptions(0.1));
  amp::GradScaler scaler({.init_scale = 256});
  scaler.scale(w.pow(2).sum()).backward();
  const Tensor before = w.detach().clone();
  EXPECT_TRUE(scaler.step(sgd));
  test::expect_close(w.detach(), (before - 0.2 * before).to(parse_device("cpu")), 1e-6);
  scaler.update();
}

}  // namespace
}  // namespace loom
