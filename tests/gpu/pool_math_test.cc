// The pooling kernels' window arithmetic on the host (kernels/pool_math.h): the taps of
// fixed windows with padding and dilation, average windows with and without padding,
// adaptive cells, and output positions, checked against direct enumeration.
#include "../../plugins/gpu/kernels/pool_math.h"

#include <gtest/gtest.h>

#include <vector>

namespace loom::gpu {
namespace {

// The input positions window i reads, the slow way.
std::vector<int64_t> reference_taps(int64_t i, int64_t kernel, int64_t stride, int64_t padding,
                                    int64_t dilation, int64_t size) {
  std::vector<int64_t> taps;
  for (int64_t t = 0; t < kernel; ++t) {
    const int64_t at = i * stride - padding + t * dilation;
    if (at >= 0 && at < size) taps.push_back(at);
  }
  return taps;
}

TEST(GpuPoolMath, WindowTapsAreTheInRangeTapsOfEveryWindow) {
  for (int64_t size : {1, 5, 12}) {
    for (int64_t kernel : {1, 2, 3}) {
      for (int64_t stride : {1, 2, 3}) {
        for (int64_t padding = 0; padding <= kernel / 2; ++padding) {
          for (int64_t dilation : {1, 2}) {
            // outputs with ceil_mode's extra window included
            const int64_t span = (kernel - 1) * dilation + 1;
            const int64_t outputs = (size + 2 * padding - span + stride - 1) / stride + 1;
            for (int64_t i = 0; i < outputs; ++i) {
              const WindowTaps w = window_taps(i, kernel, stride, padding, dilation, size);
              std::vector<int64_t> taps;
              for (int64_t t = w.first; t < w.last; ++t) taps.push_back(w.start + t * dilation);
              EXPECT_EQ(taps, reference_taps(i, kernel, stride, padding, dilation, size))
                  << "size " << size << " kernel " << kernel << " stride " << stride << " padding "
                  << padding << " dilation " << dilation << " output " << i;
            }
          }
        }
      }
    }
  }
}

TEST(GpuPoolMath, AverageWindowsClipToTheInputAndCountThePaddedExtent) {
  // size 5, kernel 3, stride 2, padding 1: windows [-1, 2), [1, 4), [3, 6)
  AverageWindow w = average_window(0, 3, 2, 1, 5);
  EXPECT_EQ(w.begin, 0);
  EXPECT_EQ(w.end, 2);
  EXPECT_EQ(w.padded_extent, 3);
  w = average_window(2, 3, 2, 1, 5);
  EXPECT_EQ(w.begin, 3);
  EXPECT_EQ(w.end, 5);
  EXPECT_EQ(w.padded_extent, 3);  // [3, 6) stays inside the padded input [-1, 6)
  // ceil_mode's last window reaches past the padding: its extent stops at size + padding
  w = average_window(3, 3, 2, 1, 5);
  EXPECT_EQ(w.begin, 5);
  EXPECT_EQ(w.end, 5);
  EXPECT_EQ(w.padded_extent, 1);
}

TEST(GpuPoolMath, AdaptiveCellsCoverTheInputAndOverlapOnlyAtBoundaries) {
  for (int64_t in : {1, 5, 7, 10}) {
    for (int64_t out : {1, 3, 4, 10}) {
      EXPECT_EQ(adaptive_begin(0, in, out), 0);
      EXPECT_EQ(adaptive_end(out - 1, in, out), in);
      for (int64_t i = 0; i < out; ++i) {
        EXPECT_LT(adaptive_begin(i, in, out), adaptive_end(i, in, out)) << in << " " << out;
        if (i > 0) {
          EXPECT_LE(adaptive_begin(i, in, out), adaptive_end(i - 1, in, out));
        }
      }
    }
  }
}

TEST(GpuPoolMath, PositionsEnumerateBatchChannelRowColumn) {
  PoolShape s;
  s.batch = 2;
  s.channels = 3;
  s.out_h = 4;
  s.out_w = 5;
  EXPECT_EQ(s.outputs(), 120);
  int64_t i = 0;
  for (int64_t n = 0; n < 2; ++n) {
    for (int64_t c = 0; c < 3; ++c) {
      for (int64_t y = 0; y < 4; ++y) {
        for (int64_t x = 0; x < 5; ++x, ++i) {
          const PoolPosition p = pool_position(s, i);
          EXPECT_EQ(p.n, n);
          EXPECT_EQ(p.c, c);
          EXPECT_EQ(p.y, y);
          EXPECT_EQ(p.x, x);
        }
      }
    }
  }
}

}  // namespace
}  // namespace loom::gpu
