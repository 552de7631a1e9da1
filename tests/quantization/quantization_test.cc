// Quantized tensors (Note [Where the quantizer lives]) and the quantization family's ops
// on the quantization plugin: quantize_per_tensor / per_channel, dequantize, int_repr,
// the q_* accessors, views, fake quantization with its straight-through gradient, and
// the refusals of bad parameters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include <filesystem>
#include <fstream>

#include "../frontend/frontend_test_util.h"
#include "loom/safetensors.h"

namespace loom {
namespace {

using test::expect_error;
using test::values;

class Quantized : public test::LoadedRuntimeTest {};

Tensor floats(std::initializer_list<double> v, std::vector<int64_t> shape) {
  return tensor(v, TensorOptions().dtype(ScalarType::Float32)).reshape(shape);
}
Tensor f64(std::initializer_list<double> v) {
  return tensor(v, TensorOptions().dtype(ScalarType::Float64));
}
Tensor f32(std::initializer_list<double> v) {
  return tensor(v, TensorOptions().dtype(ScalarType::Float32));
}
Tensor i64(std::initializer_list<int64_t> v) {
  return tensor(v);
}

TEST_F(Quantized, PerTensorQuantizationRoundsHalfToEvenAndClamps) {
  Tensor x = floats({-20.0, -0.25, 0.0, 0.05, 0.15, 1.0, 3.0, 100.0}, {2, 4});
  Tensor q = quantize_per_tensor(x, 0.1, 10, ScalarType::QInt8);
  EXPECT_EQ(q.dtype(), ScalarType::QInt8);
  EXPECT_TRUE(std::ranges::equal(q.sizes(), x.sizes()));
  EXPECT_DOUBLE_EQ(q.q_scale(), 0.1);
  EXPECT_EQ(q.q_zero_point(), 10);
  // zero_point + nearbyint(x / 0.1), clamped to [-128, 127]: 0.05 / 0.1 rounds to 0 (the
  // float product is 0.5, half to even), 0.15 to 2 (1.5 -> 2).
  Tensor r = q.int_repr();
  EXPECT_EQ(r.dtype(), ScalarType::Int8);
  EXPECT_EQ(values(r), (std::vector<double>{-128, 8, 10, 10, 12, 20, 40, 127}));
  // Back to floats: (q - 10) * 0.1.
  std::vector<double> back = values(q.dequantize());
  std::vector<double> expected = {-13.8, -0.2, 0, 0, 0.2, 1.0, 3.0, 11.7};
  for (size_t i = 0; i < back.size(); ++i) EXPECT_NEAR(back[i], expected[i], 1e-5) << i;

  Tensor u = quantize_per_tensor(x, 0.5, 0, ScalarType::QUInt8);
  EXPECT_EQ(values(u.int_repr()), (std::vector<double>{0, 0, 0, 0, 0, 2, 6, 200}));
  Tensor wide = quantize_per_tensor(x, 0.001, 0, ScalarType::QInt32);
  EXPECT_EQ(wide.int_repr().dtype(), ScalarType::Int32);
  EXPECT_EQ(values(wide.int_repr())[7], 100000);
}

TEST_F(Quantized, PerChannelQuantizationUsesEachChannelsParameters) {
  Tensor w = floats({1, -1, 0.5, 2, 1, -1, 0.5, 2, 1, -1, 0.5, 2}, {3, 4});
  Tensor scales = f64({0.1, 0.5, 1.0});
  Tensor zeros = i64({0, 1, -1});
  Tensor q = quantize_per_channel(w, scales, zeros, 0, ScalarType::QInt8);
  EXPECT_EQ(q.q_per_channel_axis(), 0);
  EXPECT_EQ(values(q.q_per_channel_scales()), (std::vector<double>{0.1, 0.5, 1.0}));
  EXPECT_EQ(q.q_per_channel_scales().dtype(), ScalarType::Float64);
  EXPECT_EQ(values(q.q_per_channel_zero_points()), (std::vector<double>{0, 1, -1}));
  EXPECT_EQ(values(q.int_repr()), (std::vector<double>{10, -10, 5, 20, 3, -1, 2, 5, 0, -2, -1, 1}));
  std::vector<double> back = values(q.dequantize());
  std::vector<double> expected = {1, -1, 0.5, 2, 1, -1, 0.5, 2, 1, -1, 0, 2};
  for (size_t i = 0; i < back.size(); ++i) EXPECT_NEAR(back[i], expected[i], 1e-6) << i;
  // Along the last dim: each column its own scale.
  Tensor cols =
      quantize_per_channel(w, f64({1, 1, 0.5, 0.25}), i64({0, 0, 0, 0}), -1, ScalarType::QUInt8);
  EXPECT_EQ(cols.q_per_channel_axis(), 1);
  EXPECT_EQ(values(cols.int_repr()), (std::vector<double>{1, 0, 1, 8, 1, 0, 1, 8, 1, 0, 1, 8}));
}

TEST_F(Quantized, ViewsKeepTheQuantizer) {
  Tensor x = floats({0, 1, 2, 3, 4, 5}, {2, 3});
  Tensor q = quantize_per_tensor(x, 0.5, 3, ScalarType::QUInt8);
  Tensor t = q.t();
  EXPECT_EQ(t.dtype(), ScalarType::QUInt8);
  EXPECT_DOUBLE_EQ(t.q_scale(), 0.5);
  EXPECT_EQ(values(t.dequantize()), values(x.t()));
  EXPECT_EQ(values(q.view({6}).int_repr()), (std::vector<double>{3, 5, 7, 9, 11, 13}));
  EXPECT_EQ(values(q.narrow(1, 1, 2).dequantize()), (std::vector<double>{1, 2, 4, 5}));
  // Per channel, a view keeps its channel axis or is refused.
  Tensor pc = quantize_per_channel(x, f64({1, 2}), i64({0, 0}), 0, ScalarType::QInt8);
  EXPECT_EQ(values(pc.narrow(1, 0, 2).dequantize()), (std::vector<double>{0, 1, 4, 4}));
  expect_error([&] { pc.view({6}); }, "loom::view", "must keep its channel axis 0");
}

TEST_F(Quantized, BadParametersAreRefusedNamingTheOp) {
  Tensor x = floats({1, 2, 3}, {3});
  expect_error([&] { quantize_per_tensor(arange(3), 0.1, 0, ScalarType::QInt8); },
               "loom::quantize_per_tensor",
               "expected a floating-point tensor to quantize, found int64");
  expect_error([&] { quantize_per_tensor(x, 0, 0, ScalarType::QInt8); },
               "loom::quantize_per_tensor", "scale must be positive and finite, found 0");
  expect_error([&] { quantize_per_tensor(x, -1, 0, ScalarType::QInt8); },
               "loom::quantize_per_tensor", "scale must be positive and finite");
  expect_error([&] { quantize_per_tensor(x, std::nan(""), 0, ScalarType::QInt8); },
               "loom::quantize_per_tensor", "scale must be positive and finite, found nan");
  expect_error([&] { quantize_per_tensor(x, 0.1, 128, ScalarType::QInt8); },
               "loom::quantize_per_tensor", "zero point must be within qint8's range [-128, 127]");
  expect_error([&] { quantize_per_tensor(x, 0.1, -1, ScalarType::QUInt8); },
               "loom::quantize_per_tensor", "[0, 255], found -1");
  expect_error([&] { quantize_per_tensor(x, 0.1, 0, ScalarType::Int8); },
               "loom::quantize_per_tensor", "expected a quantized dtype");
  Tensor w = floats({1, 2, 3, 4}, {2, 2});
  Tensor two = f64({0.1, 0.2});
  Tensor zeros = i64({0, 0});
  expect_error([&] { quantize_per_channel(w, two, zeros, 2, ScalarType::QInt8); },
               "loom::quantize_per_channel", "axis 2 is out of range for a tensor of 2 dims");
  expect_error([&] { quantize_per_channel(w, f64({0.1}), zeros, 0, ScalarType::QInt8); },
               "loom::quantize_per_channel",
               "expected 2 scales and zero points (the size of axis 0), found 1");
  expect_error(
      [&] {
        quantize_per_channel(w, f64({0.1, -0.2}), zeros, 0, ScalarType::QInt8);
      },
      "loom::quantize_per_channel", "scale of channel 1 must be positive and finite");
  expect_error(
      [&] {
        quantize_per_channel(w, two, i64({0, 300}), 0, ScalarType::QInt8);
      },
      "loom::quantize_per_channel", "zero point of channel 1 must be within qint8's range");
  Tensor q = quantize_per_channel(w, two, zeros, 0, ScalarType::QInt8);
  expect_error([&] { q.q_scale(); }, "loom::q_scale", "expected a tensor quantized per tensor");
  expect_error([&] { quantize_per_tensor(x, 0.1, 0, ScalarType::QInt8).q_per_channel_axis(); },
               "loom::q_per_channel_axis", "expected a tensor quantized per channel");
}

TEST_F(Quantized, FakeQuantizationRoundTripsInFloatAndPassesGradientsInsideTheRange) {
  Tensor x = floats({-3, -0.26, 0.04, 0.26, 1.2, 5}, {6}).requires_grad_(true);
  // qint8-like range [-10, 10] with scale 0.1 and zero point 2: values in [-1.2, 0.8].
  Tensor y = fake_quantize_per_tensor_affine(x, 0.1, 2, -10, 10);
  std::vector<double> got = values(y.detach());
  std::vector<double> expected = {-1.2, -0.3, 0.0, 0.3, 0.8, 0.8};
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-6) << i;
  EXPECT_EQ(values(y.detach()), values(quantize_per_tensor(x.detach(), 0.1, 2, ScalarType::QInt8)
                                           .dequantize()
                                           .clamp(-1.2, 0.8)));
  y.sum().backward();
  // Straight through where zero_point + round(x / scale) stayed in [-10, 10].
  EXPECT_EQ(values(x.grad()), (std::vector<double>{0, 1, 1, 1, 0, 0}));

