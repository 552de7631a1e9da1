// The normalization ops through the typed API, against float64 references computed
// here with plain loops: native_layer_norm / layer_norm, batch_norm (training and eval,
// running stats), group_norm; strided, zero-size and reduced-precision inputs, and the
// errors.
#include <cmath>

#include "ops_test_util.h"

namespace loom::testing {
namespace {

class Normalization : public OpsTest {};

// Normalizes consecutive rows of `width` elements; optional affine of `width` elements.
Values normalize_rows_ref(const Values& x, int64_t width, const Values& w, const Values& b,
                          double eps, Values* means = nullptr, Values* rstds = nullptr) {
  Values out(x.size());
  for (size_t r = 0; r * width < x.size(); ++r) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < width; ++j) mean += x[r * width + j];
    mean /= width;
    for (int64_t j = 0; j < width; ++j) var += std::pow(x[r * width + j] - mean, 2);
    double rstd = 1 / std::sqrt(var / width + eps);
    for (int64_t j = 0; j < width; ++j) {
      double y = (x[r * width + j] - mean) * rstd;
      out[r * width + j] = y * (w.empty() ? 1 : w[j]) + (b.empty() ? 0 : b[j]);
    }
    if (means) means->push_back(mean);
    if (rstds) rstds->push_back(rstd);
  }
  return out;
}

TEST_F(Normalization, NativeLayerNormMatchesTheReference) {
  for (const Precision& p : kFloatingTypes) {
    Values x = rounded(wave(24), p.dtype), w = rounded(wave(12, 1), p.dtype),
           b = rounded(wave(12, 2), p.dtype);
    Values means, rstds;
    Values expected = normalize_rows_ref(x, 12, w, b, 1e-5, &means, &rstds);
    auto [y, mean, rstd] =
        native_layer_norm(make(x, {2, 3, 4}, p.dtype), {3, 4}, make(w, {3, 4}, p.dtype),
                          make(b, {3, 4}, p.dtype), 1e-5);
    EXPECT_EQ(y.dtype(), p.dtype);
    EXPECT_EQ(shape_of(mean), (Shape{2, 1, 1}));
    EXPECT_EQ(shape_of(rstd), (Shape{2, 1, 1}));
    expect_close(values(y), expected, p.tol * 4);
    expect_close(values(mean), means, p.tol);
    expect_close(values(rstd), rstds, p.tol * 4);
  }
  Values x = wave(8);
  expect_close(values(layer_norm(make(x, {2, 4}), {4})), normalize_rows_ref(x, 4, {}, {}, 1e-5),
               1e-5);
  expect_close(values(layer_norm(make(x, {2, 4}), {4}, std::nullopt, std::nullopt, 0.5)),
               normalize_rows_ref(x, 4, {}, {}, 0.5), 1e-5);
}

TEST_F(Normalization, LayerNormOnStridedAndZeroSizeInputs) {
  Values x = wave(12);
  Tensor t = make(x, {4, 3}, ScalarType::Float64).t();  // [3, 4] strided
  Values xt(12);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) xt[i * 4 + j] = x[j * 3 + i];
  Tensor w = make({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2}, ScalarType::Float64).select(1, 0);  // strided
  expect_close(values(layer_norm(t, {4}, w)), normalize_rows_ref(xt, 4, {1, 3, 5, 7}, {}, 1e-5),
               1e-12);
  auto [y, mean, rstd] = native_layer_norm(empty({0, 4}), {4}, std::nullopt, std::nullopt, 1e-5);
  EXPECT_EQ(shape_of(y), (Shape{0, 4}));
  EXPECT_EQ(shape_of(mean), (Shape{0, 1}));
}

