// The implicit matrices of loom's GPU convolution on the host (kernels/conv_math.h, Note
// [Implicit-GEMM convolution]): a plain GEMM over each pass's addressed operands equals
// the convolution, its input gradient and its weight gradient computed by direct loops,
// for strides, padding, dilation and groups; every output element is written once; and
// inconsistent geometries are named.
#include "../../plugins/gpu/kernels/conv_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace loom::gpu {
namespace {

ConvGeometry make_geometry(int64_t n, int64_t c, int64_t h, int64_t w, int64_t o, int64_t kh,
                           int64_t kw, int64_t stride_h, int64_t stride_w, int64_t pad_h,
                           int64_t pad_w, int64_t dil_h, int64_t dil_w, int64_t groups) {
  ConvGeometry g;
  g.batch = n;
  g.channels = c;
  g.height = h;
  g.width = w;
  g.out_channels = o;
  g.kernel_h = kh;
  g.kernel_w = kw;
  g.stride_h = stride_h;
  g.stride_w = stride_w;
  g.pad_h = pad_h;
  g.pad_w = pad_w;
  g.dilation_h = dil_h;
  g.dilation_w = dil_w;
  g.groups = groups;
  g.out_h = (h + 2 * pad_h - dil_h * (kh - 1) - 1) / stride_h + 1;
  g.out_w = (w + 2 * pad_w - dil_w * (kw - 1) - 1) / stride_w + 1;
  return g;
}

std::vector<double> random_values(int64_t count, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<double> v(count);
  for (double& x : v) x = dist(gen);
  return v;
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << "element " << i;
}

void expect_each_written_once(const std::vector<int>& writes) {
  for (size_t i = 0; i < writes.size(); ++i) EXPECT_EQ(writes[i], 1) << "element " << i;
}

// c = a @ b over the matrices' addressed operands, read through their cursors as the tiled
// kernel reads them (Note [GEMM operand cursors]; a -1 offset reads zero); counts the writes
// to each element of c.
template <typename Matrices>
void implicit_gemm(const Matrices& mat, const std::vector<double>& a, const std::vector<double>& b,
                   std::vector<double>& c, std::vector<int>& writes) {
  const GemmDims d = mat.dims();
  for (int64_t z = 0; z < d.batch; ++z) {
    for (int64_t r = 0; r < d.m; ++r) {
      const auto row = mat.a_row(z, r);
      for (int64_t col = 0; col < d.n; ++col) {
        const auto column = mat.b_col(z, col);
        double acc = 0;
        for (int64_t k = 0; k < d.k; ++k) {
          const int64_t ia = mat.a(row, k), ib = mat.b(column, k);
          if (ia >= 0 && ib >= 0) acc += a.at(ia) * b.at(ib);
        }
        const int64_t at = mat.c(z, r, col);
        c.at(at) = acc;
        ++writes.at(at);
      }
    }
  }
}

// The pass on both forms of its matrices (Note [32-bit convolution addressing]): the 64-bit
// ones through ElementCursors and the 32-bit ones; each must equal `want`.
template <typename Narrow, typename Wide>
void expect_pass(const Wide& wide, const std::vector<double>& a, const std::vector<double>& b,
                 const std::vector<double>& want) {
  for (const bool narrow : {false, true}) {
    SCOPED_TRACE(narrow ? "32-bit cursors" : "64-bit matrices");
    std::vector<double> c(want.size(), std::nan(""));
    std::vector<int> writes(c.size());
    if (narrow) {
      implicit_gemm(Narrow(wide), a, b, c, writes);
    } else {
      implicit_gemm(ElementCursors<Wide>{wide}, a, b, c, writes);
    }
    expect_near(c, want);
    expect_each_written_once(writes);
  }
}

// The three passes by direct loops over every (n, o, oh, ow, c, kh, kw) term.
struct DirectConv {
  std::vector<double> y, dx, dw;
};

DirectConv direct(const ConvGeometry& g, const std::vector<double>& x, const std::vector<double>& w,
                  const std::vector<double>& dy) {
  DirectConv r{std::vector<double>(g.batch * g.out_channels * g.out_plane()),
               std::vector<double>(x.size()), std::vector<double>(w.size())};
  const int64_t og = g.group_out_channels(), cg = g.group_channels();
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t o = 0; o < g.out_channels; ++o) {
      const int64_t grp = o / og;
      for (int64_t oh = 0; oh < g.out_h; ++oh) {
        for (int64_t ow = 0; ow < g.out_w; ++ow) {
          const int64_t yi = ((n * g.out_channels + o) * g.out_h + oh) * g.out_w + ow;
          for (int64_t c = 0; c < cg; ++c) {
            for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
              for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
                const int64_t ih = oh * g.stride_h - g.pad_h + kh * g.dilation_h;
                const int64_t iw = ow * g.stride_w - g.pad_w + kw * g.dilation_w;
                if (ih < 0 || ih >= g.height || iw < 0 || iw >= g.width) continue;
                const int64_t xi = ((n * g.channels + grp * cg + c) * g.height + ih) * g.width + iw;
                const int64_t wi = ((o * cg + c) * g.kernel_h + kh) * g.kernel_w + kw;
                r.y[yi] += w[wi] * x[xi];
                r.dx[xi] += w[wi] * dy[yi];
                r.dw[wi] += dy[yi] * x[xi];
              }
            }
          }
        }
      }
    }
  }
  return r;
}

