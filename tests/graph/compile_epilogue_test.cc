// Fusions around the products, convolutions and poolings loom::compile leaves to the op
// library: activations as their epilogues (Note [Fused epilogues]: _conv2d_activation,
// _addmm_activation, and their CPU kernel and gradients), a convolution's bias gradient
// summed in the kernel that computes it (Note [Plane reductions]) and relu's gradient mask
// applied before max pooling's gradient (Note [Masks before max-pool gradients]).
#include <gtest/gtest.h>

#include <string>

#include "../frontend/frontend_test_util.h"
#include "compile_test_util.h"
#include "loom/compile.h"
#include "loom/graph_passes.h"
#include "loom/loom.h"

namespace loom {
namespace {

using test::expect_error;
using test::expect_near;

class CompileEpilogueTest : public test::CompileCacheTest {};

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

TEST_F(CompileEpilogueTest, ActivationsJoinTheConvolutionOrProductBeforeThem) {
  manual_seed(1);
  Tensor x = randn({2, 3, 9, 8}), w = randn({4, 3, 3, 3}), b = randn({4});
  Tensor m = randn({5, 7}), p = randn({7, 6}), bias = randn({6});
  auto eager = [](const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& m,
                  const Tensor& p, const Tensor& bias) {
    Tensor c = relu(conv2d(x, w, b, 1, 1));
    Tensor s = sigmoid(conv2d(x, w, std::nullopt, 2));
    Tensor t = tanh(conv2d(x, w, b, 1, 0, 2));
    Tensor l = relu(addmm(bias, m, p));
    Tensor g = gelu(addmm(bias, m, p, 0.5, 2.0));
    return std::vector<Tensor>{c, s, t, l, g};
  };
  auto f = compile(eager);
  for (int call = 0; call < 2; ++call) {
    std::vector<Tensor> got = f(x, w, b, m, p, bias), want = eager(x, w, b, m, p, bias);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) expect_near(got[i], want[i], 1e-4);
  }
  const std::string graph = f.explanation().graph;
  EXPECT_EQ(count(graph, "loom::_conv2d_activation"), 3u) << graph;
  EXPECT_EQ(count(graph, "loom::_addmm_activation"), 2u) << graph;
  EXPECT_NE(graph.find("activation=\"sigmoid\""), std::string::npos) << graph;
  EXPECT_NE(graph.find("use_gelu=True"), std::string::npos) << graph;
  EXPECT_EQ(graph.find("loom::conv2d("), std::string::npos) << graph;
}

TEST_F(CompileEpilogueTest, AProductReadByMoreThanItsActivationStaysApart) {
  manual_seed(2);
  Tensor x = randn({1, 2, 6, 6}), w = randn({3, 2, 3, 3});
  // the convolution's result is returned too, and an approximate gelu has no fused form
  auto eager = [](const Tensor& x, const Tensor& w) {
    Tensor c = conv2d(x, w);
    Tensor m = x.reshape({12, 6});
    return std::vector<Tensor>{c, relu(c), gelu(mm(m, m.t()), "tanh")};
  };
  auto f = compile(eager);
  std::vector<Tensor> got = f(x, w), want = eager(x, w);
  for (size_t i = 0; i < got.size(); ++i) expect_near(got[i], want[i], 1e-4);
  const std::string graph = f.explanation().graph;
  EXPECT_EQ(graph.find("_activation"), std::string::npos) << graph;
}

TEST_F(CompileEpilogueTest, ConvolutionWithAnActivationMatchesItsPiecesWithGradients) {
  manual_seed(3);
  for (const char* activation : {"relu", "sigmoid", "tanh"}) {
    SCOPED_TRACE(activation);
    Tensor x = randn({2, 4, 7, 7}).requires_grad_(true);
    Tensor w = randn({6, 2, 3, 3}).requires_grad_(true);
    Tensor b = randn({6}).requires_grad_(true);
    Tensor fused = _conv2d_activation(x, w, b, 1, 1, 1, 2, activation);
    Tensor c = conv2d(x, w, b, 1, 1, 1, 2);
    Tensor pieces = std::string(activation) == "relu"      ? relu(c)
                    : std::string(activation) == "sigmoid" ? sigmoid(c)
                                                           : tanh(c);
    expect_near(fused, pieces, 1e-5);
    Tensor weights = randn(fused.sizes());
    std::vector<Tensor> g1 = autograd::grad({(fused * weights).sum()}, {x, w, b});
    std::vector<Tensor> g2 = autograd::grad({(pieces * weights).sum()}, {x, w, b});
    for (size_t i = 0; i < g1.size(); ++i) expect_near(g1[i], g2[i], 1e-4);
  }
  // float64 and a layout oneDNN does not read take conv2d's path
  const TensorOptions f64 = TensorOptions().dtype(ScalarType::Float64);
  Tensor x = randn({1, 2, 5, 5}, f64), w = randn({3, 2, 3, 3}, f64);
  expect_near(_conv2d_activation(x, w), relu(conv2d(x, w)), 1e-12);
  Tensor strided = randn({1, 5, 5, 2}).permute({0, 3, 1, 2}), w32 = randn({3, 2, 3, 3});
  expect_near(_conv2d_activation(strided, w32, std::nullopt, 1, 0, 1, 1, "tanh"),
              tanh(conv2d(strided, w32)), 1e-5);
  // a channels-last input gives the layout conv2d gives it
  Tensor channels_last = randn({2, 2, 5, 5}).contiguous(MemoryFormat::ChannelsLast);
  Tensor fused = _conv2d_activation(channels_last, w32), plain = conv2d(channels_last, w32);
  EXPECT_EQ(std::vector<int64_t>(fused.strides().begin(), fused.strides().end()),
            std::vector<int64_t>(plain.strides().begin(), plain.strides().end()));
  expect_near(fused, relu(plain), 1e-5);
}

TEST_F(CompileEpilogueTest, BadActivationsAndShapesAreNamed) {
  Tensor x = randn({1, 2, 5, 5}), w = randn({3, 2, 3, 3});
  expect_error([&] { _conv2d_activation(x, w, std::nullopt, 1, 0, 1, 1, "gelu"); },
               "loom::_conv2d_activation",
               "expected activation \"relu\", \"sigmoid\" or \"tanh\", found \"gelu\"");
  // what conv2d (addmm) refuses, its fused form refuses with conv2d's (addmm's) message
  expect_error(
      [&] {
        _conv2d_activation(x, randn({3, 4, 3, 3}));
      },
      "loom::_conv2d_activation", "[loom::conv2d] expected input with 4 channels");
  expect_error(
      [&] {
        _addmm_activation(randn({3}), randn({2, 4}), randn({3, 3}));
      },
      "loom::_addmm_activation", "[loom::addmm] expected mat2 with 4 rows");
}

// Note [Plane reductions]
TEST_F(CompileEpilogueTest, ABiasGradientIsSummedInTheKernelThatComputesIt) {
  manual_seed(4);
  Tensor g = randn({4, 3, 5, 6}), y = randn({4, 3, 5, 6});
  auto eager = [](const Tensor& g, const Tensor& y) {
    Tensor masked = threshold_backward(g, y, 0.0);
    return std::vector<Tensor>{masked * 2, masked.sum(std::vector<int64_t>{0, 2, 3})};
  };
  auto f = compile(eager);
  for (int call = 0; call < 2; ++call) {
    std::vector<Tensor> got = f(g, y), want = eager(g, y);
    expect_near(got[0], want[0]);
    expect_near(got[1], want[1], 1e-5);
  }
  const std::string graph = f.explanation().graph;
  // threshold_backward and the row sums in one row kernel, the masked values viewed back
  // for the multiply (a second kernel), the row sums summed over the batch
  EXPECT_EQ(graph.find("loom::threshold_backward"), std::string::npos) << graph;
  EXPECT_EQ(count(graph, "dim=[0, 2, 3]"), 0u) << graph;
  EXPECT_EQ(count(graph, "loom::sum.dim_IntList"), 1u) << graph;
  // a strided input keeps the sum as it was
  Tensor t = randn({4, 6, 5, 3}).permute({0, 3, 2, 1});
  auto h = compile(eager);
  std::vector<Tensor> got = h(t, y), want = eager(t, y);
  expect_near(got[1], want[1], 1e-5);
  EXPECT_EQ(count(h.explanation().graph, "dim=[0, 2, 3]"), 1u) << h.explanation().graph;
}

// Note [Masks before max-pool gradients]
TEST_F(CompileEpilogueTest, ReluGradientsAreMaskedBeforeMaxPoolScattersThem) {
  manual_seed(5);
  // 2x2 windows, and overlapping 3x3 windows with stride 2 (positions shared by windows)
  for (int64_t kernel : {2, 3}) {
    SCOPED_TRACE(kernel);
    Tensor x = randn({3, 2, 9, 9});
    Tensor w = (randn({4, 2, 3, 3}) * 0.5).requires_grad_(true);
    Tensor b = randn({4}).requires_grad_(true);
    auto eager = [kernel](const Tensor& x, const Tensor& w, const Tensor& b) {
      Tensor h = max_pool2d(relu(conv2d(x, w, b, 1, 1)), kernel, 2);
      return (h * h).sum();
    };
    auto f = compile(eager);
    for (int call = 0; call < 2; ++call) {
      std::vector<Tensor> got = autograd::grad({f(x, w, b)}, {w, b});
      std::vector<Tensor> want = autograd::grad({eager(x, w, b)}, {w, b});
      expect_near(got[0], want[0], 1e-4);
      expect_near(got[1], want[1], 1e-4);
    }
    const std::string backward = f.explanation().backward_graph;
    // the mask runs on the pooled gradient; the bias gradient sums it
    EXPECT_NE(backward.find("_pooled"), std::string::npos) << backward;
    EXPECT_EQ(backward.find("loom::threshold_backward"), std::string::npos) << backward;
  }
  // the pooled values written in place after the pooling: the mask stays where it was
  Tensor x = randn({3, 2, 9, 9});
  Tensor w = (randn({4, 2, 3, 3}) * 0.5).requires_grad_(true);
  auto written = [](const Tensor& x, const Tensor& w) {
    Tensor h = max_pool2d(relu(conv2d(x, w, std::nullopt, 1, 1)), 2);
    h.sub_(0.5);
    return (h * h).sum();
  };
  auto f = compile(written);
  for (int call = 0; call < 2; ++call) {
    expect_near(autograd::grad({f(x, w)}, {w})[0], autograd::grad({written(x, w)}, {w})[0], 1e-4);
  }
  const std::string backward = f.explanation().backward_graph;
  EXPECT_EQ(backward.find("_pooled"), std::string::npos) << backward;
}

}  // namespace
}  // namespace loom
