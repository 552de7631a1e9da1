// The foreach family on the CUDA plugin: the fused Adam and AdamW step (Note [Fused Adam])
// against the CPU's (the op library's decomposition, the single-tensor update's bits),
// over parameters of several sizes and dtypes, a non-contiguous one, step counts on the
// cpu and on the device, AMSGrad, maximize, loss scaling and a skipped step.
#include <gtest/gtest.h>

#include <vector>

#include "cuda_test_util.h"

namespace loom {
namespace {

using test::CudaOps;
using test::expect_close;

std::vector<Tensor> on(const std::vector<Tensor>& list, Device device) {
  std::vector<Tensor> out;
  for (const Tensor& t : list) out.push_back(t.to(device));
  return out;
}

TEST_F(CudaOps, FusedAdamMatchesTheCpu) {
  const std::vector<std::vector<int64_t>> shapes = {{300, 70}, {5}, {}, {200000}};
  for (bool decoupled : {false, true}) {
    for (bool amsgrad : {false, true}) {
      std::vector<Tensor> params, grads, exp_avgs, exp_avg_sqs, max_sqs, steps;
      for (const auto& shape : shapes) {
        params.push_back(randn(shape));
        grads.push_back(randn(shape));
        exp_avgs.push_back(randn(shape) * 0.1);
        exp_avg_sqs.push_back(rand(shape) * 0.01);
        if (amsgrad) max_sqs.push_back(rand(shape) * 0.01);
        steps.push_back(scalar_tensor(3.0, TensorOptions().dtype(ScalarType::Float32)));
      }
      params[0] = params[0].t();  // non-contiguous: through a copy
      grads[0] = grads[0].t();
      exp_avgs[0] = exp_avgs[0].t();
      exp_avg_sqs[0] = exp_avg_sqs[0].t();
      if (amsgrad) max_sqs[0] = max_sqs[0].t();
      const Device gpu = cuda();
      std::vector<Tensor> gp = on(params, gpu), gg = on(grads, gpu), gm = on(exp_avgs, gpu),
                          gv = on(exp_avg_sqs, gpu), gx = on(max_sqs, gpu);
      std::vector<Tensor> device_steps = on(steps, gpu);
      device_steps[1] = steps[1];  // one count on the cpu, by value
      auto update = decoupled ? &_fused_adamw_ : &_fused_adam_;
      update(params, grads, exp_avgs, exp_avg_sqs, max_sqs, steps, 0.01, 0.9, 0.999, 0.1, 1e-8,
             amsgrad, decoupled, std::nullopt, std::nullopt);
      update(gp, gg, gm, gv, gx, device_steps, 0.01, 0.9, 0.999, 0.1, 1e-8, amsgrad, decoupled,
             std::nullopt, std::nullopt);
      for (size_t i = 0; i < params.size(); ++i) {
        expect_close(gp[i], params[i], 1e-5);
        expect_close(gm[i], exp_avgs[i], 1e-6);
        expect_close(gv[i], exp_avg_sqs[i], 1e-6);
        if (amsgrad) expect_close(gx[i], max_sqs[i], 1e-6);
      }
    }
  }
  // loss scaling: gradients unscaled in place; a set found_inf leaves everything as it was
  Tensor p = randn({1000}), g = randn({1000}) * 1024.0, m = zeros({1000}), v = zeros({1000});
  Tensor scale = full({}, 1024.0, TensorOptions().dtype(ScalarType::Float32));
  Tensor clear = zeros({1}), set = ones({1});
  Tensor step = scalar_tensor(1.0, TensorOptions().dtype(ScalarType::Float64));
  std::vector<Tensor> gp = {p.to(cuda())}, gg = {g.to(cuda())}, gm = {m.to(cuda())},
                      gv = {v.to(cuda())};
  _fused_adam_({p}, {g}, {m}, {v}, {}, {step}, 0.01, 0.9, 0.999, 0.0, 1e-8, false, false, scale,
               clear);
  _fused_adam_(gp, gg, gm, gv, {}, {step}, 0.01, 0.9, 0.999, 0.0, 1e-8, false, false,
               scale.to(cuda()), clear.to(cuda()));
  expect_close(gg[0], g, 1e-6);
  expect_close(gp[0], p, 1e-5);
  const Tensor before = gp[0].to(parse_device("cpu"));
  _fused_adam_(gp, gg, gm, gv, {}, {step}, 0.01, 0.9, 0.999, 0.0, 1e-8, false, false, std::nullopt,
               set.to(cuda()));
  expect_close(gp[0], before, 0);
}

}  // namespace
}  // namespace loom