TEST_F(Normalization, BatchNormTrainingUsesBatchStatsAndUpdatesRunningStats) {
  // input [N=2, C=3, L=2]: channel c holds x[n, c, l]
  Values x = wave(12);
  Values w = {1, 2, 3}, b = {0.5, 0, -1};
  Tensor running_mean = make({0.1, 0.2, 0.3}, {3}), running_var = make({1, 2, 3}, {3});
  Tensor y =
      batch_norm(make(x, {2, 3, 2}, ScalarType::Float64), make(w, {3}, ScalarType::Float64),
                 make(b, {3}, ScalarType::Float64), running_mean, running_var, true, 0.1, 1e-5);
  Values expected(12), new_mean, new_var;
  for (int c = 0; c < 3; ++c) {
    double mean = 0, var = 0;
    for (int n = 0; n < 2; ++n)
      for (int l = 0; l < 2; ++l) mean += x[n * 6 + c * 2 + l];
    mean /= 4;
    for (int n = 0; n < 2; ++n)
      for (int l = 0; l < 2; ++l) var += std::pow(x[n * 6 + c * 2 + l] - mean, 2);
    for (int n = 0; n < 2; ++n)
      for (int l = 0; l < 2; ++l) {
        int i = n * 6 + c * 2 + l;
        expected[i] = (x[i] - mean) / std::sqrt(var / 4 + 1e-5) * w[c] + b[c];
      }
    new_mean.push_back(0.9 * (0.1 * (c + 1)) + 0.1 * mean);
    new_var.push_back(0.9 * (c + 1) + 0.1 * var / 3);
  }
  EXPECT_EQ(y.dtype(), ScalarType::Float64);
  expect_close(values(y), expected, 1e-12);
  expect_close(values(running_mean), new_mean, 1e-6);
  expect_close(values(running_var), new_var, 1e-6);
  // without running stats; float32 input on a strided view
  Tensor strided = make(x, {2, 2, 3}, ScalarType::Float32).transpose(1, 2);  // [2, 3, 2]
  Values xs(12);
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c)
      for (int l = 0; l < 2; ++l) xs[n * 6 + c * 2 + l] = x[n * 6 + l * 3 + c];
  Tensor ys =
      batch_norm(strided, std::nullopt, std::nullopt, std::nullopt, std::nullopt, true, 0.1, 1e-5);
  Tensor yref = batch_norm(make(xs, {2, 3, 2}, ScalarType::Float64), std::nullopt, std::nullopt,
                           std::nullopt, std::nullopt, true, 0.1, 1e-5);
  EXPECT_EQ(ys.dtype(), ScalarType::Float32);
  expect_close(values(ys), values(yref), 1e-5);
}

TEST_F(Normalization, BatchNormEvalUsesRunningStats) {
  Values x = wave(6);
  Tensor rm = make({0.5, -1, 2}, {3}), rv = make({4, 0.25, 1}, {3});
  Tensor y = batch_norm(make(x, {2, 3}, ScalarType::Float16), std::nullopt, make({1, 1, 1}, {3}),
                        rm, rv, false, 0.1, 0);
  EXPECT_EQ(y.dtype(), ScalarType::Float16);
  Values xr = rounded(x, ScalarType::Float16), expected(6);
  Values m = {0.5, -1, 2}, v = {4, 0.25, 1};
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c) expected[n * 3 + c] = (xr[n * 3 + c] - m[c]) / std::sqrt(v[c]) + 1;
  expect_close(values(y), expected, 4e-3);
  expect_close(values(rm), {0.5, -1, 2});  // untouched in eval
  Tensor e = batch_norm(empty({0, 3}), std::nullopt, std::nullopt, make({0, 0, 0}, {3}),
                        make({1, 1, 1}, {3}), true, 0.1, 1e-5);
  EXPECT_EQ(shape_of(e), (Shape{0, 3}));
}

TEST_F(Normalization, GroupNormNormalizesGroupsThenAppliesTheChannelAffine) {
  // [N=2, C=4, L=3], 2 groups of 2 channels: each group is 6 consecutive elements
  for (const Precision& p : kFloatingTypes) {
    Values x = rounded(wave(24), p.dtype);
    Values w = {1, 2, 3, 4}, b = {0, 1, 0, -1};
    Values expected = normalize_rows_ref(x, 6, {}, {}, 1e-5);
    for (int i = 0; i < 24; ++i) {
      int c = (i / 3) % 4;
      expected[i] = expected[i] * w[c] + b[c];
    }
    Tensor y =
        group_norm(make(x, {2, 4, 3}, p.dtype), 2, make(w, {4}, p.dtype), make(b, {4}, p.dtype));
    EXPECT_EQ(y.dtype(), p.dtype);
    expect_close(values(y), expected, p.tol * 8);
  }
  EXPECT_EQ(shape_of(group_norm(empty({0, 4, 3}), 2)), (Shape{0, 4, 3}));
}

