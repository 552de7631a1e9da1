// The nn ops through the typed API, against float64 references computed here with plain
// loops: softmax / log_softmax, layer_norm, batch_norm, group_norm, embedding, the losses
// (nll, cross entropy, mse, bce with logits), one_hot, pad; strided, zero-size and
// reduced-precision inputs, the meta device, and the errors.
#include "ops_test_util.h"

namespace loom::testing {
namespace {

class Nn : public OpsTest {};

Shape shape_of(const Tensor& t) {
  return shape(t);
}

// Deterministic, irregular values in about [-3, 3].
Values wave(size_t n, double phase = 0) {
  Values v(n);
  for (size_t i = 0; i < n; ++i) v[i] = 3 * std::sin(1.3 * static_cast<double>(i) + phase);
  return v;
}

// Row-major softmax over dim `d` of a tensor of `shape`.
Values softmax_ref(const Values& x, const Shape& shape, int64_t d, bool log) {
  int64_t inner = 1, outer = 1;
  for (size_t k = d + 1; k < shape.size(); ++k) inner *= shape[k];
  for (int64_t k = 0; k < d; ++k) outer *= shape[k];
  const int64_t n = shape[d];
  Values out(x.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t j) { return o * n * inner + j * inner + i; };
      double m = -INFINITY, s = 0;
      for (int64_t j = 0; j < n; ++j) m = std::max(m, x[at(j)]);
      for (int64_t j = 0; j < n; ++j) s += std::exp(x[at(j)] - m);
      for (int64_t j = 0; j < n; ++j) {
        out[at(j)] = log ? x[at(j)] - m - std::log(s) : std::exp(x[at(j)] - m) / s;
      }
    }
  }
  return out;
}

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

struct Precision {
  ScalarType dtype;
  double tol;
};
const Precision kFloatingTypes[] = {{ScalarType::Float64, 1e-12},
                                    {ScalarType::Float32, 1e-5},
                                    {ScalarType::Float16, 4e-3},
                                    {ScalarType::BFloat16, 3e-2}};

// The values of `x` after rounding to `dtype` (what the kernel actually sees).
Values rounded(const Values& x, ScalarType dtype) {
  return values(make(x, {static_cast<int64_t>(x.size())}, dtype));
}

TEST_F(Nn, SoftmaxAndLogSoftmaxMatchTheReferenceAlongEveryDim) {
  const Shape shape = {2, 3, 4};
  for (const Precision& p : kFloatingTypes) {
    Values x = rounded(wave(24), p.dtype);
    Tensor t = make(x, shape, p.dtype);
    for (int64_t d : {0, 1, 2}) {
      Tensor s = softmax(t, d);
      EXPECT_EQ(s.dtype(), p.dtype);
      EXPECT_EQ(shape_of(s), shape);
      expect_close(values(s), softmax_ref(x, shape, d, false), p.tol);
      expect_close(values(log_softmax(t, d - 3)), softmax_ref(x, shape, d, true), p.tol);
    }
  }
}

TEST_F(Nn, SoftmaxOnStridedZeroSizeAndZeroDimInputs) {
  Values x = wave(12);
  Tensor base = make(x, {3, 4}, ScalarType::Float64);
  Tensor t = base.t();  // [4, 3], transposed strides
  Values xt(12);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) xt[i * 3 + j] = x[j * 4 + i];
  expect_close(values(softmax(t, 1)), softmax_ref(xt, {4, 3}, 1, false), 1e-12);
  expect_close(values(log_softmax(t, 0)), softmax_ref(xt, {4, 3}, 0, true), 1e-12);
  Tensor sliced = base.slice(1, 0, 4, 2);  // [3, 2], stride 2 along dim 1
  Values xs = {x[0], x[2], x[4], x[6], x[8], x[10]};
  expect_close(values(softmax(sliced, 1)), softmax_ref(xs, {3, 2}, 1, false), 1e-12);
  EXPECT_EQ(shape_of(softmax(empty({0, 3}), 1)), (Shape{0, 3}));
  EXPECT_EQ(shape_of(log_softmax(empty({2, 0}), 1)), (Shape{2, 0}));
  expect_close(values(softmax(make({5}, {}), 0)), {1});
  expect_close(values(log_softmax(make({5}, {}), -1)), {0});
}