TEST(GpuConvMath, EachPassIsAGemmOverItsImplicitMatrices) {
  const std::vector<ConvGeometry> cases = {
      make_geometry(2, 3, 7, 6, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1),     // same padding
      make_geometry(2, 4, 11, 9, 6, 3, 2, 2, 1, 0, 2, 1, 2, 2),    // stride, dilation, groups 2
      make_geometry(1, 6, 8, 8, 6, 3, 3, 3, 2, 2, 1, 2, 1, 3),     // stride 3 skips inputs
      make_geometry(3, 2, 5, 4, 4, 1, 1, 1, 1, 0, 0, 1, 1, 2),     // 1x1, depthwise-like
      make_geometry(1, 1, 4, 5, 2, 4, 5, 1, 1, 0, 0, 1, 1, 1),     // kernel covers the input
      make_geometry(2, 6, 23, 19, 10, 5, 3, 2, 3, 2, 1, 1, 2, 2),  // odd sizes: every divider
  };
  unsigned seed = 1;
  for (const ConvGeometry& g : cases) {
    SCOPED_TRACE(testing::Message() << "case with " << g.channels << " channels, stride "
                                    << g.stride_h << "x" << g.stride_w << ", groups " << g.groups);
    ASSERT_EQ(conv_geometry_error(g), nullptr);
    const std::vector<double> x = random_values(g.batch * g.channels * g.in_plane(), seed++);
    const std::vector<double> w = random_values(g.out_channels * g.patch(), seed++);
    const std::vector<double> dy = random_values(g.batch * g.out_channels * g.out_plane(), seed++);
    const DirectConv want = direct(g, x, w, dy);

    expect_pass<ConvForwardMatrices32>(ConvForwardMatrices{g}, w, x, want.y);
    expect_pass<ConvInputGradMatrices32>(ConvInputGradMatrices{g}, w, dy, want.dx);
    expect_pass<ConvWeightGradMatrices32>(ConvWeightGradMatrices{g}, dy, x, want.dw);
  }
}

// Note [Split weight gradient]: the sum cut into chunks, each into its own slice, the
// slices added in order, equals the direct weight gradient (a last chunk that runs past
// the end reads zeros); the plan splits a small layer's long sum and not a large layer's.
TEST(GpuConvMath, ASplitWeightGradientAddsUpToTheWhole) {
  const std::vector<ConvGeometry> cases = {
      make_geometry(2, 4, 11, 9, 6, 3, 2, 2, 1, 0, 2, 1, 2, 2),
      make_geometry(3, 2, 7, 6, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1),
  };
  unsigned seed = 100;
  for (const ConvGeometry& g : cases) {
    const std::vector<double> x = random_values(g.batch * g.channels * g.in_plane(), seed++);
    const std::vector<double> w = random_values(g.out_channels * g.patch(), seed++);
    const std::vector<double> dy = random_values(g.batch * g.out_channels * g.out_plane(), seed++);
    const DirectConv want = direct(g, x, w, dy);
    ConvWeightGradMatrices m{g};
    m.chunk = 13;  // does not divide N * P: the last chunk is short
    m.splits = (m.terms() + m.chunk - 1) / m.chunk;
    ASSERT_NE(m.terms() % m.chunk, 0);
    const int64_t slice = g.out_channels * g.patch();
    for (const bool narrow : {false, true}) {
      SCOPED_TRACE(narrow ? "32-bit cursors" : "64-bit matrices");
      std::vector<double> slices(m.splits * slice, std::nan(""));
      std::vector<int> writes(slices.size());
      if (narrow) {
        implicit_gemm(ConvWeightGradMatrices32(m), dy, x, slices, writes);
      } else {
        implicit_gemm(ElementCursors<ConvWeightGradMatrices>{m}, dy, x, slices, writes);
      }
      expect_each_written_once(writes);
      std::vector<double> dw(slice, 0.0);
      for (int64_t s = 0; s < m.splits; ++s) {
        for (int64_t i = 0; i < slice; ++i) dw[i] += slices[s * slice + i];
      }
      expect_near(dw, want.dw);
    }
  }
  // loom train's first layer: 32 x 9 outputs (one tile), 64 * 784 terms.
  const ConvWeightGradMatrices first =
      plan_weight_grad(make_geometry(64, 1, 28, 28, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1));
  EXPECT_EQ(first.splits, 25);   // ceil(50176 / kWeightGradMinChunk): fewer than 512 blocks
  EXPECT_EQ(first.chunk, 2008);  // the terms shared evenly
  EXPECT_GE(first.splits * first.chunk, first.terms());
  EXPECT_LT((first.splits - 1) * first.chunk, first.terms());
  EXPECT_EQ(first.dims().batch, 25);
  // Few terms: one split writing grad_weight itself.
  const ConvWeightGradMatrices small =
      plan_weight_grad(make_geometry(1, 4, 8, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1));
  EXPECT_EQ(small.splits, 1);
  EXPECT_EQ(small.dims().k, small.terms());
}

