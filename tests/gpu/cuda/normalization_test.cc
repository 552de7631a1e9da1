// The normalization family on the CUDA plugin: layer_norm against the CPU.
#include <gtest/gtest.h>

#include <tuple>

#include "cuda_test_util.h"

namespace loom {
namespace {

using test::CudaOps;
using test::expect_close;

TEST_F(CudaOps, LayerNormMatchesTheCpu) {
  Tensor x = randn({6, 4, 8}), w = randn({8}), b = randn({8}), w2 = randn({4, 8});
  Tensor g = x.to(cuda());
  auto [out, mean, rstd] = native_layer_norm(g, {8}, w.to(cuda()), b.to(cuda()), 1e-5);
  auto [cpu_out, cpu_mean, cpu_rstd] = native_layer_norm(x, {8}, w, b, 1e-5);
  expect_close(out, cpu_out, 1e-5);
  expect_close(mean, cpu_mean, 1e-5);
  expect_close(rstd, cpu_rstd, 1e-5);
  expect_close(layer_norm(g, {4, 8}, w2.to(cuda())), layer_norm(x, {4, 8}, w2), 1e-5);
  expect_close(layer_norm(g.transpose(0, 2), {6}), layer_norm(x.transpose(0, 2), {6}), 1e-5);
  expect_close(layer_norm(g.to(ScalarType::Float16), {8}),
               layer_norm(x.to(ScalarType::Float16), {8}), 2e-3);
  Tensor leaf = g.clone().requires_grad_();
  layer_norm(leaf, {8}, w.to(cuda()), b.to(cuda())).sum().backward();
  Tensor cpu_leaf = x.clone().requires_grad_();
  layer_norm(cpu_leaf, {8}, w, b).sum().backward();
  expect_close(leaf.grad(), cpu_leaf.grad(), 1e-4);
}

}  // namespace
}  // namespace loom
