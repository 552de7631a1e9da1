// conv2d (and its backward ops), conv1d, conv3d, the transposed convolutions, im2col and
// col2im through the typed API, against float64 references computed here: groups, stride, padding,
// dilation, bias, non-contiguous inputs, zero-size batches, the meta device and errors.
#include <array>
#include <cmath>
#include "loom/random.h"
#include "ops_test_util.h"

namespace loom::testing {
namespace {

class Conv : public OpsTest {};

struct ConvCase {
  int64_t n, c, h, w, oc, kh, kw;
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, groups = 1;
  int64_t oh() const { return (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1; }
  int64_t ow() const { return (w + 2 * pw - dw * (kw - 1) - 1) / sw + 1; }
  // Calls f(input index, weight index, output index) for each product term.
  template <typename F>
  void terms(F&& f) const {
    int64_t cg = c / groups, og = oc / groups;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t o = 0; o < oc; ++o)
        for (int64_t y = 0; y < oh(); ++y)
          for (int64_t x = 0; x < ow(); ++x)
            for (int64_t ci = 0; ci < cg; ++ci)
              for (int64_t i = 0; i < kh; ++i)
                for (int64_t j = 0; j < kw; ++j) {
                  int64_t iy = y * sh - ph + i * dh, ix = x * sw - pw + j * dw;
                  if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                  int64_t ch = (o / og) * cg + ci;
                  f(((b * c + ch) * h + iy) * w + ix, ((o * cg + ci) * kh + i) * kw + j,
                    ((b * oc + o) * oh() + y) * ow() + x);
                }
  }
  Values forward(const Values& x, const Values& wt, const Values* bias) const {
    Values out(static_cast<size_t>(n * oc * oh() * ow()), 0.0);
    terms([&](int64_t i, int64_t k, int64_t o) { out[o] += x[i] * wt[k]; });
    if (bias)
      for (size_t o = 0; o < out.size(); ++o) out[o] += (*bias)[(o / (oh() * ow())) % oc];
    return out;
  }
  Shape input() const { return {n, c, h, w}; }
  Shape weight() const { return {oc, c / groups, kh, kw}; }
  Shape output() const { return {n, oc, oh(), ow()}; }
};

Tensor run_conv(const ConvCase& p, const Tensor& x, const Tensor& w,
                const std::optional<Tensor>& b) {
  return conv2d(x, w, b, {p.sh, p.sw}, {p.ph, p.pw}, {p.dh, p.dw}, p.groups);
}

const ConvCase kCases[] = {
    {2, 3, 7, 6, 4, 3, 3},                            // plain
    {1, 4, 8, 9, 6, 3, 2, 2, 1, 1, 0, 1, 1, 2},       // stride, padding, groups
    {2, 6, 9, 9, 6, 3, 3, 1, 2, 2, 1, 2, 1, 3},       // dilation, groups
    {1, 2, 5, 5, 4, 1, 1, 1, 1, 0, 0, 1, 1, 2},       // 1x1 grouped
    {1, 16, 10, 10, 16, 3, 3, 1, 1, 1, 1, 1, 1, 16},  // depthwise
};

TEST_F(Conv, Conv2dMatchesReference) {
  manual_seed(11);
  for (ScalarType t : {ScalarType::Float32, ScalarType::Float64, ScalarType::BFloat16}) {
    double tol = t == ScalarType::Float64 ? 1e-12 : t == ScalarType::Float32 ? 1e-5 : 3e-2;
    for (const ConvCase& p : kCases) {
      Tensor x = random(p.input(), t), w = random(p.weight(), t), b = random({p.oc}, t);
      Values bias = values(b);
      Tensor y = run_conv(p, x, w, b);
      ASSERT_EQ(shape(y), p.output());
      EXPECT_EQ(y.dtype(), t);
      expect_close(values(y), p.forward(values(x), values(w), &bias), tol);
      expect_close(values(run_conv(p, x, w, std::nullopt)),
                   p.forward(values(x), values(w), nullptr), tol);
    }
  }
}

TEST_F(Conv, Conv2dOfNonContiguousAndUnbatchedInputs) {
  manual_seed(12);
  ConvCase p{2, 3, 6, 5, 4, 3, 3, 1, 1, 1, 1};
  Tensor x = random({2, 3, 5, 6}).transpose(2, 3);  // [2, 3, 6, 5], strided
  Tensor w = random({4, 3, 3, 3}).transpose(2, 3);
  expect_close(values(run_conv(p, x, w, std::nullopt)), p.forward(values(x), values(w), nullptr),
               1e-5);
  ConvCase one = p;
  one.n = 1;
  Tensor x1 = x.select(0, 1);
  Tensor y = run_conv(one, x1, w, std::nullopt);
  EXPECT_EQ(shape(y), (Shape{4, 6, 5}));
  expect_close(values(y), one.forward(values(x1), values(w), nullptr), 1e-5);
}

TEST_F(Conv, Conv1dIsConv2dOverOneRow) {
  manual_seed(13);
  Tensor x = random({2, 4, 9}), w = random({6, 2, 3}), b = random({6});
  Tensor y = conv1d(x, w, b, 2, 1, 2, 2);
  ConvCase p{2, 4, 1, 9, 6, 1, 3, 1, 2, 0, 1, 1, 2, 2};
  Values bias = values(b);
  ASSERT_EQ(shape(y), (Shape{2, 6, p.ow()}));
  expect_close(values(y), p.forward(values(x), values(w), &bias), 1e-5);
  EXPECT_EQ(shape(conv1d(x.select(0, 0), w, b, 1, 0, 1, 2)), (Shape{6, 7}));
}

TEST_F(Conv, BackwardConvolutionsMatchReferenceSums) {
  manual_seed(14);
  for (ScalarType t : {ScalarType::Float32, ScalarType::Float64, ScalarType::BFloat16}) {
    double tol = t == ScalarType::Float64 ? 1e-12 : t == ScalarType::Float32 ? 1e-4 : 3e-2;
    for (const ConvCase& p : kCases) {
      Tensor x = random(p.input(), t), w = random(p.weight(), t), g = random(p.output(), t);
      Values xv = values(x), wv = values(w), gv = values(g);
      Values gx(xv.size(), 0.0), gw(wv.size(), 0.0);
      p.terms([&](int64_t i, int64_t k, int64_t o) {
        gx[i] += wv[k] * gv[o];
        gw[k] += xv[i] * gv[o];
      });
      Tensor dx = conv2d_backward_input(g, w, p.input(), {p.sh, p.sw}, {p.ph, p.pw}, {p.dh, p.dw},
                                        p.groups);
      Tensor dw = conv2d_backward_weight(g, x, p.weight(), {p.sh, p.sw}, {p.ph, p.pw}, {p.dh, p.dw},
                                         p.groups);
      ASSERT_EQ(shape(dx), p.input());
      ASSERT_EQ(shape(dw), p.weight());
      expect_close(values(dx), gx, tol);
      expect_close(values(dw), gw, tol);
    }
  }
}

TEST_F(Conv, BackwardInputMatchesFiniteDifferences) {
  // conv2d is linear in its input: (f(x + e*d) - f(x)) / e . g == d . dx exactly up to
  // rounding, checked in float64 along a random direction.
  manual_seed(15);
  ConvCase p{1, 2, 5, 5, 3, 3, 3, 2, 2, 1, 1};
  Tensor x = random(p.input(), ScalarType::Float64), w = random(p.weight(), ScalarType::Float64);
  Tensor d = random(p.input(), ScalarType::Float64), g = random(p.output(), ScalarType::Float64);
  double eps = 1e-3;
  Values f0 = values(run_conv(p, x, w, std::nullopt));
  Values f1 =
      values(run_conv(p, add(x, mul(d, make({eps}, {}, ScalarType::Float64))), w, std::nullopt));
  Values gv = values(g), dv = values(d);
  double lhs = 0, rhs = 0;
  for (size_t i = 0; i < f0.size(); ++i) lhs += (f1[i] - f0[i]) / eps * gv[i];
  Values dx = values(conv2d_backward_input(g, w, p.input(), {2, 2}, {1, 1}, {1, 1}, 1));
  for (size_t i = 0; i < dv.size(); ++i) rhs += dv[i] * dx[i];
  EXPECT_NEAR(lhs, rhs, 1e-8);
}

// Channels-last operands (Note [Convolution layouts]): the result of each of the three ops
// is channels last when an operand it reads is, with the same values as row-major ones.
TEST_F(Conv, ChannelsLastOperandsGiveChannelsLastResults) {
  manual_seed(16);
  const auto cl = [](const Tensor& t) { return t.contiguous(MemoryFormat::ChannelsLast); };
  for (ScalarType t : {ScalarType::Float32, ScalarType::Float64, ScalarType::BFloat16}) {
    double tol = t == ScalarType::Float64 ? 1e-12 : t == ScalarType::Float32 ? 1e-4 : 3e-2;
    for (const ConvCase& p : kCases) {
      Tensor x = random(p.input(), t), w = random(p.weight(), t), g = random(p.output(), t);
      Tensor b = random({p.oc}, t);
      Values xv = values(x), wv = values(w), gv = values(g), bias = values(b);
      Values gx(xv.size(), 0.0), gw(wv.size(), 0.0);
      p.terms([&](int64_t i, int64_t k, int64_t o) {
        gx[i] += wv[k] * gv[o];
        gw[k] += xv[i] * gv[o];
      });
      const Values y = p.forward(xv, wv, &bias);
      // channels last from the input, the weight, or both; a weight with one input
      // channel per group ([16, 1, 3, 3]) is both layouts at once and suggests row-major
      ASSERT_EQ(cl(x).suggest_memory_format(), MemoryFormat::ChannelsLast);
      for (auto [xi, wi] : {std::pair{cl(x), w}, std::pair{x, cl(w)}, std::pair{cl(x), cl(w)}}) {
        Tensor out = run_conv(p, xi, wi, b);
        const bool channels_last = xi.suggest_memory_format() == MemoryFormat::ChannelsLast ||
                                   wi.suggest_memory_format() == MemoryFormat::ChannelsLast;
        EXPECT_EQ(out.is_contiguous(MemoryFormat::ChannelsLast), channels_last);
        EXPECT_EQ(out.is_contiguous(), !channels_last);
        expect_close(values(out), y, tol);
      }
      const std::vector<int64_t> stride{p.sh, p.sw}, padding{p.ph, p.pw}, dilation{p.dh, p.dw};
      Tensor dx = conv2d_backward_input(cl(g), w, p.input(), stride, padding, dilation, p.groups);
      Tensor dw =
          conv2d_backward_weight(cl(g), cl(x), p.weight(), stride, padding, dilation, p.groups);
      EXPECT_TRUE(dx.is_contiguous(MemoryFormat::ChannelsLast));
      EXPECT_TRUE(dw.is_contiguous(MemoryFormat::ChannelsLast));
      expect_close(values(dx), gx, tol);
      expect_close(values(dw), gw, tol);
      // row-major operands keep row-major results
      EXPECT_TRUE(run_conv(p, x, w, b).is_contiguous());
      // a caller's row-major out= is served through a temporary
      Tensor into = empty(p.output(), TensorOptions().dtype(t));
      conv2d_out(into, cl(x), cl(w), b, stride, padding, dilation, p.groups);
      EXPECT_TRUE(into.is_contiguous());
      expect_close(values(into), y, tol);
    }
  }
  // shape-only calls on the meta device give the same layout
  TensorOptions meta = TensorOptions().device(Device{kMeta, -1});
  Tensor y = conv2d(cl(empty({8, 64, 56, 56}, meta)), empty({32, 64, 3, 3}, meta));
  EXPECT_EQ(shape(y), (Shape{8, 32, 54, 54}));
  EXPECT_EQ(y.suggest_memory_format(), MemoryFormat::ChannelsLast);
}

// Kept whole across families: also max_pool2d(_with_indices) and adaptive_avg_pool2d (pool).
TEST_F(Conv, ZeroSizeBatchAndMetaDevice) {
  Tensor y = conv2d(empty({0, 3, 5, 5}), empty({4, 3, 3, 3}));
  EXPECT_EQ(shape(y), (Shape{0, 4, 3, 3}));
  Tensor dw = conv2d_backward_weight(empty({0, 4, 3, 3}), empty({0, 3, 5, 5}), {4, 3, 3, 3}, {1, 1},
                                     {0, 0}, {1, 1}, 1);
  EXPECT_EQ(values(dw), Values(4 * 3 * 3 * 3, 0.0));
  EXPECT_EQ(shape(max_pool2d(empty({0, 2, 4, 4}), {2, 2})), (Shape{0, 2, 2, 2}));
  TensorOptions meta = TensorOptions().device(Device{kMeta, -1});
  EXPECT_EQ(shape(conv2d(empty({8, 64, 56, 56}, meta), empty({64, 64, 3, 3}, meta), std::nullopt,
                         {2, 2}, {1, 1})),
            (Shape{8, 64, 28, 28}));
  auto [v, i] =
      max_pool2d_with_indices(empty({2, 3, 7, 7}, meta), {3, 3}, {2, 2}, {1, 1}, {1, 1}, true);
  EXPECT_EQ(shape(v), (Shape{2, 3, 4, 4}));
  EXPECT_EQ(i.dtype(), ScalarType::Int64);
  EXPECT_EQ(shape(adaptive_avg_pool2d(empty({2, 3, 7, 7}, meta), {1, 1})), (Shape{2, 3, 1, 1}));
}

TEST_F(Conv, ConvErrors) {
  Tensor x = empty({1, 4, 5, 5});
  expect_error(
      [&] {
        conv2d(x, empty({2, 3, 3, 3}));
      },
      "loom::conv2d", "expected input with 3 channels");
  expect_error(
      [&] {
        conv2d(x, empty({3, 2, 3, 3}), std::nullopt, 1, 0, 1, 2);
      },
      "loom::conv2d", "to be a positive multiple of groups 2");
  expect_error(
      [&] {
        conv2d(x, empty({2, 4, 7, 7}));
      },
      "loom::conv2d", "to be at least as large as the (dilated) kernel");
  expect_error(
      [&] {
        conv2d(empty({4, 5}), empty({2, 4, 1, 1}));
      },
      "loom::conv2d", "expected a 3-D (unbatched) or 4-D (batched) input, found [4, 5]");
  expect_error(
      [&] {
        conv2d(x, empty({2, 4, 1, 1}), empty({3}));
      },
      "loom::conv2d", "expected bias of shape [2], found [3]");
  expect_error(
      [&] {
        conv2d(x, empty({2, 4, 1, 1}), std::nullopt, 0);
      },
      "loom::conv2d", "expected positive stride");
  expect_error(
      [&] {
        conv2d(x, empty({2, 4, 1, 1}), std::nullopt, 1, 0, 1, 0);
      },
      "loom::conv2d", "expected positive groups");
  expect_error(
      [&] {
        conv2d(make({1}, {1, 1, 1, 1}, ScalarType::Int32), empty({1, 1, 1, 1}));
      },
      "loom::conv2d", "expected input of a floating point dtype, found int32");
  expect_error(
      [&] {
        conv2d_backward_input(empty({1, 2, 4, 4}), empty({2, 4, 3, 3}), {1, 4, 5, 5}, {1, 1},
                              {0, 0}, {1, 1}, 1);
      },
      "loom::conv2d_backward_input",
      "expected grad_output of shape [1, 2, 3, 3], found [1, 2, 4, 4]");
  expect_error(
      [&] {
        conv1d(empty({2, 3, 4, 5}), empty({2, 3, 1}));
      },
      "loom::conv1d", "expected a 2-D (unbatched) or 3-D (batched) input");
}

// Transposed convolution (Note [Transposed convolution]): the scatter it defines,
// computed here in float64 for stride, padding, output_padding, dilation and groups.
struct TransposeCase {
  int64_t n, c, h, w, oc, kh, kw;
  int64_t s = 1, p = 0, op = 0, d = 1, groups = 1;
  int64_t oh() const { return (h - 1) * s - 2 * p + d * (kh - 1) + op + 1; }
  int64_t ow() const { return (w - 1) * s - 2 * p + d * (kw - 1) + op + 1; }
  Values reference(const Values& x, const Values& wt) const {
    Values out(static_cast<size_t>(n * oc * oh() * ow()), 0.0);
    int64_t cg = c / groups, og = oc / groups;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t ci = 0; ci < c; ++ci)
        for (int64_t y = 0; y < h; ++y)
          for (int64_t x0 = 0; x0 < w; ++x0)
            for (int64_t o = 0; o < og; ++o)
              for (int64_t i = 0; i < kh; ++i)
                for (int64_t j = 0; j < kw; ++j) {
                  int64_t oy = y * s - p + i * d, ox = x0 * s - p + j * d;
                  if (oy < 0 || oy >= oh() || ox < 0 || ox >= ow()) continue;
                  int64_t oc_index = (ci / cg) * og + o;
                  out[((b * oc + oc_index) * oh() + oy) * ow() + ox] +=
                      x[((b * c + ci) * h + y) * w + x0] * wt[((ci * og + o) * kh + i) * kw + j];
                }
    return out;
  }
};

TEST_F(Conv, ConvTranspose2dMatchesTheScatterItDefines) {
  const TransposeCase cases[] = {
      {2, 3, 4, 5, 2, 3, 3},                 // plain
      {1, 4, 3, 3, 6, 3, 2, 2, 1, 1, 1, 2},  // stride, padding, output_padding, groups
      {1, 2, 4, 4, 2, 2, 2, 1, 1, 1, 2},     // output_padding < dilation only: cropped
      {2, 4, 3, 4, 4, 3, 3, 3, 2, 2, 2, 4},  // depthwise, dilation 2, stride 3
  };
  for (const TransposeCase& k : cases) {
    Values x = random_values(k.n * k.c * k.h * k.w);
    Values wt = random_values(k.c * (k.oc / k.groups) * k.kh * k.kw);
    Tensor out = conv_transpose2d(make(x, {k.n, k.c, k.h, k.w}, ScalarType::Float64),
                                  make(wt, {k.c, k.oc / k.groups, k.kh, k.kw}, ScalarType::Float64),
                                  std::nullopt, k.s, k.p, k.op, k.groups, k.d);
    EXPECT_EQ(shape(out), (Shape{k.n, k.oc, k.oh(), k.ow()}));
    expect_close(values(out), k.reference(x, wt), 1e-9);
  }
}

TEST_F(Conv, ConvTransposeAgreesWithPyTorch) {
  // x = torch.arange(1., 5., dtype=torch.float64).view(1, 1, 2, 2)
  Tensor x = make({1, 2, 3, 4}, {1, 1, 2, 2}, ScalarType::Float64);
  // F.conv_transpose2d(x, torch.arange(1., 9.).view(1, 2, 2, 2), torch.tensor([0.5, -1.]),
  //                    stride=2)
  Tensor out =
      conv_transpose2d(x, make({1, 2, 3, 4, 5, 6, 7, 8}, {1, 2, 2, 2}, ScalarType::Float64),
                       make({0.5, -1}, {2}, ScalarType::Float64), 2);
  EXPECT_EQ(shape(out), (Shape{1, 2, 4, 4}));
  expect_close(values(out), {1.5,  2.5,  2.5,  4.5,  3.5,  4.5,  6.5,  8.5,  3.5,  6.5, 4.5,
                             8.5,  9.5,  12.5, 12.5, 16.5, 4.0,  5.0,  9.0,  11.0, 6.0, 7.0,
                             13.0, 15.0, 14.0, 17.0, 19.0, 23.0, 20.0, 23.0, 27.0, 31.0});
  // F.conv_transpose2d(x, torch.arange(1., 5.).view(1, 1, 2, 2), stride=1, padding=1,
  //                    output_padding=1, dilation=2)
  Tensor cropped = conv_transpose2d(x, make({1, 2, 3, 4}, {1, 1, 2, 2}, ScalarType::Float64),
                                    std::nullopt, 1, 1, 1, 1, 2);
  EXPECT_EQ(shape(cropped), (Shape{1, 1, 3, 3}));
  expect_close(values(cropped), {4, 6, 8, 6, 4, 8, 12, 12, 16});
  // F.conv_transpose1d(torch.tensor([[[1., 2., 3.]]]), torch.tensor([[[1., -1.]]]),
  //                    stride=2, output_padding=1)
  Tensor one =
      conv_transpose1d(make({1, 2, 3}, {1, 1, 3}), make({1, -1}, {1, 1, 2}), std::nullopt, 2, 0, 1);
  expect_close(values(one), {1, -1, 2, -2, 3, -3, 0});
  // Unbatched input: [C, H, W] in, [C_out, H_out, W_out] out.
  EXPECT_EQ(shape(conv_transpose2d(empty({1, 2, 2}), empty({1, 3, 2, 2}))), (Shape{3, 3, 3}));
  Tensor meta = conv_transpose2d(empty({2, 4, 5, 5}, TensorOptions().device(Device{kMeta, -1})),
                                 empty({4, 3, 3, 3}, TensorOptions().device(Device{kMeta, -1})),
                                 std::nullopt, 2, 1, 1, 1);
  EXPECT_EQ(shape(meta), (Shape{2, 3, 10, 10}));
}

TEST_F(Conv, ConvTransposeErrors) {
  Tensor x = empty({1, 4, 3, 3});
  // PyTorch: "output padding must be smaller than either stride or dilation, ..."
  expect_error(
      [&] {
        conv_transpose2d(x, empty({4, 2, 3, 3}), std::nullopt, 1, 0, 1);
      },
      "loom::conv_transpose2d.input",
      "expected output_padding smaller than either stride "
      "or dilation, found output_padding [1, 1], stride [1, 1]");
  expect_error(
      [&] {
        conv_transpose2d(x, empty({3, 2, 3, 3}));
      },
      "loom::conv_transpose2d.input", "expected input with 3 channels");
  expect_error(
      [&] {
        conv_transpose2d(x, empty({4, 2, 3, 3}), std::nullopt, 1, 0, 0, 3);
      },
      "loom::conv_transpose2d.input", "to be divisible by groups 3");
  expect_error(
      [&] {
        conv_transpose2d(x, empty({4, 2, 3, 3}), empty({3}));
      },
      "loom::conv_transpose2d.input", "expected bias of shape [2], found [3]");
  expect_error(
      [&] {
        conv_transpose2d(x, empty({4, 2, 1, 1}), std::nullopt, 1, 2);
      },
      "loom::conv_transpose2d.input", "expected a positive output size, found [-1, -1]");
  expect_error(
      [&] {
        conv_transpose2d(empty({4, 3}), empty({4, 2, 1, 1}));
      },
      "loom::conv_transpose2d.input", "expected a 3-D (unbatched) or 4-D (batched) input");
  expect_error(
      [&] {
        conv_transpose1d(empty({1, 4, 3}), empty({4, 2, 3}), std::nullopt, IntList{1, 1});
      },
      "loom::conv_transpose1d", "expected one value for stride, found 2");
}

// Note [conv3d as conv2d]: against the definition, summed directly.
TEST_F(Conv, Conv3dMatchesTheSumItDefines) {
  const int64_t n = 2, c = 4, d = 5, h = 4, w = 5, oc = 6, groups = 2;
  const int64_t kd = 3, kh = 2, kw = 3;
  const std::array<int64_t, 3> stride{2, 1, 2}, padding{1, 0, 1}, dilation{1, 2, 1};
  Tensor x = loom::randn({n, c, d, h, w});
  Tensor wt = loom::randn({oc, c / groups, kd, kh, kw});
  Tensor bias = loom::randn({oc});
  Tensor y =
      conv3d(x, wt, bias, {stride[0], stride[1], stride[2]}, {padding[0], padding[1], padding[2]},
             {dilation[0], dilation[1], dilation[2]}, groups);
  const std::array<int64_t, 3> in{d, h, w}, k{kd, kh, kw};
  std::array<int64_t, 3> out{};
  for (int i = 0; i < 3; ++i) {
    out[i] = (in[i] + 2 * padding[i] - dilation[i] * (k[i] - 1) - 1) / stride[i] + 1;
  }
  ASSERT_EQ(shape(y), (Shape{n, oc, out[0], out[1], out[2]}));
  const Values xv = values(x), wv = values(wt), bv = values(bias), yv = values(y);
  const int64_t cg = c / groups, og = oc / groups;
  size_t at = 0;
  double worst = 0;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < oc; ++o)
      for (int64_t z = 0; z < out[0]; ++z)
        for (int64_t yy = 0; yy < out[1]; ++yy)
          for (int64_t xx = 0; xx < out[2]; ++xx, ++at) {
            double sum = bv[o];
            for (int64_t ci = 0; ci < cg; ++ci)
              for (int64_t a = 0; a < kd; ++a)
                for (int64_t i = 0; i < kh; ++i)
                  for (int64_t j = 0; j < kw; ++j) {
                    const int64_t iz = z * stride[0] - padding[0] + a * dilation[0];
                    const int64_t iy = yy * stride[1] - padding[1] + i * dilation[1];
                    const int64_t ix = xx * stride[2] - padding[2] + j * dilation[2];
                    if (iz < 0 || iz >= d || iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                    const int64_t ch = (o / og) * cg + ci;
                    sum += xv[(((b * c + ch) * d + iz) * h + iy) * w + ix] *
                           wv[(((o * cg + ci) * kd + a) * kh + i) * kw + j];
                  }
            worst = std::max(worst, std::abs(sum - yv[at]));
          }
  EXPECT_LT(worst, 1e-4);
  // Unbatched input: [C, D, H, W] in, [OC, OD, OH, OW] out.
  EXPECT_EQ(shape(conv3d(loom::ones({1, 3, 3, 3}), loom::ones({1, 1, 2, 2, 2}))),
            (Shape{1, 2, 2, 2}));
  expect_error(
      [&] {
        conv3d(loom::ones({1, 1, 3, 3}), loom::ones({1, 1, 2, 2, 2}), {}, {1, 1});
      },
      "loom::conv3d", "expected one or three values for stride, found 2");
  expect_error(
      [&] {
        conv3d(loom::ones({1, 1, 1, 3, 3}), loom::ones({1, 1, 2, 2, 2}));
      },
      "loom::conv3d", "expected an input depth (padded) of at least");
  expect_error(
      [&] {
        conv3d(loom::ones({1, 3, 3}), loom::ones({1, 1, 2, 2, 2}));
      },
      "loom::conv3d", "expected a 4-D (unbatched) or 5-D (batched) input");
}

// Note [im2col and col2im]
TEST_F(Conv, Im2colAndCol2imAgreeWithPyTorch) {
  Tensor x = make({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3});
  // torch.nn.functional.unfold(torch.arange(1., 10.).view(1, 1, 3, 3), kernel_size=2)
  // -> [[[1, 2, 4, 5], [2, 3, 5, 6], [4, 5, 7, 8], [5, 6, 8, 9]]]
  Tensor columns = im2col(x, {2, 2}, {1, 1}, {0, 0}, {1, 1});
  EXPECT_EQ(shape(columns), (Shape{1, 4, 4}));
  EXPECT_EQ(values(columns), (Values{1, 2, 4, 5, 2, 3, 5, 6, 4, 5, 7, 8, 5, 6, 8, 9}));
  // torch.nn.functional.fold(columns, output_size=(3, 3), kernel_size=2) adds overlapping
  // blocks: [[1, 4, 3], [8, 20, 12], [7, 16, 9]]
  EXPECT_EQ(values(col2im(columns, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {1, 1})),
            (Values{1, 4, 3, 8, 20, 12, 7, 16, 9}));
  // unfold(torch.tensor([[[[1., 2], [3, 4]]]]), kernel_size=2, padding=1, stride=2)
  // -> [[[0, 0, 0, 4], [0, 0, 3, 0], [0, 2, 0, 0], [1, 0, 0, 0]]]
  Tensor small = make({1, 2, 3, 4}, {1, 2, 2});  // unbatched [C, H, W]
  Tensor padded_columns = im2col(small, {2, 2}, {1, 1}, {1, 1}, {2, 2});
  EXPECT_EQ(shape(padded_columns), (Shape{4, 4}));
  EXPECT_EQ(values(padded_columns), (Values{0, 0, 0, 4, 0, 0, 3, 0, 0, 2, 0, 0, 1, 0, 0, 0}));
  // fold of it gives the image back (each pixel is in one block)
  EXPECT_EQ(values(col2im(padded_columns, {2, 2}, {2, 2}, {1, 1}, {1, 1}, {2, 2})),
            (Values{1, 2, 3, 4}));
  // unfold(x, kernel_size=0) raises "kernel size should be greater than zero, but got
  // kernel_height: 0 kernel_width: 2"
  expect_error(
      [&] {
        im2col(x, {0, 2}, {1, 1}, {0, 0}, {1, 1});
      },
      "loom::im2col",
      "kernel size should be greater than zero, but got kernel_height: 0 kernel_width: 2");
  expect_error(
      [&] {
        im2col(x, {4, 4}, {1, 1}, {0, 0}, {1, 1});
      },
      "loom::im2col",
      "calculated shape of the array of sliding blocks as (0, 0), but its components "
      "must be at least one");
  expect_error(
      [&] {
        col2im(columns, {3, 3}, {3, 1}, {1, 1}, {0, 0}, {1, 1});
      },
      "loom::col2im",
      "Expected size of input's dimension 1 to be divisible by the product of "
      "kernel_size, but got input.size(1)=4");
  expect_error(
      [&] {
        col2im(columns, {4, 4}, {2, 2}, {1, 1}, {0, 0}, {1, 1});
      },
      "loom::col2im",
      "expected size of input's dimension 2 to match the calculated number of sliding "
      "blocks 3 * 3 = 9, but got input.size(2)=4");
}

}  // namespace
}  // namespace loom::testing