TEST_F(Nn, SoftmaxIsStableForLargeAndInfiniteInputs) {
  Tensor big = make({1000, 1000, -1000}, {3});
  expect_close(values(softmax(big, 0)), {0.5, 0.5, 0});
  expect_close(values(log_softmax(big, 0)), {-std::log(2.0), -std::log(2.0), -2000 - std::log(2.0)},
               1e-6);
  // -inf entries get probability 0; a row of only -inf is NaN (0 / 0), as in PyTorch
  Tensor masked = make({0, -INFINITY, 0, -INFINITY, -INFINITY, -INFINITY}, {2, 3});
  Values s = values(softmax(masked, 1));
  expect_close({s[0], s[1], s[2]}, {0.5, 0, 0.5});
  EXPECT_TRUE(std::isnan(s[3]) && std::isnan(s[4]) && std::isnan(s[5]));
  Values l = values(log_softmax(masked, 1));
  EXPECT_EQ(l[1], -INFINITY);
  expect_close({l[0]}, {-std::log(2.0)});
}

TEST_F(Nn, SoftmaxDtypeArgument) {
  Tensor i = make({1, 2, 3}, {3}, ScalarType::Int64);
  Tensor s = softmax(i, 0, ScalarType::Float64);
  EXPECT_EQ(s.dtype(), ScalarType::Float64);
  expect_close(values(s), softmax_ref({1, 2, 3}, {3}, 0, false), 1e-12);
  Tensor h = log_softmax(make({1, 2, 3}, {3}), 0, ScalarType::Float16);
  EXPECT_EQ(h.dtype(), ScalarType::Float16);
  expect_close(values(h), softmax_ref({1, 2, 3}, {3}, 0, true), 2e-3);
  EXPECT_EQ(i.softmax(0, ScalarType::Float32).dtype(), ScalarType::Float32);
}