// Kept whole across families: also softmax, the losses, embedding, one_hot and pad.
TEST_F(Normalization, BadInputsGetErrorsNamingTheOp) {
  Tensor x = make(wave(6), {2, 3});
  Tensor i64 = make({1, 2, 3}, {3}, ScalarType::Int64);
  expect_error([&] { softmax(i64, 0); }, "loom::softmax.int",
               "expected a floating point input or dtype, found int64");
  expect_error([&] { log_softmax(x, 2); }, "loom::log_softmax.int", "dim 2 is out of range");
  expect_error([&] { softmax(x, 0, ScalarType::Int32); }, "loom::softmax.int", "found int32");
  // errors of the ops a decomposition calls are wrapped with the decomposition's name
  expect_error([&] { native_layer_norm(x, {2}, std::nullopt, std::nullopt, 1e-5); },
               "loom::native_layer_norm",
               "normalized_shape [2] does not match the trailing dims of an input of shape [2, 3]");
  expect_error([&] { layer_norm(x, {2}); }, "loom::layer_norm",
               "normalized_shape [2] does not match the trailing dims of an input of shape [2, 3]");
  expect_error([&] { layer_norm(x, {2, 2, 3}); }, "loom::layer_norm", "does not match");
  expect_error(
      [&] {
        layer_norm(x, {3}, make({1, 1}, {2}));
      },
      "loom::layer_norm", "expected weight of shape [3], found [2]");
  expect_error([&] { layer_norm(x, {3}, std::nullopt, make({1}, {1})); }, "loom::layer_norm",
               "expected bias of shape [3], found [1]");
  expect_error([&] { layer_norm(i64, {3}); }, "loom::layer_norm",
               "expected a floating point input, found int64");

  Tensor logits = make(wave(10), {2, 5});
  expect_error(
      [&] {
        nll_loss(logits, make({7, 0}, {2}, ScalarType::Int64));
      },
      "loom::nll_loss", "target 7 is out of bounds for 5 classes");
  expect_error(
      [&] {
        nll_loss(logits, make({-1, 0}, {2}, ScalarType::Int64));
      },
      "loom::nll_loss", "target -1 is out of bounds for 5 classes");
  expect_error(
      [&] {
        nll_loss(logits, make({1, 0}, {2}, ScalarType::Int64), std::nullopt, 3);
      },
      "loom::nll_loss", "reduction 3 is not one of 0 (none), 1 (mean), 2 (sum)");
  expect_error(
      [&] {
        nll_loss(logits, make({1, 0, 1}, {3}, ScalarType::Int64));
      },
      "loom::nll_loss", "expected a target of shape [2] for an input of shape [2, 5], found [3]");
  expect_error(
      [&] {
        nll_loss(logits, make({1, 0}, {2}));
      },
      "loom::nll_loss", "expected an int64 or int32 target, found float32");
  expect_error(
      [&] {
        nll_loss(logits, make({1, 0}, {2}, ScalarType::Int64), make({1, 1}, {2}));
      },
      "loom::nll_loss", "expected a weight of shape [5] (one per class), found [2]");
  expect_error(
      [&] {
        cross_entropy_loss(logits, make({1, 5}, {2}, ScalarType::Int64));
      },
      "loom::cross_entropy_loss", "[loom::nll_loss] target 5 is out of bounds for 5 classes");
  expect_error(
      [&] {
        cross_entropy_loss(logits, make({1, 0}, {2}, ScalarType::Int64), std::nullopt, 1, -100,
                           1.5);
      },
      "loom::cross_entropy_loss", "expected label_smoothing in [0, 1], found 1.5");
  expect_error([&] { mse_loss(x, x, -1); }, "loom::mse_loss", "reduction -1 is not one of");
  expect_error(
      [&] {
        binary_cross_entropy_with_logits(x, make({1, 0}, {2}));
      },
      "loom::binary_cross_entropy_with_logits", "expected a target of the input's shape");

  Tensor weight = make(wave(15), {5, 3});
  expect_error(
      [&] {
        embedding(weight, make({1, 5}, {2}, ScalarType::Int64));
      },
      "loom::embedding", "index 5 is out of range for a weight of 5 rows");
  expect_error([&] { embedding(weight, make({-1}, {1}, ScalarType::Int32)); }, "loom::embedding",
               "index -1 is out of range");
  expect_error([&] { embedding(weight, make({1}, {1})); }, "loom::embedding",
               "expected int32 or int64 indices, found float32");
  expect_error(
      [&] {
        embedding(make({1, 2}, {2}), i64);
      },
      "loom::embedding", "expected a 2-D weight, found 1 dims");

  Tensor bn = make(wave(12), {2, 3, 2});
  expect_error(
      [&] {
        batch_norm(bn, std::nullopt, std::nullopt, std::nullopt, std::nullopt, false, 0.1, 1e-5);
      },
      "loom::batch_norm", "expected running_mean and running_var when training is false");
  expect_error(
      [&] {
        batch_norm(bn, make({1, 1}, {2}), std::nullopt, std::nullopt, std::nullopt, true, 0.1,
                   1e-5);
      },
      "loom::batch_norm", "expected weight of shape [3] (one per channel), found [2]");
  expect_error(
      [&] {
        batch_norm(bn, std::nullopt, std::nullopt, make({0, 0, 0, 0}, {4}), make({1, 1, 1, 1}, {4}),
                   true, 0.1, 1e-5);
      },
      "loom::batch_norm", "expected running_mean of shape [3]");
  expect_error(
      [&] {
        batch_norm(make({1, 2, 3}, {1, 3}), std::nullopt, std::nullopt, std::nullopt, std::nullopt,
                   true, 0.1, 1e-5);
      },
      "loom::batch_norm", "expected more than 1 value per channel when training");
  expect_error(
      [&] {
        batch_norm(make({1, 2, 3}, {3}), std::nullopt, std::nullopt, std::nullopt, std::nullopt,
                   true, 0.1, 1e-5);
      },
      "loom::batch_norm", "expected an input of at least 2 dims");
  expect_error(
      [&] {
        group_norm(make(wave(12), {2, 3, 2}), 2);
      },
      "loom::group_norm", "expected the number of channels 3 to be divisible by num_groups 2");
  expect_error(
      [&] {
        group_norm(make(wave(16), {2, 4, 2}), 2, make({1, 1, 1}, {3}));
      },
      "loom::group_norm", "expected weight of shape [4]");

  expect_error(
      [&] {
        one_hot(make({1, 3}, {2}, ScalarType::Int64), 3);
      },
      "loom::one_hot", "class 3 is out of range for 3 classes");
  expect_error([&] { one_hot(make({-1}, {1}, ScalarType::Int64)); }, "loom::one_hot",
               "class -1 is out of range");
  expect_error([&] { one_hot(make({1}, {1}, ScalarType::Int32)); }, "loom::one_hot",
               "does not support dtype int32 (claims: int64)");
  expect_error([&] { one_hot(empty({0}, TensorOptions().dtype(ScalarType::Int64))); },
               "loom::one_hot", "can't infer num_classes from an empty input");

  expect_error([&] { pad(x, {1}); }, "loom::pad", "expected an even number of pads");
  expect_error([&] { pad(x, {1, 1, 1, 1, 1, 1}); }, "loom::pad", "at most 2 per dim (4), found 6");
  expect_error([&] { pad(x, {-2, -2}); }, "loom::pad", "gives a negative size -1");
  expect_error(
      [&] {
        pad(x, {3, 0}, "reflect");
      },
      "loom::pad", "is too large for mode 'reflect' (at most 2)");
  expect_error(
      [&] {
        pad(x, {-1, 0}, "replicate");
      },
      "loom::pad", "expected non-negative padding in mode 'replicate'");
  expect_error(
      [&] {
        pad(x, {1, 0}, "wrap");
      },
      "loom::pad", "expected mode 'constant', 'reflect', 'replicate' or 'circular', found 'wrap'");
}

TEST_F(Normalization, InstanceNorm) {
  // torch.nn.functional.instance_norm(torch.tensor([[[1., 2, 3, 4]]]), running_mean=zeros(1),
  // running_var=ones(1)) -> normalized per sample and channel; the running stats move by 0.1
  // towards the mean 2.5 and the unbiased variance 5/3.
  Tensor x = make({1, 2, 3, 4}, {1, 1, 4});
  Tensor running_mean = loom::zeros({1});
  Tensor running_var = loom::ones({1});
  Tensor y =
      instance_norm(x, std::nullopt, std::nullopt, running_mean, running_var, true, 0.1, 1e-5);
  expect_close(values(y),
               {-1.3416354199689269, -0.447211806656309, 0.447211806656309, 1.3416354199689269},
               1e-5);
  expect_close(values(running_mean), {0.25});
  expect_close(values(running_var), {0.9 + 0.1 * 5.0 / 3.0});
  expect_error(
      [&] {
        instance_norm(loom::zeros({2, 3}), std::nullopt, std::nullopt, std::nullopt, std::nullopt,
                      true, 0.1, 1e-5);
      },
      "loom::instance_norm", "at least 3 dims");
}

}  // namespace
}  // namespace loom::testing