  Tensor w = floats({-1, 0.5, 2, -1, 0.5, 2}, {2, 3}).requires_grad_(true);
  Tensor yc = fake_quantize_per_channel_affine(w, f32({0.5f, 0.25f}), i64({0, 0}), 0, -2, 2);
  EXPECT_EQ(values(yc.detach()), (std::vector<double>{-1, 0.5, 1, -0.5, 0.5, 0.5}));
  yc.sum().backward();
  EXPECT_EQ(values(w.grad()), (std::vector<double>{1, 1, 0, 0, 1, 0}));
  expect_error([&] { fake_quantize_per_tensor_affine(x.detach(), 0.1, 20, -10, 10); },
               "loom::fake_quantize_per_tensor_affine",
               "zero point must be within [quant_min, quant_max] [-10, 10], found 20");
  expect_error([&] { fake_quantize_per_tensor_affine(x.detach(), 0.1, 0, 10, -10); },
               "loom::fake_quantize_per_tensor_affine",
               "quant_min (10) must not exceed quant_max (-10)");
}

TEST_F(Quantized, PrintsItsValuesAndQuantizerAsPyTorchDoes) {
  Tensor q = quantize_per_tensor(floats({-1, 0, 1, 2}, {4}), 1.0, 8, ScalarType::QUInt8);
  EXPECT_EQ(to_string(q),
            "tensor([-1., 0., 1., 2.], size=[4], dtype=quint8, "
            "quantization_scheme=per_tensor_affine, scale=1, zero_point=8)");
  Tensor pc = quantize_per_channel(floats({1, 2, 3, 4}, {2, 2}), f64({0.5, 1}), i64({0, 1}), 0,
                                   ScalarType::QInt8);
  const std::string text = to_string(pc);
  EXPECT_NE(text.find("quantization_scheme=per_channel_affine, scale=tensor([0.5, 1.], "
                      "dtype=float64), zero_point=tensor([0, 1]), axis=0)"),
            std::string::npos)
      << text;
}

class QuantizedCheckpoints : public Quantized {
 protected:
  std::string path(const std::string& name) {
    return (std::filesystem::path(::testing::TempDir()) / name).string();
  }
};

TEST_F(QuantizedCheckpoints, SafetensorsKeepTheIntegersAndTheQuantizer) {
  Tensor a = quantize_per_tensor(floats({-1, 0.5, 2, 7}, {2, 2}), 0.05, -3, ScalarType::QInt8);
  Tensor w = quantize_per_channel(floats({1, 2, 3, 4, 5, 6}, {3, 2}), f64({0.1, 0.2, 0.3}),
                                  i64({1, 0, 255}), 0, ScalarType::QUInt8);
  const std::string file = path("quantized.safetensors");
  save_safetensors(file, {{"a", a.t()}, {"w", w}, {"plain", floats({1, 2}, {2})}});
  SafetensorsFile loaded = load_safetensors(file);
  ASSERT_EQ(loaded.tensors.size(), 3u);
  const Tensor& la = loaded.tensors[0].second;
  EXPECT_EQ(la.dtype(), ScalarType::QInt8);
  EXPECT_DOUBLE_EQ(la.q_scale(), 0.05);
  EXPECT_EQ(la.q_zero_point(), -3);
  // The transposed tensor was written dense.
  EXPECT_EQ(values(la.int_repr()), values(a.t().int_repr()));
  const Tensor& lw = loaded.tensors[1].second;
  EXPECT_EQ(lw.q_per_channel_axis(), 0);
  EXPECT_EQ(values(lw.q_per_channel_scales()), (std::vector<double>{0.1, 0.2, 0.3}));
  EXPECT_EQ(values(lw.int_repr()), values(w.int_repr()));
  EXPECT_EQ(loaded.tensors[2].second.dtype(), ScalarType::Float32);
}

TEST_F(QuantizedCheckpoints, AnEntryWithoutItsParametersIsRefused) {
  const std::string file = path("broken.safetensors");
  Tensor ints = tensor({1, 2, 3}).to(ScalarType::Int8);
  auto with_entry = [&](const std::string& entry) {
    save_safetensors(file, {{"q", ints}}, {{"loom.quant.q", entry}});
  };
  with_entry(R"({"dtype": "qint8", "scheme": "per_tensor_affine", "zero_point": 0})");
  expect_error([&] { load_safetensors(file); }, "safetensors",
               "tensor 'q' is quantized, but its scale is missing");
  with_entry(R"({"dtype": "qint8", "scheme": "per_tensor_affine", "scale": -1, "zero_point": 0})");
  expect_error([&] { load_safetensors(file); }, "safetensors",
               "scale must be positive and finite, found -1");
  with_entry(R"({"dtype": "quint8", "scheme": "per_tensor_affine", "scale": 1, "zero_point": 0})");
  expect_error([&] { load_safetensors(file); }, "safetensors",
               "quint8 is stored as uint8, found int8");
  with_entry(R"({"dtype": "qint8", "scheme": "per_channel_affine", "axis": 0, "scales": [1, 1],)"
             R"( "zero_points": [0, 0]})");
  expect_error([&] { load_safetensors(file); }, "safetensors",
               "expected 3 scales and zero points (axis 0), found 2 and 2");
  with_entry("not json");
  expect_error([&] { load_safetensors(file); }, "safetensors",
               "its quantizer entry is not a JSON object");
  save_safetensors(file, {{"p", ints}}, {{"loom.quant.q", "{}"}});
  expect_error([&] { load_safetensors(file); }, "safetensors",
               "metadata 'loom.quant.q' describes a tensor the file does not hold");
}

}  // namespace
}  // namespace loom
