// The 2-D pooling ops (max_pool2d(_with_indices), avg_pool2d, adaptive_avg_pool2d and
// adaptive_max_pool2d) and grid_sampler_2d through the typed API, against float64 references
// computed here: stride, padding, dilation, ceil_mode, count_include_pad, divisor_override,
// non-contiguous inputs and errors.
#include <cmath>
#include <limits>

#include "loom/random.h"
#include "ops_test_util.h"

namespace loom::testing {
namespace {

class Pool : public OpsTest {};

// Reference max pooling of one [h, w] plane: values and flat indices.
void reference_max_pool(const Values& x, int64_t h, int64_t w, int64_t k, int64_t s, int64_t p,
                        int64_t d, int64_t oh, int64_t ow, Values& out, Values& idx) {
  for (int64_t y = 0; y < oh; ++y)
    for (int64_t c = 0; c < ow; ++c) {
      double best = -std::numeric_limits<double>::infinity();
      double at = -1;
      for (int64_t i = 0; i < k; ++i)
        for (int64_t j = 0; j < k; ++j) {
          int64_t iy = y * s - p + i * d, ix = c * s - p + j * d;
          if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
          if (at < 0 || x[iy * w + ix] > best) {
            best = x[iy * w + ix];
            at = static_cast<double>(iy * w + ix);
          }
        }
      out.push_back(best);
      idx.push_back(at);
    }
}

TEST_F(Pool, MaxPoolWithIndicesMatchesReference) {
  manual_seed(16);
  struct Case {
    int64_t h, w, k, s, p, d;
    bool ceil;
    int64_t oh, ow;
  };
  const Case cases[] = {
      {6, 6, 2, 2, 0, 1, false, 3, 3},
      {7, 7, 3, 2, 1, 1, false, 4, 4},
      {7, 7, 2, 2, 0, 1, true, 4, 4},
      {6, 6, 3, 2, 1, 1, true, 4, 4},
      {5, 5, 2, 2, 1, 1, true, 3, 3},  // the last window would start in the right padding
      {9, 8, 3, 1, 1, 2, false, 7, 6},
      {5, 5, 3, 3, 0, 1, true, 2, 2},
      // windows inside the rows (the fast path), overlapping and with a ragged edge
      {6, 6, 2, 1, 0, 1, false, 5, 5},
      {7, 9, 3, 2, 0, 1, false, 3, 4},
      // planes with more outputs than a vector holds, and a remainder
      {28, 28, 2, 2, 0, 1, false, 14, 14},
      {31, 34, 3, 2, 0, 1, false, 15, 16},
      // windows by tap with the padding's row and column computed again, clipped
      {30, 33, 3, 2, 1, 1, false, 15, 17},
      {20, 21, 3, 1, 1, 2, false, 18, 19},
      {30, 30, 3, 2, 1, 1, true, 16, 16},
      {27, 27, 2, 2, 0, 1, true, 14, 14},
      {3, 3, 3, 1, 1, 1, false, 3, 3},  // one window inside, the eight around it clipped
  };
  for (ScalarType t :
       {ScalarType::Float32, ScalarType::Float64, ScalarType::Float16, ScalarType::BFloat16}) {
    for (const Case& c : cases) {
      Tensor x = random({2, 3, c.h, c.w}, t);
      auto [v, i] =
          max_pool2d_with_indices(x, {c.k, c.k}, {c.s, c.s}, {c.p, c.p}, {c.d, c.d}, c.ceil);
      ASSERT_EQ(shape(v), (Shape{2, 3, c.oh, c.ow})) << c.h << " k" << c.k << " s" << c.s;
      Values xv = values(x), ref, ref_idx;
      for (int64_t plane = 0; plane < 6; ++plane) {
        Values px(xv.begin() + plane * c.h * c.w, xv.begin() + (plane + 1) * c.h * c.w);
        reference_max_pool(px, c.h, c.w, c.k, c.s, c.p, c.d, c.oh, c.ow, ref, ref_idx);
      }
      expect_close(values(v), ref, 0);
      EXPECT_EQ(values(i), ref_idx);
      expect_close(values(max_pool2d(x, {c.k}, {c.s}, {c.p}, {c.d}, c.ceil)), ref, 0);
    }
  }
  // stride defaults to the kernel size; strided input; NaN wins
  Tensor x = make({1, 5, 3, 2, 0, 8, 7, 6, 4, NAN, 1, 1, 2, 3, 4, 9}, {1, 4, 4});
  auto [v, i] = max_pool2d_with_indices(x.transpose(1, 2), {2, 2});
  Values got = values(v);
  EXPECT_EQ(got[0], 8);
  EXPECT_TRUE(std::isnan(got[1]));
  EXPECT_EQ(values(i), (Values{5, 6, 9, 15}));
  // the same on the dense input (the fast path): NaN still wins
  auto [dense_v, dense_i] = max_pool2d_with_indices(x, {2, 2});
  got = values(dense_v);
  EXPECT_EQ(got[0], 8);
  EXPECT_EQ(got[1], 7);
  EXPECT_TRUE(std::isnan(got[2]));
  EXPECT_EQ(values(dense_i), (Values{5, 6, 9, 15}));
  // and in bfloat16, which the fast path compares as float
  auto [half_v, half_i] = max_pool2d_with_indices(x.to(ScalarType::BFloat16), {2, 2});
  got = values(half_v);
  EXPECT_EQ(got[1], 7);
  EXPECT_TRUE(std::isnan(got[2]));
  EXPECT_EQ(values(half_i), (Values{5, 6, 9, 15}));
  // ties keep the first element in row-major window order, on the fast path too
  Tensor flat = full({1, 20, 20}, 3.0);
  auto [tie_v, tie_i] = max_pool2d_with_indices(flat, {2, 2});
  Values tie_index = values(tie_i);
  ASSERT_EQ(tie_index.size(), 100u);
  for (int64_t y = 0; y < 10; ++y) {
    for (int64_t c = 0; c < 10; ++c) {
      EXPECT_EQ(tie_index[y * 10 + c], y * 2 * 20 + c * 2) << y << "," << c;
    }
  }
}

// Note [Channels-last max pooling]: a channels-last input gives channels-last values,
// indices and input gradients, equal to the row-major results (same ties, NaN rule and
// indices), for windows with padding, dilation and ceil_mode and channel counts around the
// vector width and the backward pass's block of 64 channels.
TEST_F(Pool, ChannelsLastMaxPoolingKeepsTheLayout) {
  manual_seed(17);
  const auto cl = [](const Tensor& t) { return t.contiguous(MemoryFormat::ChannelsLast); };
  struct Case {
    int64_t c, h, w, k, s, p, d;
    bool ceil;
  };
  const Case cases[] = {{3, 6, 6, 2, 2, 0, 1, false},    {16, 7, 7, 3, 2, 1, 1, false},
                        {70, 9, 8, 3, 1, 1, 2, false},   {5, 6, 6, 3, 2, 1, 1, true},
                        {33, 12, 11, 3, 2, 1, 1, false}, {2, 3, 3, 3, 1, 1, 1, false}};
  for (ScalarType t : {ScalarType::Float32, ScalarType::Float64, ScalarType::BFloat16}) {
    for (const Case& c : cases) {
      Tensor x = random({2, c.c, c.h, c.w}, t);
      const std::vector<int64_t> k{c.k, c.k}, s{c.s, c.s}, p{c.p, c.p}, d{c.d, c.d};
      auto [v, i] = max_pool2d_with_indices(x, k, s, p, d, c.ceil);
      auto [cl_v, cl_i] = max_pool2d_with_indices(cl(x), k, s, p, d, c.ceil);
      EXPECT_TRUE(cl_v.is_contiguous(MemoryFormat::ChannelsLast)) << c.c << " k" << c.k;
      EXPECT_TRUE(cl_i.is_contiguous(MemoryFormat::ChannelsLast));
      EXPECT_EQ(values(cl_v), values(v));
      EXPECT_EQ(values(cl_i), values(i));
      Tensor g = random(shape(v), t);
      Tensor dx = max_pool2d_with_indices_backward(g, x, k, s, p, d, c.ceil, i);
      Tensor cl_dx = max_pool2d_with_indices_backward(cl(g), cl(x), k, s, p, d, c.ceil, cl_i);
      EXPECT_TRUE(cl_dx.is_contiguous(MemoryFormat::ChannelsLast));
      EXPECT_EQ(values(cl_dx), values(dx));
      // a row-major gradient for a channels-last self: the layout follows self's
      Tensor mixed = max_pool2d_with_indices_backward(g, cl(x), k, s, p, d, c.ceil, i);
      EXPECT_TRUE(mixed.is_contiguous(MemoryFormat::ChannelsLast));
      EXPECT_EQ(values(mixed), values(dx));
    }
  }
  // NaN wins and ties keep the first tap, as on row-major planes; a channel stride other
  // than 1 (every other channel of a channels-last tensor) reads through a copy
  Tensor x = random({1, 8, 6, 6});
  x.select(1, 2).fill_(3.0);
  x.select(1, 5).select(1, 5).fill_(NAN);  // the second row of its windows
  Tensor every_other = cl(x).slice(1, 0, 8, 2);
  for (const Tensor& input : {cl(x), every_other}) {
    auto [v, i] = max_pool2d_with_indices(input, {2, 2});
    auto [ref_v, ref_i] = max_pool2d_with_indices(input.contiguous(), {2, 2});
    EXPECT_TRUE(v.is_contiguous(MemoryFormat::ChannelsLast));
    EXPECT_EQ(values(i), values(ref_i));
    const Values got = values(v), want = values(ref_v);
    for (size_t e = 0; e < got.size(); ++e) {
      EXPECT_TRUE(got[e] == want[e] || (std::isnan(got[e]) && std::isnan(want[e]))) << e;
    }
  }
  expect_error(
      [&] {
        Tensor bad = cl(x);
        auto [v, i] = max_pool2d_with_indices(bad, {2, 2});
        i.fill_(99);
        max_pool2d_with_indices_backward(v, bad, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false, i);
      },
      "loom::max_pool2d_with_indices_backward", "expected indices in [0, 36)");
}

// Note [Channels-last average pooling]: avg_pool2d (every divisor rule, ceil_mode) and
// adaptive_avg_pool2d of a channels-last input are channels last, with the row-major
// results' bits.
TEST_F(Pool, ChannelsLastAveragePoolingKeepsTheLayout) {
  manual_seed(19);
  const auto cl = [](const Tensor& t) { return t.contiguous(MemoryFormat::ChannelsLast); };
  for (ScalarType t : {ScalarType::Float32, ScalarType::Float64, ScalarType::BFloat16}) {
    for (int64_t channels : {3, 19, 70}) {
      Tensor x = random({2, channels, 9, 11}, t);
      for (bool include_pad : {true, false}) {
        for (std::optional<int64_t> divisor :
             {std::optional<int64_t>{}, std::optional<int64_t>{4}}) {
          Tensor a = avg_pool2d(x, {3, 3}, {2, 2}, {1, 1}, true, include_pad, divisor);
          Tensor b = avg_pool2d(cl(x), {3, 3}, {2, 2}, {1, 1}, true, include_pad, divisor);
          EXPECT_TRUE(b.is_contiguous(MemoryFormat::ChannelsLast) && !b.is_contiguous());
          EXPECT_EQ(values(b), values(a)) << channels << (include_pad ? " with padding" : "");
        }
      }
      for (const std::vector<int64_t>& size : {std::vector<int64_t>{4, 5}, {9, 11}, {1, 1}}) {
        Tensor a = adaptive_avg_pool2d(x, size);
        Tensor b = adaptive_avg_pool2d(cl(x), size);
        EXPECT_TRUE(b.is_contiguous(MemoryFormat::ChannelsLast)) << size[0] << "x" << size[1];
        EXPECT_EQ(values(b), values(a)) << channels << ", " << size[0] << "x" << size[1];
      }
    }
  }
}

TEST_F(Pool, AvgPoolModes) {
  // 1..16 in a 4x4 plane
  Values seq;
  for (int i = 1; i <= 16; ++i) seq.push_back(i);
  Tensor x = make(seq, {1, 1, 4, 4});
  expect_close(values(avg_pool2d(x, {2, 2})), {3.5, 5.5, 11.5, 13.5});
  // padding 1, kernel 3, stride 2 -> 2x2; corner window covers 4 real of 9 cells
  expect_close(values(avg_pool2d(x, {3, 3}, {2, 2}, {1, 1})),
               {(1 + 2 + 5 + 6) / 9.0, (2 + 3 + 4 + 6 + 7 + 8) / 9.0,
                (5 + 6 + 9 + 10 + 13 + 14) / 9.0, (6 + 7 + 8 + 10 + 11 + 12 + 14 + 15 + 16) / 9.0});
  expect_close(values(avg_pool2d(x, {3, 3}, {2, 2}, {1, 1}, false, false)),
               {(1 + 2 + 5 + 6) / 4.0, (2 + 3 + 4 + 6 + 7 + 8) / 6.0,
                (5 + 6 + 9 + 10 + 13 + 14) / 6.0, (6 + 7 + 8 + 10 + 11 + 12 + 14 + 15 + 16) / 9.0});
  expect_close(values(avg_pool2d(x, {2, 2}, {}, {0, 0}, false, true, 2)), {7, 11, 23, 27});
  // ceil_mode: 5x5 with kernel 2 stride 2 -> 3x3; the last window is clipped to the input
  // (count_include_pad counts only up to the padded edge: 1 column here)
  Values seq25;
  for (int i = 0; i < 25; ++i) seq25.push_back(i);
  Tensor y = make(seq25, {1, 5, 5});
  Tensor pooled = avg_pool2d(y, {2, 2}, {2, 2}, {0, 0}, true);
  ASSERT_EQ(shape(pooled), (Shape{1, 3, 3}));
  Values pv = values(pooled);
  EXPECT_DOUBLE_EQ(pv[2], (4 + 9) / 2.0);
  EXPECT_DOUBLE_EQ(pv[8], 24);
  Tensor h = make(seq, {1, 4, 4}, ScalarType::BFloat16);
  expect_close(values(avg_pool2d(h, {2, 2})), {3.5, 5.5, 11.5, 13.5}, 1e-2);
}

// Each input element gets the gradient of every window holding it, over that window's
// divisor.
TEST_F(Pool, AvgPoolBackwardSpreadsOverTheWindows) {
  Tensor self = make(Values(9, 0.0), {1, 1, 3, 3});
  Tensor ones = make({1, 1, 1, 1}, {1, 1, 2, 2});
  expect_close(
      values(avg_pool2d_backward(ones, self, {2, 2}, {1, 1}, {0, 0}, false, true, std::nullopt)),
      {0.25, 0.5, 0.25, 0.5, 1, 0.5, 0.25, 0.5, 0.25});
  // padding 1 without counting it: the 4-cell corner windows divide by 4 (kernel 3,
  // stride 2 over 3x3 gives 2x2 windows, each holding 4 real cells)
  expect_close(
      values(avg_pool2d_backward(ones, self, {3, 3}, {2, 2}, {1, 1}, false, false, std::nullopt)),
      {0.25, 0.5, 0.25, 0.5, 1, 0.5, 0.25, 0.5, 0.25});
  // divisor_override divides every window by it
  expect_close(values(avg_pool2d_backward(ones, self, {2, 2}, {1, 1}, {0, 0}, false, true, 2)),
               {0.5, 1, 0.5, 1, 2, 1, 0.5, 1, 0.5});
  expect_error(
      [&] {
        avg_pool2d_backward(make({1}, {1, 1, 1, 1}), self, {2, 2}, {1, 1}, {0, 0}, false, true,
                            std::nullopt);
      },
      "loom::avg_pool2d_backward",
      "expected grad_output of avg_pool2d's output shape [1, 1, 2, 2]");
}

TEST_F(Pool, AdaptiveAvgPool) {
  Values seq;
  for (int i = 0; i < 30; ++i) seq.push_back(i);
  Tensor x = make(seq, {1, 5, 6});
  // rows [0,3) [2,5), cols [0,2) [2,4) [4,6)
  Tensor y = adaptive_avg_pool2d(x, {2, 3});
  ASSERT_EQ(shape(y), (Shape{1, 2, 3}));
  auto cell = [&](int r0, int r1, int c0, int c1) {
    double s = 0;
    for (int r = r0; r < r1; ++r)
      for (int c = c0; c < c1; ++c) s += seq[r * 6 + c];
    return s / ((r1 - r0) * (c1 - c0));
  };
  expect_close(values(y), {cell(0, 3, 0, 2), cell(0, 3, 2, 4), cell(0, 3, 4, 6), cell(2, 5, 0, 2),
                           cell(2, 5, 2, 4), cell(2, 5, 4, 6)});
  expect_close(values(adaptive_avg_pool2d(x.unsqueeze(0), {1})), {14.5});
  EXPECT_EQ(shape(adaptive_avg_pool2d(x, {7, 8})), (Shape{1, 7, 8}));
}

TEST_F(Pool, AdaptiveMaxPool) {
  // F.adaptive_max_pool2d(torch.tensor([[[1., 5, 2], [4, 3, 6]]]), (1, 2),
  // return_indices=True) -> ([[[5, 6]]], [[[1, 5]]]) (cells cover columns [0, 2) and [1, 3))
  auto [maxima, where] = adaptive_max_pool2d(make({1, 5, 2, 4, 3, 6}, {1, 2, 3}), {1, 2});
  EXPECT_EQ(shape(maxima), (Shape{1, 1, 2}));
  EXPECT_EQ(values(maxima), (Values{5, 6}));
  EXPECT_EQ(values(where), (Values{1, 5}));
  EXPECT_EQ(where.dtype(), ScalarType::Int64);
  // Equal maxima keep the first; a NaN wins, and a later NaN moves the index:
  // F.adaptive_max_pool2d(torch.tensor([[[[2., 2], [1, 2]], [[1, nan], [3, nan]]]]), 1,
  // return_indices=True) -> values [2, nan], indices [0, 3]
  const double nan = std::nan("");
  auto [m, at] = adaptive_max_pool2d(make({2, 2, 1, 2, 1, nan, 3, nan}, {1, 2, 2, 2}), {1});
  Values mv = values(m);
  EXPECT_EQ(mv[0], 2);
  EXPECT_TRUE(std::isnan(mv[1]));
  EXPECT_EQ(values(at), (Values{0, 3}));
  // Output larger than the input: cells repeat input positions.
  EXPECT_EQ(values(std::get<1>(adaptive_max_pool2d(make({1, 2}, {1, 1, 2}), {1, 3}))),
            (Values{0, 1, 1}));
  expect_error(
      [&] {
        adaptive_max_pool2d(empty({1, 0, 4}), {2, 2});
      },
      "loom::adaptive_max_pool2d", "expected non-zero sizes");
}

// Note [Grid sampling], values from torch.nn.functional.grid_sample on the 2x2 image
// [[1, 2], [3, 4]] (interpolation 0 bilinear, 1 nearest, 2 bicubic; padding 0 zeros,
// 1 border, 2 reflection).
TEST_F(Pool, GridSamplerAgreesWithPyTorch) {
  Tensor image = make({1, 2, 3, 4}, {1, 1, 2, 2});
  auto sample = [&](double gx, double gy, int64_t interpolation, int64_t padding,
                    bool align_corners) {
    Tensor grid = make({gx, gy}, {1, 1, 1, 2});
    return values(grid_sampler_2d(image, grid, interpolation, padding, align_corners))[0];
  };
  // The centre, align_corners=False: pixel coordinates (0.5, 0.5), the mean 2.5.
  EXPECT_DOUBLE_EQ(sample(0, 0, 0, 0, false), 2.5);
  // (-1, -1) is the outer corner: (-0.5, -0.5) in pixels. zeros: 1 * 0.25; border and
  // reflection: pixel (0, 0).
  EXPECT_DOUBLE_EQ(sample(-1, -1, 0, 0, false), 0.25);
  EXPECT_DOUBLE_EQ(sample(-1, -1, 0, 1, false), 1);
  EXPECT_DOUBLE_EQ(sample(-1, -1, 0, 2, false), 1);
  // align_corners=True: (-1, -1) is pixel (0, 0) and (1, 1) pixel (1, 1).
  EXPECT_DOUBLE_EQ(sample(-1, -1, 0, 0, true), 1);
  EXPECT_DOUBLE_EQ(sample(1, 1, 0, 0, true), 4);
  // Nearest at (0.1, -0.1): pixel coordinates (0.6, 0.4) round to x 1, y 0.
  EXPECT_DOUBLE_EQ(sample(0.1, -0.1, 1, 0, false), 2);
  // Bicubic at the centre: weights [-0.09375, 0.59375, 0.59375, -0.09375] per axis; with
  // zeros only the four pixels count (0.59375^2 * 10), with border the clipped taps give 2.5.
  EXPECT_NEAR(sample(0, 0, 2, 0, false), 3.525390625, 1e-6);
  EXPECT_NEAR(sample(0, 0, 2, 1, false), 2.5, 1e-6);
  // A batch of points: output [N, C, H_out, W_out].
  Tensor grid = make({-1, -1, 1, -1, -1, 1, 1, 1}, {1, 2, 2, 2});
  Tensor out = grid_sampler_2d(image.expand({1, 3, 2, 2}), grid, 0, 0, true);
  EXPECT_EQ(shape(out), (Shape{1, 3, 2, 2}));
  EXPECT_EQ(values(out), (Values{1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4}));
  expect_error(
      [&] {
        grid_sampler_2d(image, make({0, 0}, {1, 1, 2}), 0, 0, false);
      },
      "loom::grid_sampler_2d", "expected a 4-D input [N, C, H, W] and a 4-D grid");
  expect_error(
      [&] {
        grid_sampler_2d(image, make({0, 0, 0, 0}, {2, 1, 1, 2}), 0, 0, false);
      },
      "loom::grid_sampler_2d", "expected grid and input to have same batch size");
  expect_error(
      [&] {
        grid_sampler_2d(image, make({0, 0}, {1, 1, 1, 2}), 3, 0, false);
      },
      "loom::grid_sampler_2d",
      "expected interpolation_mode 0 (bilinear), 1 (nearest) or 2 (bicubic), found 3");
  expect_error(
      [&] {
        grid_sampler_2d(image, make({0, 0}, {1, 1, 1, 2}), 0, 5, false);
      },
      "loom::grid_sampler_2d",
      "expected padding_mode 0 (zeros), 1 (border) or 2 (reflection), found 5");
}

// grid_sampler_2d_backward on [[1, 2], [3, 4]] at hand-derived points: bilinear weights
// go back to the four pixels, and the grid gradient is the slope of the interpolation
// times d pixel / d grid ((size - 1) / 2 with align_corners, size / 2 without).
TEST_F(Pool, GridSamplerBackwardByHand) {
  Tensor image = make({1, 2, 3, 4}, {1, 1, 2, 2});
  Tensor one = make({1}, {1, 1, 1, 1});
  auto backward = [&](double gx, double gy, int64_t interpolation, int64_t padding,
                      bool align_corners) {
    return grid_sampler_2d_backward(one, image, make({gx, gy}, {1, 1, 1, 2}), interpolation,
                                    padding, align_corners);
  };
  // the centre with align_corners: a quarter to each pixel; slopes 1 along x, 2 along y
  auto [centre_input, centre_grid] = backward(0, 0, 0, 0, true);
  EXPECT_EQ(values(centre_input), (Values{0.25, 0.25, 0.25, 0.25}));
  EXPECT_EQ(values(centre_grid), (Values{0.5, 1}));
  // without align_corners d pixel / d grid is 1: slopes 1 and 2
  auto [plain_input, plain_grid] = backward(0, 0, 0, 0, false);
  EXPECT_EQ(values(plain_grid), (Values{1, 2}));
  // border padding outside the image: clipped, so the grid gets no gradient
  auto [border_input, border_grid] = backward(-3, 0.5, 0, 1, true);
  EXPECT_EQ(values(border_grid)[0], 0);
  // nearest: one pixel takes it all and the grid gets nothing
  auto [nearest_input, nearest_grid] = backward(0.1, -0.1, 1, 0, false);
  EXPECT_EQ(values(nearest_input), (Values{0, 1, 0, 0}));
  EXPECT_EQ(values(nearest_grid), (Values{0, 0}));
  // the gradients' shapes are the input's and the grid's; grad_output must match the output
  auto [batch_input, batch_grid] = grid_sampler_2d_backward(ones({2, 3, 4, 5}), ones({2, 3, 6, 7}),
                                                            zeros({2, 4, 5, 2}), 2, 2, false);
  EXPECT_EQ(shape(batch_input), (Shape{2, 3, 6, 7}));
  EXPECT_EQ(shape(batch_grid), (Shape{2, 4, 5, 2}));
  expect_error(
      [&] {
        grid_sampler_2d_backward(ones({1, 1, 2, 1}), image, make({0, 0}, {1, 1, 1, 2}), 0, 0,
                                 false);
      },
      "loom::grid_sampler_2d_backward",
      "expected grad_output of shape [1, 1, 1, 1] and dtype float32, found [1, 1, 2, 1]");
}

TEST_F(Pool, PoolErrors) {
  Tensor x = empty({1, 2, 4, 4});
  expect_error(
      [&] {
        max_pool2d(x, {2, 2}, {}, {2, 2});
      },
      // a decomposition's error names it, then the op it called
      "loom::max_pool2d", "expected padding of at most half the kernel size [2, 2], found [2, 2]");
  expect_error(
      [&] {
        max_pool2d_with_indices(empty({4, 4}), {2, 2});
      },
      "loom::max_pool2d_with_indices",
      "expected a 3-D (unbatched) or 4-D (batched) input, found [4, 4]");
  expect_error(
      [&] {
        max_pool2d_with_indices(x, {5, 5});
      },
      "loom::max_pool2d_with_indices", "expected an output size of at least 1");
  expect_error(
      [&] {
        avg_pool2d(x, {2, 2}, {}, {0, 0}, false, true, 0);
      },
      "loom::avg_pool2d", "expected a non-zero divisor_override");
  expect_error([&] { avg_pool2d(x, {0, 2}); }, "loom::avg_pool2d", "expected positive kernel_size");
  expect_error(
      [&] {
        adaptive_avg_pool2d(empty({1, 0, 4}), {2, 2});
      },
      "loom::adaptive_avg_pool2d", "expected non-zero sizes");
  expect_error(
      [&] {
        max_pool2d(make({1}, {1, 1, 1}, ScalarType::Int64), {1, 1});
      },
      "loom::max_pool2d", "expected self of a floating point dtype");
}

TEST_F(Pool, OneDimensionalPools) {
  Tensor x = make({1, 3, 2, 5, 4}, {1, 1, 5});
  // torch.nn.functional.max_pool1d(x, 2) -> [[[3., 5.]]]; avg_pool1d(x, 2) -> [[[2., 3.5]]]
  EXPECT_EQ(values(max_pool1d(x, {2})), (Values{3, 5}));
  EXPECT_EQ(values(avg_pool1d(x, {2})), (Values{2, 3.5}));
  EXPECT_EQ(shape(max_pool1d(x.squeeze(0), {2}, {1})), (Shape{1, 4}));  // [C, L] input
  expect_error([&] { max_pool1d(loom::zeros({5}), {2}); }, "loom::max_pool1d",
               "expected a 2-D [C, L] or 3-D [N, C, L] input");
}

TEST_F(Pool, UpsampleNearestAndBilinear) {
  Tensor x = make({1, 2, 3, 4}, {1, 1, 2, 2});
  // torch.nn.functional.interpolate(x, size=(3, 3), mode="nearest")
  EXPECT_EQ(values(upsample_nearest2d(x, {3, 3})), (Values{1, 1, 2, 1, 1, 2, 3, 3, 4}));
  // interpolate(x, size=(3, 3), mode="bilinear", align_corners=True)
  expect_close(values(upsample_bilinear2d(x, {3, 3}, true)), {1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4});
  // interpolate(x, size=(4, 4), mode="bilinear", align_corners=False)
  expect_close(values(upsample_bilinear2d(x, {4, 4}, false)),
               {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4});
  // The CPU kernel (Note [Bilinear upsampling kernel]) with scales, downsampling and a
  // transposed input: y = torch.arange(12., dtype=torch.float64).view(1, 1, 3, 4) ** 1.5
  Values powers;
  for (int i = 0; i < 12; ++i) powers.push_back(std::pow(i, 1.5));
  Tensor y = make(powers, {1, 1, 3, 4}, ScalarType::Float64);
  // torch.ops.aten.upsample_bilinear2d(y, [2, 7], False, 0.8, 1.9)
  expect_close(values(upsample_bilinear2d(y, {2, 7}, false, 0.8, 1.9)),
               {1.0, 1.3683675617, 2.0381267648, 2.9702485706, 4.0436425471, 5.3184415909,
                6.6603756571, 13.4852813742, 14.5353272061, 16.4445014458, 18.4576703062,
                20.5268362701, 22.7068033473, 24.9237041289},
               1e-9);
  // torch.ops.aten.upsample_bilinear2d(y.transpose(2, 3), [5, 2], True)
  expect_close(values(upsample_bilinear2d(y.transpose(2, 3), {5, 2}, true)),
               {0.0, 22.627416998, 0.75, 25.9068542495, 1.9142135624, 29.3113883008, 3.4203584492,
                32.8378006247, 5.1961524227, 36.4828726939},
               1e-9);
  // The meta device keeps the decomposition; float16 accumulates in float.
  EXPECT_EQ(shape(upsample_bilinear2d(
                empty({2, 3, 5, 5}, TensorOptions().device(Device{kMeta, -1})), {7, 9}, false)),
            (Shape{2, 3, 7, 9}));
  expect_close(values(upsample_bilinear2d(x.to(ScalarType::Float16), {3, 3}, true)),
               {1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4});
  expect_error(
      [&] {
        upsample_nearest2d(x, {0, 2});
      },
      "loom::upsample_nearest2d", "expected a positive output size");
  expect_error(
      [&] {
        upsample_bilinear2d(make({1}, {1, 1, 1, 1}, ScalarType::Int64), {2, 2}, false);
      },
      "loom::upsample_bilinear2d", "expected a floating point input");
}

}  // namespace
}  // namespace loom::testing