TEST(GpuConvMath, TheForwardRowsNameTheirBiasChannel) {
  const ConvGeometry g = make_geometry(2, 4, 5, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1, 2);
  const ConvForwardMatrices m{g};
  EXPECT_EQ(m.channel(0, 0), 0);
  EXPECT_EQ(m.channel(1, 0), 3);  // z = (n 0, group 1): group 1 owns channels 3..5
  EXPECT_EQ(m.channel(3, 2), 5);  // z = (n 1, group 1)
}

// Note [32-bit convolution addressing]: tensors below 2^30 elements take the 32-bit
// matrices, larger ones the 64-bit ones; the 32-bit forward names the same bias channels.
TEST(GpuConvMath, OnlyTensorsBelow2To30ElementsTakeThe32BitMatrices) {
  EXPECT_TRUE(conv_fits_int32(make_geometry(8, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1)));
  // an input of 2^30 elements: 256 images of 64 x 256 x 256
  EXPECT_FALSE(conv_fits_int32(make_geometry(256, 64, 256, 256, 8, 1, 1, 1, 1, 0, 0, 1, 1, 1)));
  // a small input whose output has 2^30 elements: 16 images, 4,096 channels of 128 x 128
  EXPECT_FALSE(conv_fits_int32(make_geometry(16, 1, 128, 128, 4096, 1, 1, 1, 1, 0, 0, 1, 1, 1)));
  // an empty input plane padded to a non-empty output (no division by its width), and
  // a stride beyond 32 bits
  EXPECT_FALSE(conv_fits_int32(make_geometry(1, 2, 3, 0, 2, 1, 1, 1, 1, 0, 1, 1, 1, 1)));
  EXPECT_FALSE(
      conv_fits_int32(make_geometry(1, 2, 3, 3, 2, 1, 1, int64_t{1} << 32, 1, 0, 0, 1, 1, 1)));
  const ConvGeometry g = make_geometry(2, 4, 5, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1, 2);
  const ConvForwardMatrices wide{g};
  const ConvForwardMatrices32 narrow(wide);
  for (int64_t z = 0; z < 4; ++z) {
    for (int64_t o = 0; o < 3; ++o) EXPECT_EQ(narrow.channel(z, o), wide.channel(z, o));
  }
}

TEST(GpuConvMath, InconsistentGeometriesAreNamed) {
  ConvGeometry g = make_geometry(1, 4, 8, 8, 6, 3, 3, 1, 1, 0, 0, 1, 1, 2);
  EXPECT_EQ(conv_geometry_error(g), nullptr);
  ConvGeometry bad = g;
  bad.groups = 3;  // 4 channels
  EXPECT_STREQ(conv_geometry_error(bad),
               "expected channels and output channels divisible by groups");
  bad = g;
  bad.out_h += 1;
  EXPECT_STREQ(conv_geometry_error(bad),
               "the output size does not follow from the input, kernel, stride, padding and "
               "dilation");
  bad = g;
  bad.kernel_w = 0;
  EXPECT_STREQ(conv_geometry_error(bad), "expected positive channels, kernel sizes and groups");
  bad = g;
  bad.stride_h = 0;
  EXPECT_STREQ(conv_geometry_error(bad),
               "expected positive stride and dilation and non-negative padding");
  bad = g;
  bad.kernel_h = 10;  // larger than the input
  EXPECT_NE(conv_geometry_error(bad), nullptr);
}

}  // namespace
}  // namespace loom::gpu