TEST_F(Nn, NativeLayerNormMatchesTheReference) {
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

TEST_F(Nn, LayerNormOnStridedAndZeroSizeInputs) {
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

// nll reference: input rows [N, C] (already flattened positions), optional weights.
double nll_ref(const Values& x, int64_t classes, const std::vector<int64_t>& target,
               const Values& w, int64_t reduction, int64_t ignore, Values* per = nullptr) {
  double total = 0, total_w = 0;
  for (size_t n = 0; n < target.size(); ++n) {
    double l = 0;
    if (target[n] != ignore) {
      double wc = w.empty() ? 1 : w[target[n]];
      l = -wc * x[n * classes + target[n]];
      total += l;
      total_w += wc;
    }
    if (per) per->push_back(l);
  }
  return reduction == 1 ? total / total_w : total;
}

TEST_F(Nn, NllLossReductionsWeightsAndIgnoreIndex) {
  Values x = wave(15);
  std::vector<int64_t> target = {4, 0, 2};
  Tensor t = make({4, 0, 2}, {3}, ScalarType::Int64);
  Tensor in = make(x, {3, 5}, ScalarType::Float64);
  Values per;
  nll_ref(x, 5, target, {}, 0, -100, &per);
  expect_close(values(nll_loss(in, t, std::nullopt, 0)), per, 1e-12);
  expect_close(values(nll_loss(in, t)), {nll_ref(x, 5, target, {}, 1, -100)}, 1e-12);
  expect_close(values(nll_loss(in, t, std::nullopt, 2)), {nll_ref(x, 5, target, {}, 2, -100)},
               1e-12);
  Values w = {0.5, 1, 2, 3, 4};
  Tensor wt = make(w, {5}, ScalarType::Float64);
  expect_close(values(nll_loss(in, t, wt)), {nll_ref(x, 5, target, w, 1, -100)}, 1e-12);
  // ignore_index: no loss and no weight for target 0
  expect_close(values(nll_loss(in, t, wt, 1, 0)), {nll_ref(x, 5, target, w, 1, 0)}, 1e-12);
  Values ignored_per;
  nll_ref(x, 5, target, w, 0, 0, &ignored_per);
  expect_close(values(nll_loss(in, t, wt, 0, 0)), ignored_per, 1e-12);
  EXPECT_EQ(values(nll_loss(in, t, wt, 0, 0))[1], 0);
  // every target ignored: the weighted mean is 0 / 0
  EXPECT_TRUE(std::isnan(
      nll_loss(in, make({1, 1, 1}, {3}, ScalarType::Int64), std::nullopt, 1, 1).item<double>()));
  // int32 targets and float16 input
  expect_close(values(nll_loss(make(x, {3, 5}, ScalarType::Float16),
                               make({4, 0, 2}, {3}, ScalarType::Int32))),
               {nll_ref(rounded(x, ScalarType::Float16), 5, target, {}, 1, -100)}, 2e-3);
}

TEST_F(Nn, NllLossShapes) {
  Values x = wave(24);
  // [N, C, d] = [2, 3, 4]: position (n, k) uses x[n, :, k]
  Tensor in = make(x, {2, 3, 4}, ScalarType::Float64);
  std::vector<int64_t> target = {0, 1, 2, 0, 2, 2, 1, 0};
  Values rows;  // positions as rows of 3 classes
  for (int n = 0; n < 2; ++n)
    for (int k = 0; k < 4; ++k)
      for (int c = 0; c < 3; ++c) rows.push_back(x[n * 12 + c * 4 + k]);
  Tensor t = make({0, 1, 2, 0, 2, 2, 1, 0}, {2, 4}, ScalarType::Int64);
  Values per;
  nll_ref(rows, 3, target, {}, 0, -100, &per);
  Tensor none = nll_loss(in, t, std::nullopt, 0);
  EXPECT_EQ(shape_of(none), (Shape{2, 4}));
  expect_close(values(none), per, 1e-12);
  expect_close(values(nll_loss(in, t)), {nll_ref(rows, 3, target, {}, 1, -100)}, 1e-12);
  // 1-D input and 0-dim target
  expect_close(values(nll_loss(make({1, 2, 3}, {3}), make({2}, {}, ScalarType::Int64))), {-3});
  // strided input (transposed) and target
  Tensor strided = make(x, {3, 2, 4}, ScalarType::Float64).transpose(0, 1);  // [2, 3, 4]
  Values srows;
  for (int n = 0; n < 2; ++n)
    for (int k = 0; k < 4; ++k)
      for (int c = 0; c < 3; ++c) srows.push_back(x[c * 8 + n * 4 + k]);
  Tensor st = make({0, 2, 1, 2, 0, 2, 1, 0}, {4, 2}, ScalarType::Int64).t();
  std::vector<int64_t> starget = {0, 1, 0, 1, 2, 2, 2, 0};
  expect_close(values(nll_loss(strided, st, std::nullopt, 2)),
               {nll_ref(srows, 3, starget, {}, 2, -100)}, 1e-12);
  // zero-size batch
  Tensor e = empty({0, 3});
  EXPECT_EQ(
      shape_of(nll_loss(e, empty({0}, TensorOptions().dtype(ScalarType::Int64)), std::nullopt, 0)),
      (Shape{0}));
  EXPECT_EQ(
      values(nll_loss(e, empty({0}, TensorOptions().dtype(ScalarType::Int64)), std::nullopt, 2)),
      (Values{0}));
}

TEST_F(Nn, CrossEntropyIsLogSoftmaxThenNll) {
  Values x = wave(12);
  Tensor in = make(x, {3, 4}, ScalarType::Float64);
  Tensor t = make({3, 0, 1}, {3}, ScalarType::Int64);
  std::vector<int64_t> target = {3, 0, 1};
  Values logp = softmax_ref(x, {3, 4}, 1, true);
  Values w = {1, 2, 0.5, 3};
  Tensor wt = make(w, {4}, ScalarType::Float64);
  for (int64_t r : {0, 1, 2}) {
    Values per;
    double reduced = nll_ref(logp, 4, target, w, r, 1, &per);
    Tensor loss = cross_entropy_loss(in, t, wt, r, 1);
    expect_close(values(loss), r == 0 ? per : Values{reduced}, 1e-12);
  }
  // label smoothing (s = 0.2, C = 4), weighted mean with target 0 ignored
  const double s = 0.2;
  double nll = 0, smooth = 0, total_w = 0;
  for (int n = 0; n < 3; ++n) {
    if (target[n] == 0) continue;
    nll -= w[target[n]] * logp[n * 4 + target[n]];
    total_w += w[target[n]];
    for (int c = 0; c < 4; ++c) smooth -= w[c] * logp[n * 4 + c];
  }
  expect_close(values(cross_entropy_loss(in, t, wt, 1, 0, s)),
               {(1 - s) * nll / total_w + s / 4 * smooth / total_w}, 1e-12);
  // class probabilities
  Values probs = {0.25, 0.25, 0.25, 0.25, 1, 0, 0, 0, 0, 0.5, 0.5, 0};
  double expected = 0;
  for (int i = 0; i < 12; ++i) expected -= probs[i] * logp[i];
  expect_close(values(cross_entropy_loss(in, make(probs, {3, 4}, ScalarType::Float64))),
               {expected / 3}, 1e-12);
  // float32 on [N, C, d] and bfloat16 with a tolerance
  Tensor in3 = make(wave(24), {2, 3, 4});
  Tensor t3 = make({0, 1, 2, 0, 2, 2, 1, 0}, {2, 4}, ScalarType::Int64);
  Tensor ref3 = nll_loss(log_softmax(make(wave(24), {2, 3, 4}, ScalarType::Float64), 1), t3);
  expect_close(values(cross_entropy_loss(in3, t3)), values(ref3), 1e-5);
  expect_close(values(cross_entropy_loss(make(wave(24), {2, 3, 4}, ScalarType::BFloat16), t3)),
               values(ref3), 3e-2);
}

TEST_F(Nn, MseLossReductions) {
  Tensor a = make({1, 2, 3, 4}, {2, 2}), b = make({0, 2, 5, 1}, {2, 2});
  expect_close(values(mse_loss(a, b, 0)), {1, 0, 4, 9});
  expect_close(values(mse_loss(a, b)), {3.5});
  expect_close(values(mse_loss(a, b, 2)), {14});
  expect_close(values(mse_loss(a.t(), b, 0)), {1, 1, 9, 9});  // strided
  EXPECT_TRUE(std::isnan(mse_loss(empty({0}), empty({0})).item<double>()));
}

TEST_F(Nn, EmbeddingGathersRows) {
  Values w = wave(15);
  Tensor weight = make(w, {5, 3});
  for (ScalarType it : {ScalarType::Int64, ScalarType::Int32}) {
    Tensor idx = make({4, 0, 4, 2}, {2, 2}, it);
    Tensor out = embedding(weight, idx);
    EXPECT_EQ(shape_of(out), (Shape{2, 2, 3}));
    Values expected;
    for (int i : {4, 0, 4, 2})
      for (int j = 0; j < 3; ++j) expected.push_back(static_cast<float>(w[i * 3 + j]));
    expect_close(values(out), expected);
  }
  // strided weight (transposed) and indices (sliced); other dtypes copy exactly
  Tensor wt = make(w, {3, 5}, ScalarType::Float16).t();                    // [5, 3]
  Tensor idx = make({1, 9, 3}, {3}, ScalarType::Int64).slice(0, 0, 3, 2);  // {1, 3}
  Values expected;
  for (int i : {1, 3})
    for (int j = 0; j < 3; ++j)
      expected.push_back(values(make({w[j * 5 + i]}, {1}, ScalarType::Float16))[0]);
  expect_close(values(embedding(wt, idx)), expected, 0);
  EXPECT_EQ(values(embedding(make({1, 2, 3, 4}, {2, 2}, ScalarType::Int32),
                             make({1}, {}, ScalarType::Int64))),
            (Values{3, 4}));
  EXPECT_EQ(shape_of(embedding(weight, empty({0}, TensorOptions().dtype(ScalarType::Int64)))),
            (Shape{0, 3}));
}

TEST_F(Nn, BatchNormTrainingUsesBatchStatsAndUpdatesRunningStats) {
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

TEST_F(Nn, BatchNormEvalUsesRunningStats) {
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

TEST_F(Nn, GroupNormNormalizesGroupsThenAppliesTheChannelAffine) {
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

TEST_F(Nn, BinaryCrossEntropyWithLogitsIsStable) {
  Values x = {-100, -2, 0, 0.5, 3, 100}, t = {0, 1, 0.5, 1, 0, 1};
  Values pw = {1, 2, 3, 0.5, 1, 2}, w = {1, 1, 2, 2, 0.5, 1};
  auto ref = [&](bool pos, bool weighted) {
    Values out;
    for (int i = 0; i < 6; ++i) {
      double softplus_neg = std::max(-x[i], 0.0) + std::log1p(std::exp(-std::abs(x[i])));
      double lw = pos ? 1 + (pw[i] - 1) * t[i] : 1;
      out.push_back(((1 - t[i]) * x[i] + lw * softplus_neg) * (weighted ? w[i] : 1));
    }
    return out;
  };
  Tensor xt = make(x, {6}, ScalarType::Float64), tt = make(t, {6}, ScalarType::Float64);
  expect_close(values(binary_cross_entropy_with_logits(xt, tt, std::nullopt, std::nullopt, 0)),
               ref(false, false), 1e-12);
  Values r = ref(true, true);
  expect_close(values(binary_cross_entropy_with_logits(xt, tt, make(w, {6}, ScalarType::Float64),
                                                       make(pw, {6}, ScalarType::Float64), 2)),
               {r[0] + r[1] + r[2] + r[3] + r[4] + r[5]}, 1e-12);
  Values f = values(binary_cross_entropy_with_logits(make(x, {6}), make(t, {6})));
  Values plain = ref(false, false);
  double mean = 0;
  for (double v : plain) mean += v / 6;
  expect_close(f, {mean}, 1e-5);
  EXPECT_TRUE(std::isfinite(f[0]));
}

TEST_F(Nn, OneHot) {
  Tensor x = make({2, 0, 1}, {3}, ScalarType::Int64);
  Tensor y = one_hot(x);
  EXPECT_EQ(y.dtype(), ScalarType::Int64);
  EXPECT_EQ(shape_of(y), (Shape{3, 3}));
  EXPECT_EQ(values(y), (Values{0, 0, 1, 1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(shape_of(one_hot(make({1, 0, 1, 1}, {2, 2}, ScalarType::Int64).t(), 4)),
            (Shape{2, 2, 4}));
  EXPECT_EQ(values(one_hot(make({1, 0, 1, 1}, {2, 2}, ScalarType::Int64).t(), 2)),
            (Values{0, 1, 0, 1, 1, 0, 0, 1}));
  EXPECT_EQ(shape_of(one_hot(empty({0}, TensorOptions().dtype(ScalarType::Int64)), 5)),
            (Shape{0, 5}));
}

TEST_F(Nn, PadConstantReflectReplicateCircular) {
  Tensor x = make({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor p = pad(x, {1, 2});
  EXPECT_EQ(shape_of(p), (Shape{2, 6}));
  EXPECT_EQ(values(p), (Values{0, 1, 2, 3, 0, 0, 0, 4, 5, 6, 0, 0}));
  EXPECT_EQ(values(pad(x, {0, 0, 1, 0}, "constant", 7.0)), (Values{7, 7, 7, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(values(pad(x, {-1, 1})), (Values{2, 3, 0, 5, 6, 0}));  // negative pads crop
  EXPECT_EQ(shape_of(pad(x, {-3, 0})), (Shape{2, 0}));
  EXPECT_EQ(values(pad(x.t(), {1, 0})), (Values{0, 1, 4, 0, 2, 5, 0, 3, 6}));  // strided
  EXPECT_EQ(values(pad(x, {2, 1}, "reflect")), (Values{3, 2, 1, 2, 3, 2, 6, 5, 4, 5, 6, 5}));
  EXPECT_EQ(values(pad(x, {1, 2}, "replicate")), (Values{1, 1, 2, 3, 3, 3, 4, 4, 5, 6, 6, 6}));
  EXPECT_EQ(values(pad(x, {1, 2}, "circular")), (Values{3, 1, 2, 3, 1, 2, 6, 4, 5, 6, 4, 5}));
  EXPECT_EQ(values(pad(x, {0, 0, 1, 1}, "replicate")),
            (Values{1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6}));
  Tensor i = pad(make({1, 2}, {2}, ScalarType::Int32), {1, 1}, "constant", 9.0);
  EXPECT_EQ(i.dtype(), ScalarType::Int32);
  EXPECT_EQ(values(i), (Values{9, 1, 2, 9}));
  EXPECT_EQ(shape_of(pad(empty({0, 2}), {1, 1})), (Shape{0, 4}));
}

TEST_F(Nn, MetaDeviceGivesShapes) {
  TensorOptions meta = TensorOptions().device(Device{kMeta, -1});
  Tensor x = empty({4, 5, 6}, meta);
  EXPECT_EQ(shape_of(softmax(x, 1)), (Shape{4, 5, 6}));
  EXPECT_EQ(log_softmax(x, 1, ScalarType::Float64).dtype(), ScalarType::Float64);
  auto [y, mean, rstd] = native_layer_norm(x, {5, 6}, std::nullopt, std::nullopt, 1e-5);
  EXPECT_EQ(shape_of(mean), (Shape{4, 1, 1}));
  EXPECT_EQ(shape_of(layer_norm(x, {6})), (Shape{4, 5, 6}));
  Tensor target = empty({4, 6}, TensorOptions().dtype(ScalarType::Int64).device(Device{kMeta, -1}));
  EXPECT_EQ(shape_of(nll_loss(x, target, std::nullopt, 0)), (Shape{4, 6}));
  EXPECT_EQ(shape_of(nll_loss(x, target)), (Shape{}));
  EXPECT_EQ(shape_of(cross_entropy_loss(x, target)), (Shape{}));
  Tensor idx = empty({2, 7}, TensorOptions().dtype(ScalarType::Int64).device(Device{kMeta, -1}));
  EXPECT_EQ(shape_of(embedding(empty({10, 3}, meta), idx)), (Shape{2, 7, 3}));
  EXPECT_EQ(shape_of(mse_loss(x, x, 0)), (Shape{4, 5, 6}));
}

TEST_F(Nn, Float32SoftmaxIsAccurateAndExactAtTheEdges) {
  // exp over its whole float range through pairs [x, 0]: softmax = e^x / (1 + e^x)
  Values pairs;
  for (double x = -103; x <= 0; x += 0.0625) {
    pairs.push_back(x);
    pairs.push_back(0);
  }
  const int64_t n = static_cast<int64_t>(pairs.size()) / 2;
  const Values got = values(softmax(make(pairs, {n, 2}), 1));
  const Values got_log = values(log_softmax(make(pairs, {n, 2}), 1));
  for (int64_t i = 0; i < n; ++i) {
    const double e = std::exp(static_cast<double>(static_cast<float>(pairs[2 * i])));
    const double p = e / (1 + e);
    // within 4 float ulps; below 2^-126 (x < -87.3) the value may flush to 0
    if (p > 1.2e-38) {
      EXPECT_NEAR(got[2 * i], p, 4 * 6e-8 * p) << "x = " << pairs[2 * i];
    } else {
      EXPECT_LE(got[2 * i], 1.2e-38) << "x = " << pairs[2 * i];
    }
    EXPECT_NEAR(got[2 * i + 1], 1 / (1 + e), 2.4e-7) << "x = " << pairs[2 * i];
    EXPECT_NEAR(got_log[2 * i + 1], -std::log1p(e), 2.4e-7) << "x = " << pairs[2 * i];
  }
  // masked entries are exactly 0; an all -inf line, an inf or a NaN make the line NaN
  const Values masked = values(softmax(
      make({0, -INFINITY, 1, -INFINITY, -INFINITY, -INFINITY, 0, INFINITY, NAN, 0, 0, 0}, {4, 3}),
      1));
  EXPECT_EQ(masked[1], 0.0);
  EXPECT_NEAR(masked[0], 1 / (1 + std::exp(1.0)), 1e-7);
  for (int i = 3; i < 9; ++i) EXPECT_TRUE(std::isnan(masked[i])) << i;
  for (int i = 9; i < 12; ++i) EXPECT_NEAR(masked[i], 1.0 / 3, 1e-7) << i;
}

TEST_F(Nn, MetaKernelsOfUnstructuredOps) {
  const Device meta_device{kMeta, -1};
  const TensorOptions meta = TensorOptions().device(meta_device);
  const TensorOptions meta_int = TensorOptions().dtype(ScalarType::Int64).device(meta_device);
  Tensor x = empty({4, 5, 6}, meta);
  // shaped like an input
  Tensor b = bernoulli(x);
  EXPECT_EQ(shape_of(b), (Shape{4, 5, 6}));
  EXPECT_EQ(b.device().type, kMeta);
  EXPECT_EQ(shape_of(dropout(x, 0.5, true)), (Shape{4, 5, 6}));
  EXPECT_EQ(dropout(x, 0.5, false).impl(), x.impl());
  EXPECT_EQ(shape_of(one_hot(empty({3, 2}, meta_int), 7)), (Shape{3, 2, 7}));
  // integer indices: adjacent indexed dims stay in place, separated ones go first
  Tensor i23 = empty({2, 3}, meta_int), i3 = empty({3}, meta_int);
  EXPECT_EQ(shape_of(index(x, {i23})), (Shape{2, 3, 5, 6}));
  EXPECT_EQ(shape_of(index(x, {std::nullopt, i23, i3})), (Shape{4, 2, 3}));
  EXPECT_EQ(shape_of(index(x, {i3, std::nullopt, i23})), (Shape{2, 3, 5}));
  EXPECT_EQ(shape_of(index(x, {std::nullopt})), (Shape{4, 5, 6}));
  // data-dependent shapes and bad arguments are errors naming the op
  expect_error([&] { nonzero(x); }, "loom::nonzero",
               "the output shape depends on the number of nonzero elements");
  expect_error([&] { one_hot(empty({3}, meta_int)); }, "loom::one_hot",
               "depends on the largest class (num_classes=-1)");
  expect_error([&] { one_hot(x, 3); }, "loom::one_hot", "expected an int64 input, found float32");
  expect_error(
      [&] { index(x, {empty({4}, TensorOptions().dtype(ScalarType::Bool).device(meta_device))}); },
      "loom::index.Tensor", "the number of true elements of a mask");
  expect_error(
      [&] {
        index(x, {i23, empty({4}, meta_int)});
      },
      "loom::index.Tensor", "cannot be broadcast");
  expect_error(
      [&] {
        index(x, {i3, i3, i3, i3});
      },
      "loom::index.Tensor", "too many indices for a tensor of 3 dims: found 4");
  expect_error([&] { dropout(x, 1.5, true); }, "loom::dropout",
               "expected p in [0, 1], found p=1.5");
  expect_error([&] { bernoulli(empty({2}, meta_int)); }, "loom::bernoulli",
               "dtype int64 is not supported");
}

TEST_F(Nn, CrossEntropyWithProbabilitiesAcceptsNegativeIgnoreIndex) {
  Tensor x = make(wave(6), {2, 3});
  Tensor probs = make({0.2, 0.3, 0.5, 1, 0, 0}, {2, 3});
  const double want = cross_entropy_loss(x, probs).item<double>();
  EXPECT_EQ(cross_entropy_loss(x, probs, std::nullopt, 1, -1).item<double>(), want);
  expect_error([&] { cross_entropy_loss(x, probs, std::nullopt, 1, 0); },
               "loom::cross_entropy_loss", "expected no ignore_index with class probabilities");
}

TEST_F(Nn, BadInputsGetErrorsNamingTheOp) {
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
               "expected an int64 input, found int32");
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

}  // namespace
}  // namespace loom::testing
