// The losses through the typed API, against float64 references computed here with plain
// loops: nll_loss, cross_entropy_loss (class indices, probabilities, label smoothing),
// mse_loss, binary_cross_entropy_with_logits; reductions, weights, ignore_index, strided,
// zero-size and reduced-precision inputs, and the meta device.
#include <cmath>

#include "ops_test_util.h"

namespace loom::testing {
namespace {

class Loss : public OpsTest {};

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

TEST_F(Loss, NllLossReductionsWeightsAndIgnoreIndex) {
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

TEST_F(Loss, NllLossShapes) {
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

TEST_F(Loss, CrossEntropyIsLogSoftmaxThenNll) {
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

TEST_F(Loss, CrossEntropyWithProbabilitiesAcceptsNegativeIgnoreIndex) {
  Tensor x = make(wave(6), {2, 3});
  Tensor probs = make({0.2, 0.3, 0.5, 1, 0, 0}, {2, 3});
  const double want = cross_entropy_loss(x, probs).item<double>();
  EXPECT_EQ(cross_entropy_loss(x, probs, std::nullopt, 1, -1).item<double>(), want);
  expect_error([&] { cross_entropy_loss(x, probs, std::nullopt, 1, 0); },
               "loom::cross_entropy_loss", "expected no ignore_index with class probabilities");
}

TEST_F(Loss, MseLossReductions) {
  Tensor a = make({1, 2, 3, 4}, {2, 2}), b = make({0, 2, 5, 1}, {2, 2});
  expect_close(values(mse_loss(a, b, 0)), {1, 0, 4, 9});
  expect_close(values(mse_loss(a, b)), {3.5});
  expect_close(values(mse_loss(a, b, 2)), {14});
  expect_close(values(mse_loss(a.t(), b, 0)), {1, 1, 9, 9});  // strided
  EXPECT_TRUE(std::isnan(mse_loss(empty({0}), empty({0})).item<double>()));
}

TEST_F(Loss, BinaryCrossEntropyWithLogitsIsStable) {
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

// Kept whole across families: also (log_)softmax, (native_)layer_norm and embedding.
TEST_F(Loss, MetaDeviceGivesShapes) {
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

TEST_F(Loss, L1SmoothL1HuberAndKlDiv) {
  Tensor x = make({1, 2, 3}, {3});
  Tensor y = make({2, 2, 5}, {3});
  // torch.nn.functional.l1_loss(x, y) -> 1.; reduction='sum' -> 3.
  EXPECT_EQ(values(l1_loss(x, y)), (Values{1}));
  EXPECT_EQ(values(l1_loss(x, y, 2)), (Values{3}));
  Tensor zero = loom::zeros({3});
  Tensor target = make({0.5, 1, 3}, {3});
  // torch.nn.functional.smooth_l1_loss(zeros, [0.5, 1, 3], reduction='none') -> [0.125, 0.5, 2.5]
  EXPECT_EQ(values(smooth_l1_loss(zero, target, 0)), (Values{0.125, 0.5, 2.5}));
  expect_close(values(smooth_l1_loss(zero, target)), {3.125 / 3});
  // beta=0.5: [0.5 - 0.25, 1 - 0.25, 3 - 0.25]
  EXPECT_EQ(values(smooth_l1_loss(zero, target, 0, 0.5)), (Values{0.25, 0.75, 2.75}));
  // torch.nn.functional.huber_loss(zeros, [0.5, 1, 3], reduction='none', delta=2.) -> [0.125,
  // 0.5, 4.]
  EXPECT_EQ(values(huber_loss(zero, target, 0, 2.0)), (Values{0.125, 0.5, 4}));
  expect_error([&] { huber_loss(zero, target, 1, 0.0); }, "loom::huber_loss",
               "expected a positive delta, found 0");
  expect_error([&] { smooth_l1_loss(zero, target, 1, -1.0); }, "loom::smooth_l1_loss",
               "expected a non-negative beta, found -1");
  // torch.nn.functional.kl_div(torch.tensor([-1., -2]), torch.tensor([0.5, 0.]),
  // reduction='none') -> [0.5 * (log(0.5) + 1), 0.]
  Tensor log_q = make({-1, -2}, {2}, ScalarType::Float64);
  expect_close(values(kl_div(log_q, make({0.5, 0}, {2}, ScalarType::Float64), 0)),
               {0.15342640972002736, 0}, 1e-12);
  expect_close(values(kl_div(log_q, make({0.5, 0}, {2}, ScalarType::Float64))),
               {0.07671320486001368}, 1e-12);
  // log_target=True: exp(t) * (t - self) with t = log(0.5)
  expect_close(values(kl_div(log_q.slice(0, 0, 1), make({std::log(0.5)}, {1}, ScalarType::Float64),
                             0, true)),
               {0.15342640972002736}, 1e-12);
}

}  // namespace
}  // namespace loom::testing
