// The window arithmetic of the 2-D pooling kernels (kernels/pool.cu): which input rows or
// columns an output position reads, for fixed windows (kernel, stride, padding, dilation)
// and for adaptive ones. Plain arithmetic compiled into device code and unit-tested on the
// host (tests/gpu/pool_math_test.cc), as the rest of index_math.h.
#pragma once

#include <cstdint>

#include "index_math.h"

namespace loom::gpu {

// Output position `i` of a fixed window along one dim reads input start + t * dilation
// for taps t in [first, last), every one of them inside [0, size).
struct WindowTaps {
  int64_t start = 0, first = 0, last = 0;
};

LOOM_GPU_HD WindowTaps window_taps(int64_t i, int64_t kernel, int64_t stride, int64_t padding,
                                   int64_t dilation, int64_t size) {
  WindowTaps w;
  w.start = i * stride - padding;
  w.first = w.start >= 0 ? 0 : (-w.start + dilation - 1) / dilation;
  int64_t last = w.start >= size ? 0 : (size - 1 - w.start) / dilation + 1;
  last = last < kernel ? last : kernel;
  w.last = last > w.first ? last : w.first;
  return w;
}

// Average pooling's window along one dim: the input range [begin, end) it sums, and its
// extent clipped to the padded input (the count_include_pad divisor's factor).
struct AverageWindow {
  int64_t begin = 0, end = 0, padded_extent = 0;
};

LOOM_GPU_HD AverageWindow average_window(int64_t i, int64_t kernel, int64_t stride, int64_t padding,
                                         int64_t size) {
  const int64_t start = i * stride - padding;
  const int64_t padded_end = start + kernel < size + padding ? start + kernel : size + padding;
  AverageWindow w;
  w.padded_extent = padded_end - start;
  w.begin = start > 0 ? start : 0;
  w.end = padded_end < size ? padded_end : size;
  if (w.end < w.begin) w.end = w.begin;
  return w;
}

// Adaptive pooling's output cell i of `out` along a dim of `in` covers input
// [floor(i * in / out), ceil((i + 1) * in / out)).
LOOM_GPU_HD int64_t adaptive_begin(int64_t i, int64_t in, int64_t out) {
  return (i * in) / out;
}
LOOM_GPU_HD int64_t adaptive_end(int64_t i, int64_t in, int64_t out) {
  return ((i + 1) * in + out - 1) / out;
}

// A 2-D pooling problem as the kernels see it: `planes` (batch * channels) planes of
// in_h x in_w in, out_h x out_w out; the strides of a plane's (batch, channel) position
// and of its rows and columns, for the input and for each output (values, indices).
struct PoolShape {
  int64_t batch = 1, channels = 1;
  int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t in_strides[4] = {};   // batch, channel, row, column
  int64_t out_strides[4] = {};  // of the values
  int64_t index_strides[4] = {};
  int64_t kernel[2] = {1, 1}, stride[2] = {1, 1}, padding[2] = {0, 0}, dilation[2] = {1, 1};

  int64_t outputs() const { return batch * channels * out_h * out_w; }
};

// Output element `i` (row-major over batch, channel, row, column) as its coordinates.
struct PoolPosition {
  int64_t n, c, y, x;
};

LOOM_GPU_HD PoolPosition pool_position(const PoolShape& s, int64_t i) {
  PoolPosition p;
  p.x = i % s.out_w;
  i /= s.out_w;
  p.y = i % s.out_h;
  i /= s.out_h;
  p.c = i % s.channels;
  p.n = i / s.channels;
  return p;
}

// The input rows [y0, y1) and columns [x0, x1) of position p's adaptive cell.
struct AdaptiveCell {
  int64_t y0, y1, x0, x1;
};

LOOM_GPU_HD AdaptiveCell adaptive_cell(const PoolShape& s, const PoolPosition& p) {
  return {adaptive_begin(p.y, s.in_h, s.out_h), adaptive_end(p.y, s.in_h, s.out_h),
          adaptive_begin(p.x, s.in_w, s.out_w), adaptive_end(p.x, s.in_w, s.out_w)};
}

// Position p's element offset in a tensor of `strides` (batch, channel, row, column).
LOOM_GPU_HD int64_t pool_offset(const int64_t (&strides)[4], const PoolPosition& p) {
  return p.n * strides[0] + p.c * strides[1] + p.y * strides[2] + p.x * strides[3];
}

}  // namespace loom::gpu
