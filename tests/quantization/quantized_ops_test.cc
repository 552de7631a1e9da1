// The quantized family on the quantization plugin, each op against its reference
// (dequantize, the float op, quantize) within one quantization step: linear and conv2d
// on oneDNN's int8 primitives (per-tensor and per-channel weights, groups, stride,
// padding with a non-zero input zero point, dilation, fused ReLU), max_pool2d, relu,
// cat, clone and flatten of quantized tensors, add and mul, the dynamic linear and the
// weight-only linear layers; and their refusals.
#include <gtest/gtest.h>

#include <cmath>

#include "../frontend/frontend_test_util.h"

namespace loom {
namespace {

using test::expect_error;
using test::values;

class QuantizedOps : public test::LoadedRuntimeTest {
 protected:
  void SetUp() override { manual_seed(7); }
};

// Symmetric qint8 weights per output channel (dim 0), as PyTorch's x86 qconfig makes them.
Tensor per_channel_weights(const Tensor& w) {
  Tensor amax = w.abs().reshape({w.size(0), -1}).amax({1}).clamp_min(1e-6);
  Tensor scales = (amax / 127.0).to(ScalarType::Float64);
  return quantize_per_channel(w, scales,
                              zeros({w.size(0)}, TensorOptions().dtype(ScalarType::Int64)), 0,
                              ScalarType::QInt8);
}

// The largest difference between the integers of two quantized tensors.
double max_step_difference(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.dtype(), b.dtype());
  EXPECT_TRUE(std::ranges::equal(a.sizes(), b.sizes()));
  return (a.int_repr().to(ScalarType::Int64) - b.int_repr().to(ScalarType::Int64))
      .abs()
      .max()
      .item<double>();
}

TEST_F(QuantizedOps, LinearMatchesTheFloatReferenceWithinOneStep) {
  Tensor x = randn({5, 3, 16});
  Tensor w = randn({8, 16}) * 0.3;
  Tensor bias = randn({8});
  for (ScalarType act : {ScalarType::QUInt8, ScalarType::QInt8}) {
    const int64_t zp = act == ScalarType::QUInt8 ? 128 : 3;
    Tensor qx = quantize_per_tensor(x, 0.03, zp, act);
    for (bool per_channel : {true, false}) {
      Tensor qw =
          per_channel ? per_channel_weights(w) : quantize_per_tensor(w, 0.01, 0, ScalarType::QInt8);
      for (bool relu : {false, true}) {
        Tensor got = quantized_linear(qx, qw, bias, 0.05, zp, relu);
        Tensor y = linear(qx.dequantize(), qw.dequantize(), bias);
        if (relu) y = loom::relu(y);
        Tensor expected = quantize_per_tensor(y, 0.05, zp, act);
        EXPECT_EQ(got.size(2), 8);
        EXPECT_DOUBLE_EQ(got.q_scale(), 0.05);
        EXPECT_LE(max_step_difference(got, expected), 1)
            << scalar_type_name(act) << " per_channel=" << per_channel << " relu=" << relu;
      }
    }
  }
}

TEST_F(QuantizedOps, Conv2dMatchesTheFloatReferenceWithinOneStep) {
  struct Case {
    int64_t in, out, groups, stride, padding, dilation;
  };
  for (const Case& c : {Case{4, 6, 1, 1, 1, 1}, Case{4, 6, 2, 2, 1, 1}, Case{3, 5, 1, 1, 2, 2},
                        Case{1, 32, 1, 1, 1, 1}}) {
    Tensor x = randn({2, c.in, 9, 8});
    Tensor w = randn({c.out, c.in / c.groups, 3, 3}) * 0.2;
    Tensor bias = randn({c.out});
    // A zero point far from 0: the padding must read as real zeros.
    Tensor qx = quantize_per_tensor(x, 0.025, 100, ScalarType::QUInt8);
    Tensor qw = per_channel_weights(w);
    for (bool relu : {false, true}) {
      Tensor got = quantized_conv2d(qx, qw, bias, {c.stride, c.stride}, {c.padding, c.padding},
                                    {c.dilation, c.dilation}, c.groups, 0.04, 90, relu);
      Tensor y = conv2d(qx.dequantize(), qw.dequantize(), bias, {c.stride, c.stride},
                        {c.padding, c.padding}, {c.dilation, c.dilation}, c.groups);
      if (relu) y = loom::relu(y);
      EXPECT_LE(max_step_difference(got, quantize_per_tensor(y, 0.04, 90, ScalarType::QUInt8)), 1)
          << "in " << c.in << " out " << c.out << " groups " << c.groups << " relu " << relu;
    }
  }
}

TEST_F(QuantizedOps, PoolingReluCatAndFlattenKeepTheQuantizer) {
  Tensor x = randn({2, 3, 6, 6});
  Tensor q = quantize_per_tensor(x, 0.05, 10, ScalarType::QUInt8);
  Tensor pooled = max_pool2d(q, {2, 2});
  EXPECT_EQ(max_step_difference(pooled, quantize_per_tensor(max_pool2d(q.dequantize(), {2, 2}),
                                                            0.05, 10, ScalarType::QUInt8)),
            0);
  Tensor averaged = avg_pool2d(q, {2, 2});
  EXPECT_DOUBLE_EQ(averaged.q_scale(), 0.05);
  EXPECT_LE(max_step_difference(averaged, quantize_per_tensor(avg_pool2d(q.dequantize(), {2, 2}),
                                                              0.05, 10, ScalarType::QUInt8)),
            0);
  // On a convolution's channels-last result too, with padding and ceil mode.
  Tensor conv = quantized_conv2d(q, per_channel_weights(randn({4, 3, 3, 3})), std::nullopt, {1, 1},
                                 {1, 1}, {1, 1}, 1, 0.05, 20);
  Tensor p2 = max_pool2d(conv, {3, 3}, {2, 2}, {1, 1}, {1, 1}, true);
  Tensor r2 = max_pool2d(conv.dequantize(), {3, 3}, {2, 2}, {1, 1}, {1, 1}, true);
  EXPECT_EQ(max_step_difference(p2, quantize_per_tensor(r2, 0.05, 20, ScalarType::QUInt8)), 0);
  Tensor flat = conv.flatten(1);
  EXPECT_EQ(values(flat.dequantize()), values(conv.dequantize().flatten(1)));
  EXPECT_EQ(values(loom::relu(q).dequantize()), values(loom::relu(q.dequantize())));
  Tensor other = quantize_per_tensor(x, 0.1, 0, ScalarType::QUInt8);
  Tensor joined = cat({q, other}, 1);
  EXPECT_DOUBLE_EQ(joined.q_scale(), 0.05);
  EXPECT_LE(
      max_step_difference(joined, quantize_per_tensor(cat({q.dequantize(), other.dequantize()}, 1),
                                                      0.05, 10, ScalarType::QUInt8)),
      0);
  EXPECT_EQ(values(conv.contiguous().int_repr()), values(conv.int_repr()));
}

TEST_F(QuantizedOps, AddAndMulMatchTheFloatReference) {
  Tensor a = quantize_per_tensor(randn({4, 5}), 0.02, 120, ScalarType::QUInt8);
  Tensor b = quantize_per_tensor(randn({4, 5}), 0.03, 130, ScalarType::QUInt8);
  Tensor sum = quantized_add(a, b, 0.05, 128, false);
  EXPECT_LE(max_step_difference(sum, quantize_per_tensor(a.dequantize() + b.dequantize(), 0.05, 128,
                                                         ScalarType::QUInt8)),
            1);
  Tensor prod = quantized_mul(a, b, 0.01, 128, true);
  EXPECT_LE(
      max_step_difference(prod, quantize_per_tensor(loom::relu(a.dequantize() * b.dequantize()),
                                                    0.01, 128, ScalarType::QUInt8)),
      1);
}

TEST_F(QuantizedOps, DynamicLinearIsCloseToTheFloatLayer) {
  Tensor x = randn({3, 64});
  Tensor w = randn({32, 64}) * 0.1;
  Tensor bias = randn({32});
  Tensor got = dynamic_quantized_linear(x, per_channel_weights(w), bias);
  Tensor expected = linear(x, w, bias);
  EXPECT_EQ(got.dtype(), ScalarType::Float32);
  const double err = (got - expected).abs().max().item<double>();
  const double range = expected.abs().max().item<double>();
  EXPECT_LT(err, 0.03 * range) << err << " of " << range;
}

TEST_F(QuantizedOps, WeightOnlyLinearUsesGroupScales) {
  Tensor x = randn({2, 256});
  Tensor w = randn({48, 256});
  Tensor bias = randn({48});
  for (int64_t bits : {8, 4}) {
    for (int64_t group : {32, 128}) {
      auto [packed, scales] = pack_weight_only(w, bits, group);
      EXPECT_EQ(packed.size(1), bits == 4 ? 128 : 256);
      EXPECT_EQ(scales.size(1), 256 / group);
      Tensor got = weight_only_linear(x, packed, scales, bias, bits, group);
      // The weights the packing keeps: q * scale per group.
      const double qmax = bits == 8 ? 127 : 7;
      Tensor grouped = w.reshape({48, 256 / group, group});
      Tensor s = grouped.abs().amax({2}, true) / qmax;
      Tensor kept =
          ((grouped / s).round().clamp(bits == 8 ? -127 : -8, qmax) * s).reshape({48, 256});
      EXPECT_LT((got - linear(x, kept, bias)).abs().max().item<double>(), 1e-3)
          << bits << " bits, group " << group;
      // And near the float layer: each weight is off by at most half its group's step.
      Tensor exact = linear(x, w, bias);
      const double err = (got - exact).abs().max().item<double>();
      const double range = exact.abs().max().item<double>();
      EXPECT_LT(err, (bits == 8 ? 0.02 : 0.25) * range) << bits << " bits, group " << group;
    }
  }
  Tensor bf16 =
      weight_only_linear(x.to(ScalarType::BFloat16), std::get<0>(pack_weight_only(w, 4, 32)),
                         std::get<1>(pack_weight_only(w, 4, 32)), std::nullopt, 4, 32);
  EXPECT_EQ(bf16.dtype(), ScalarType::BFloat16);
}

TEST_F(QuantizedOps, BadOperandsAreRefusedNamingTheOp) {
  Tensor qx = quantize_per_tensor(randn({2, 4}), 0.1, 128, ScalarType::QUInt8);
  Tensor asymmetric = quantize_per_tensor(randn({3, 4}), 0.1, 5, ScalarType::QInt8);
  expect_error([&] { quantized_linear(qx, asymmetric, std::nullopt, 0.1, 0, false); },
               "loom::quantized_linear",
               "weights must be quantized symmetrically (zero point 0), found zero point 5");
  Tensor qw = quantize_per_tensor(randn({3, 5}), 0.1, 0, ScalarType::QInt8);
  expect_error([&] { quantized_linear(qx, qw, std::nullopt, 0.1, 0, false); },
               "loom::quantized_linear",
               "the input's last dim must be the weights' in_features 5, found 4");
  Tensor good = quantize_per_tensor(randn({3, 4}), 0.1, 0, ScalarType::QInt8);
  expect_error(
      [&] {
        quantized_linear(randn({2, 4}), good, std::nullopt, 0.1, 0, false);
      },
      "loom::quantized_linear", "expected a quantized tensor, found float32");
  expect_error([&] { quantized_linear(qx, good, std::nullopt, 0, 0, false); },
               "loom::quantized_linear", "scale of the output must be positive and finite");
  expect_error([&] { quantized_linear(qx, good, randn({2}), 0.1, 0, false); },
               "loom::quantized_linear", "expected a float bias of 3 elements");
  expect_error([&] { add(qx, qx); }, "loom::add.Tensor",
               "quantized operand of type quint8 cannot take part in type promotion");
  expect_error(
      [&] {
        pack_weight_only(randn({4, 30}), 4, 32);
      },
      "loom::pack_weight_only",
      "group_size must be a multiple of 32 that divides the 30 input features, found 32");
  expect_error(
      [&] {
        pack_weight_only(randn({4, 32}), 3, 32);
      },
      "loom::pack_weight_only", "bits must be 4 or 8, found 3");
}

}  // namespace
}  // namespace loom
