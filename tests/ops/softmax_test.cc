// softmax and log_softmax through the typed API, against float64 references computed
// here with plain loops: every dim, strided, zero-size, 0-dim and reduced-precision
// inputs, stability for large and infinite inputs, the dtype argument, float32 accuracy.
#include "ops_test_util.h"

namespace loom::testing {
namespace {

class Softmax : public OpsTest {};

TEST_F(Softmax, SoftmaxAndLogSoftmaxMatchTheReferenceAlongEveryDim) {
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

TEST_F(Softmax, SoftmaxOnStridedZeroSizeAndZeroDimInputs) {
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

// As in PyTorch (empty_like keeps the layout), a channels-last input gives a
// channels-last result, along every dim; an out= argument keeps its own layout.
TEST_F(Softmax, ChannelsLastInputsGiveChannelsLastResults) {
  const Shape shape = {2, 3, 4, 5};
  const Values x = wave(120);
  Tensor t = make(x, shape).contiguous(MemoryFormat::ChannelsLast);
  for (int64_t d : {0, 1, 2, 3}) {
    Tensor s = softmax(t, d);
    EXPECT_TRUE(s.is_contiguous(MemoryFormat::ChannelsLast)) << "dim " << d;
    expect_close(values(s), softmax_ref(x, shape, d, false));
    Tensor l = log_softmax(t, d);
    EXPECT_TRUE(l.is_contiguous(MemoryFormat::ChannelsLast)) << "dim " << d;
    expect_close(values(l), softmax_ref(x, shape, d, true));
  }
  Tensor rows = empty({2, 3, 4, 5});
  softmax_out(rows, t, 1);
  EXPECT_TRUE(rows.is_contiguous());
  expect_close(values(rows), softmax_ref(x, shape, 1, false));
}

TEST_F(Softmax, SoftmaxIsStableForLargeAndInfiniteInputs) {
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

TEST_F(Softmax, SoftmaxDtypeArgument) {
  Tensor i = make({1, 2, 3}, {3}, ScalarType::Int64);
  Tensor s = softmax(i, 0, ScalarType::Float64);
  EXPECT_EQ(s.dtype(), ScalarType::Float64);
  expect_close(values(s), softmax_ref({1, 2, 3}, {3}, 0, false), 1e-12);
  Tensor h = log_softmax(make({1, 2, 3}, {3}), 0, ScalarType::Float16);
  EXPECT_EQ(h.dtype(), ScalarType::Float16);
  expect_close(values(h), softmax_ref({1, 2, 3}, {3}, 0, true), 2e-3);
  EXPECT_EQ(i.softmax(0, ScalarType::Float32).dtype(), ScalarType::Float32);
}

TEST_F(Softmax, Float32SoftmaxIsAccurateAndExactAtTheEdges) {
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

}  // namespace
}  // namespace loom::testing
