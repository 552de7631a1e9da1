// 2-D pooling on CPU tensors ([N, C, H, W] or [C, H, W]): max pooling with indices and its
// gradient, average pooling, adaptive average and max pooling (grid sampling and bilinear
// upsampling, the pool family's other ops, are in pool_sampling.cc). Loops over each
// (batch, channel) plane, planes split over the thread pool, or over the pixels of a
// channels-last input; computing in float for float16/bfloat16.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "../isa.h"
#include "../kernels.h"
#include "../parallel.h"
#include "../scalar_types.h"
#include "../strided_loop.h"
#include "../vector_math.h"
#include "loom/sdk/ops.hpp"
#include "pool_planes.h"

namespace loom::cpu {
namespace {

struct Pair {
  int64_t h, w;
};

Pair pair_of(std::span<const int64_t> v, Pair if_empty = {0, 0}) {
  if (v.empty()) return if_empty;
  if (v.size() == 1) return {v[0], v[0]};
  return {v[0], v[1]};
}

// The taps of a pooling window along one dim that fall inside the input: taps
// i in [first, last) read start + i * dilation, which lies in [0, size).
struct Taps {
  int64_t start, first, last;
};

Taps taps_of(int64_t start, int64_t kernel, int64_t dilation, int64_t size) {
  const int64_t first = start >= 0 ? 0 : (-start + dilation - 1) / dilation;
  const int64_t last = start >= size ? 0 : std::min(kernel, (size - 1 - start) / dilation + 1);
  return {start, first, std::max(first, last)};
}

// The maximum of one window clipped to the input (rows and cols: its taps inside the
// plane) and its flat index in the plane; -1 when no tap lies inside. NaN wins (the first
// NaN stays) and ties keep the first tap in row-major order, as in PyTorch.
template <typename T>
void max_pool_window(const T* plane, const Planes& p, const Taps& rows, const Taps& cols, Pair d,
                     T* dst, int64_t* dst_index) {
  using A = acc_type<T>;
  A best = -std::numeric_limits<A>::infinity();
  int64_t best_index = -1;
  for (int64_t i = rows.first; i < rows.last; ++i) {
    const int64_t iy = rows.start + i * d.h;
    const T* line = plane + iy * p.h_stride;
    for (int64_t j = cols.first; j < cols.last; ++j) {
      const int64_t ix = cols.start + j * d.w;
      const A v = static_cast<A>(line[ix * p.w_stride]);
      if (best_index < 0 || v > best || (v != v && best == best)) {
        best = v;
        best_index = iy * p.w + ix;
      }
    }
  }
  *dst = static_cast<T>(best);
  *dst_index = best_index;
}

// One plane of max pooling by a table of window starts (Note [Max pooling by tap]).
// `window_offset[o]` is output o's window start in the plane (int32: the caller checks the
// plane fits) and `window_index[o]` that element's flat index; tap (i, j) of a window is
// i * dh rows and j * dw elements past its start.
template <typename T>
struct MaxPoolPlane {
  const T* plane;
  const int32_t* window_offset;
  const int64_t* window_index;
  int64_t outputs, row_stride, plane_w, kh, kw, dh, dw;
  T* dst;
  int64_t* dst_index;
};

// Runs MaxPoolPlane tap by tap over all of the plane's outputs, so each tap is one long
// loop (a gather per vector) that vectorises in every ISA clone (isa.h) however narrow
// the output rows are. Taps compare in row-major order, so ties and NaNs pick the same
// element as a window-by-window scan.
struct MaxPoolPlaneLoop {
  // first_tap takes tap (0, 0) of every window; compare_tap takes one more tap of every
  // window, moving best[o] and at[o] to the tap's element where it is larger or the first
  // NaN. restrict (the outputs never overlap the input) lets the indexed loads become
  // vector gathers; GCC honours it on parameters, not on locals.
  template <typename T>
  [[gnu::always_inline]] static inline void first_tap(const T* __restrict plane,
                                                      const int32_t* __restrict window_offset,
                                                      T* __restrict best, int64_t* __restrict at,
                                                      int64_t outputs) {
    for (int64_t o = 0; o < outputs; ++o) {
      best[o] = plane[window_offset[o]];
      at[o] = 0;
    }
  }

  template <typename T>
  [[gnu::always_inline]] static inline void compare_tap(const T* __restrict tap_base, int64_t tap,
                                                        const int32_t* __restrict window_offset,
                                                        T* __restrict best, int64_t* __restrict at,
                                                        int64_t outputs) {
    for (int64_t o = 0; o < outputs; ++o) {
      const T v = tap_base[window_offset[o]];
      const T b = best[o];
      // NaN wins (the first NaN stays), as in PyTorch
      const bool take = (v > b) | ((v != v) & (b == b));
      best[o] = select_bits(take, v, b);
      at[o] = select_bits(take, tap, at[o]);
    }
  }

  template <typename F, typename T>
  [[gnu::always_inline]] static inline void run(const F&, MaxPoolPlane<T> r) {
    T* best = r.dst;
    int64_t* at = r.dst_index;
    first_tap(r.plane, r.window_offset, best, at, r.outputs);
    for (int64_t i = 0; i < r.kh; ++i) {
      for (int64_t j = i == 0 ? 1 : 0; j < r.kw; ++j) {
        compare_tap(r.plane + i * r.dh * r.row_stride + j * r.dw, i * r.dh * r.plane_w + j * r.dw,
                    r.window_offset, best, at, r.outputs);
      }
    }
    for (int64_t o = 0; o < r.outputs; ++o) at[o] += r.window_index[o];
  }
};

// Note [Channels-last max pooling]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A channels-last input (NHWC in memory; the shape rule then makes the values and indices
// channels last too, as PyTorch does) is pooled one output pixel at a time: each tap of
// the pixel's window is a run of C contiguous values, and the C maxima and their indices
// are taken elementwise over the taps, a loop over channels that vectorises in every ISA
// clone without gathers. Taps compare in row-major window order by the plane loops' rule
// (larger, or the first NaN), and indices are flat h * W + w within each (batch, channel)
// plane, as for row-major results. The windows are clipped to the input (padding never
// wins), so a window wholly in the padding cannot occur: the shape rule keeps padding at
// most half the kernel.
template <typename T>
struct MaxPoolPixel {
  const T* image;  // the pixel's batch element
  Taps rows, columns;
  int64_t dh, dw, h_stride, w_stride, plane_w, channels;
  T* dst;  // the pixel's C values and indices
  int64_t* dst_index;
};

struct MaxPoolPixelLoop {
  template <typename T>
  [[gnu::always_inline]] static inline void first_tap(const T* __restrict tap, int64_t index,
                                                      T* __restrict best, int64_t* __restrict at,
                                                      int64_t channels) {
    for (int64_t c = 0; c < channels; ++c) {
      best[c] = tap[c];
      at[c] = index;
    }
  }

  template <typename T>
  [[gnu::always_inline]] static inline void compare_tap(const T* __restrict tap, int64_t index,
                                                        T* __restrict best, int64_t* __restrict at,
                                                        int64_t channels) {
    using A = acc_type<T>;
    for (int64_t c = 0; c < channels; ++c) {
      const A v = static_cast<A>(tap[c]), b = static_cast<A>(best[c]);
      const bool take = (v > b) | ((v != v) & (b == b));  // NaN wins, the first NaN stays
      best[c] = select_bits(take, tap[c], best[c]);
      at[c] = select_bits(take, index, at[c]);
    }
  }

  template <typename F, typename T>
  [[gnu::always_inline]] static inline void run(const F&, MaxPoolPixel<T> r) {
    bool first = true;
    for (int64_t i = r.rows.first; i < r.rows.last; ++i) {
      const int64_t iy = r.rows.start + i * r.dh;
      for (int64_t j = r.columns.first; j < r.columns.last; ++j) {
        const int64_t ix = r.columns.start + j * r.dw;
        const T* tap = r.image + iy * r.h_stride + ix * r.w_stride;
        if (first) {
          first_tap(tap, iy * r.plane_w + ix, r.dst, r.dst_index, r.channels);
          first = false;
        } else {
          compare_tap(tap, iy * r.plane_w + ix, r.dst, r.dst_index, r.channels);
        }
      }
    }
  }
};

// The strides of a dense channels-last [N, C, H, W] tensor.
std::array<int64_t, 4> channels_last_strides(std::span<const int64_t> sizes) {
  const int64_t c = sizes[1], w = sizes[3];
  return {sizes[2] * w * c, 1, w * c, c};
}

// `t` with channel stride 1 (a channels-last copy when it has another), for the pixel loops.
sdk::Tensor with_unit_channel_stride(const sdk::Tensor& t) {
  if (t.strides()[1] == 1 || t.sizes()[1] == 1) return t;
  const std::array<int64_t, 4> strides = channels_last_strides(t.sizes());
  sdk::Tensor copy = sdk::empty_strided(t.sizes(), strides, t.dtype(), t.device());
  sdk::op::copy_(copy, t);
  return copy;
}

// max_pool2d_with_indices over a channels-last [N, C, H, W] input into channels-last
// values and indices (Note [Channels-last max pooling]); pixels split over the thread pool.
template <typename T>
void max_pool_channels_last(const sdk::Tensor& input, const std::vector<Taps>& rows,
                            const std::vector<Taps>& columns, Pair k, Pair d,
                            const sdk::Tensor& values, const sdk::Tensor& indices) {
  const sdk::Tensor self = with_unit_channel_stride(input);
  const int64_t channels = self.size(1), oh = values.size(2), ow = values.size(3);
  const int64_t pixels = values.size(0) * oh * ow;
  const T* base = self.data<const T>();
  T* out = values.data<T>();
  int64_t* idx = indices.data<int64_t>();
  parallel_for(0, pixels, grain_for(channels * k.h * k.w), [&](int64_t begin, int64_t end) {
    for (int64_t pixel = begin; pixel < end; ++pixel) {
      const int64_t n = pixel / (oh * ow), y = pixel / ow % oh, x = pixel % ow;
      const MaxPoolPixel<T> job{.image = base + n * self.strides()[0],
                                .rows = rows[static_cast<size_t>(y)],
                                .columns = columns[static_cast<size_t>(x)],
                                .dh = d.h,
                                .dw = d.w,
                                .h_stride = self.strides()[2],
                                .w_stride = self.strides()[3],
                                .plane_w = self.size(3),
                                .channels = channels,
                                .dst = out + pixel * channels,
                                .dst_index = idx + pixel * channels};
      run_with_isa<MaxPoolPixelLoop, kIsaCloned<T>>([] {}, job);
    }
  });
}

// The outputs [first, last) along one dim whose windows lie wholly inside the input: the
// window of output y starts at y * stride - pad and spans `extent` elements.
struct Inside {
  int64_t first, last;
};

Inside inside_of(int64_t outputs, int64_t stride, int64_t pad, int64_t extent, int64_t size) {
  const int64_t first = std::min(outputs, (pad + stride - 1) / stride);
  const int64_t last = std::min(outputs, (size - extent + pad) / stride + 1);
  return {first, std::max(first, last)};
}

std::tuple<sdk::Tensor, sdk::Tensor> max_pool2d_with_indices_out(
    const sdk::Tensor& self, std::span<const int64_t> kernel_size, std::span<const int64_t> stride,
    std::span<const int64_t> padding, std::span<const int64_t> dilation, bool,
    const sdk::Tensor& values, const sdk::Tensor& indices) {
  Pair k = pair_of(kernel_size), s = pair_of(stride, k), pad = pair_of(padding),
       d = pair_of(dilation);
  Planes p = planes_of(self);
  int64_t oh = values.size(-2), ow = values.size(-1);
  dispatch_floating_types(self.dtype(), "max_pool2d_with_indices", [&](auto tag) {
    using T = decltype(tag);
    using A = acc_type<T>;
    T* out = values.data<T>();
    int64_t* idx = indices.data<int64_t>();
    // the taps of each output row and column inside the input, computed once
    std::vector<Taps> rows(static_cast<size_t>(oh)), columns(static_cast<size_t>(ow));
    for (int64_t y = 0; y < oh; ++y) rows[y] = taps_of(y * s.h - pad.h, k.h, d.h, p.h);
    for (int64_t x = 0; x < ow; ++x) columns[x] = taps_of(x * s.w - pad.w, k.w, d.w, p.w);
    if (values.dim() == 4 && !values.is_contiguous()) {  // channels last, from the shape rule
      max_pool_channels_last<T>(self, rows, columns, k, d, values, indices);
      return;
    }
    // Note [Max pooling by tap]
    // ~~~~~~~~~~~~~~~~~~~~~~~~~
    // When a whole window fits in the plane and its rows are
    // dense, every output is first computed from its window moved inside the plane (the
    // start clamped to [0, size - extent]), without tap bookkeeping, compared without
    // branches (float16 and bfloat16 compare as float, exactly, and keep their bits); the outputs
    // whose windows cross the padding or overhang (ceil_mode), usually one row and one column, are
    // then computed again window by window, clipped. Most networks' poolings have no such outputs
    // or few.
    const int64_t extent_h = (k.h - 1) * d.h + 1, extent_w = (k.w - 1) * d.w + 1;
    const int64_t plane_extent = (p.h - 1) * p.h_stride + p.w;
    const bool by_tap = (std::is_same_v<T, A> || sizeof(T) == 2) && p.w_stride == 1 &&
                        extent_h <= p.h && extent_w <= p.w &&
                        plane_extent <= std::numeric_limits<int32_t>::max();
    if (!by_tap) {
      for_each_plane(p, self.data<T>(), oh * ow * k.h * k.w, [&](const T* plane, int64_t o) {
        for (int64_t y = 0; y < oh; ++y) {
          for (int64_t x = 0; x < ow; ++x) {
            const int64_t at = o * oh * ow + y * ow + x;
            max_pool_window(plane, p, rows[y], columns[x], d, out + at, idx + at);
          }
        }
      });
      return;
    }
    const Inside inside_h = inside_of(oh, s.h, pad.h, extent_h, p.h);
    const Inside inside_w = inside_of(ow, s.w, pad.w, extent_w, p.w);
    std::vector<int32_t> window_offset(static_cast<size_t>(oh * ow));
    std::vector<int64_t> window_index(static_cast<size_t>(oh * ow));
    for (int64_t y = 0; y < oh; ++y) {
      const int64_t y0 = std::clamp(y * s.h - pad.h, int64_t{0}, p.h - extent_h);
      for (int64_t x = 0; x < ow; ++x) {
        const int64_t x0 = std::clamp(x * s.w - pad.w, int64_t{0}, p.w - extent_w);
        window_offset[y * ow + x] = static_cast<int32_t>(y0 * p.h_stride + x0);
        window_index[y * ow + x] = y0 * p.w + x0;
      }
    }
    for_each_plane(p, self.data<T>(), oh * ow * k.h * k.w, [&](const T* plane, int64_t o) {
      T* dst = out + o * oh * ow;
      int64_t* dst_index = idx + o * oh * ow;
      const MaxPoolPlane<T> job{.plane = plane,
                                .window_offset = window_offset.data(),
                                .window_index = window_index.data(),
                                .outputs = oh * ow,
                                .row_stride = p.h_stride,
                                .plane_w = p.w,
                                .kh = k.h,
                                .kw = k.w,
                                .dh = d.h,
                                .dw = d.w,
                                .dst = dst,
                                .dst_index = dst_index};
      run_with_isa<MaxPoolPlaneLoop, true>([] {}, job);
      for (int64_t y = 0; y < oh; ++y) {
        const bool row_inside = y >= inside_h.first && y < inside_h.last;
        for (int64_t x = 0; x < ow; ++x) {
          if (row_inside && x == inside_w.first) x = inside_w.last;  // skip the inside run
          if (x >= ow) break;
          max_pool_window(plane, p, rows[y], columns[x], d, dst + y * ow + x,
                          dst_index + y * ow + x);
        }
      }
    });
  });
  return {values, indices};
}

// Note [Channels-last average pooling]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// As max pooling does (Note [Channels-last max pooling]), avg_pool2d and
// adaptive_avg_pool2d of a channels-last input give channels-last results (the shape
// rule's), computed one output pixel at a time: the C sums of the window's taps, each
// tap a run of C contiguous values added elementwise in the ISA clones (16 channels at a
// time, their sums kept in registers over the whole window), then divided.
// Each channel adds its window in the plane loops' order (rows, then columns) and
// divides by the same divisor, so the values are the row-major kernels' bits.

// One output pixel's window [y0, y1) x [x0, x1) of the input and its divisor.
template <typename A>
struct SumWindow {
  int64_t y0, y1, x0, x1;
  A divisor;
};

template <typename T>
struct SumPoolPixel {
  const T* image;  // the pixel's batch element
  SumWindow<acc_type<T>> window;
  int64_t h_stride, w_stride, channels;
  acc_type<T>* sums;  // C accumulators
  T* dst;             // the pixel's C values
};

struct SumPoolPixelLoop {
  // kBlock channels at a time, their sums in registers over the window's taps
  static constexpr int64_t kBlock = 16;

  template <typename F, typename T>
  [[gnu::always_inline]] static inline void run(const F&, SumPoolPixel<T> r) {
    using A = acc_type<T>;
    int64_t c0 = 0;
    for (; c0 + kBlock <= r.channels; c0 += kBlock) {
      A block[kBlock] = {};
      for (int64_t iy = r.window.y0; iy < r.window.y1; ++iy) {
        for (int64_t ix = r.window.x0; ix < r.window.x1; ++ix) {
          const T* tap = r.image + iy * r.h_stride + ix * r.w_stride + c0;
          for (int64_t c = 0; c < kBlock; ++c) block[c] += static_cast<A>(tap[c]);
        }
      }
      for (int64_t c = 0; c < kBlock; ++c) {
        r.dst[c0 + c] = static_cast<T>(block[c] / r.window.divisor);
      }
    }
    if (c0 == r.channels) return;
    r.image += c0;
    r.dst += c0;
    r.channels -= c0;
    A* __restrict sums = r.sums;
    for (int64_t c = 0; c < r.channels; ++c) sums[c] = A(0);
    for (int64_t iy = r.window.y0; iy < r.window.y1; ++iy) {
      for (int64_t ix = r.window.x0; ix < r.window.x1; ++ix) {
        const T* __restrict tap = r.image + iy * r.h_stride + ix * r.w_stride;
        for (int64_t c = 0; c < r.channels; ++c) sums[c] += static_cast<A>(tap[c]);
      }
    }
    T* __restrict dst = r.dst;
    for (int64_t c = 0; c < r.channels; ++c) dst[c] = static_cast<T>(sums[c] / r.window.divisor);
  }
};

// Average pooling of a channels-last [N, C, H, W] input into the channels-last `out`,
// window_of(y, x) giving each output pixel's SumWindow (of about `taps` taps); pixels
// split over the thread pool.
template <typename T, typename WindowOf>
void sum_pool_channels_last(const sdk::Tensor& input, const sdk::Tensor& out, int64_t taps,
                            const WindowOf& window_of) {
  const sdk::Tensor self = with_unit_channel_stride(input);
  const int64_t channels = self.size(1), oh = out.size(2), ow = out.size(3);
  const T* base = self.data<const T>();
  T* dst = out.data<T>();
  parallel_for(0, out.size(0) * oh * ow, grain_for(channels * taps),
               [&](int64_t begin, int64_t end) {
                 std::vector<acc_type<T>> sums(static_cast<size_t>(channels));
                 for (int64_t pixel = begin; pixel < end; ++pixel) {
                   const int64_t n = pixel / (oh * ow), y = pixel / ow % oh, x = pixel % ow;
                   const SumPoolPixel<T> job{.image = base + n * self.strides()[0],
                                             .window = window_of(y, x),
                                             .h_stride = self.strides()[2],
                                             .w_stride = self.strides()[3],
                                             .channels = channels,
                                             .sums = sums.data(),
                                             .dst = dst + pixel * channels};
                   run_with_isa<SumPoolPixelLoop, kIsaCloned<T>>([] {}, job);
                 }
               });
}

sdk::Tensor avg_pool2d_out(const sdk::Tensor& self, std::span<const int64_t> kernel_size,
                           std::span<const int64_t> stride, std::span<const int64_t> padding, bool,
                           bool count_include_pad, std::optional<int64_t> divisor_override,
                           const sdk::Tensor& out) {
  Pair k = pair_of(kernel_size), s = pair_of(stride, k), pad = pair_of(padding);
  Planes p = planes_of(self);
  int64_t oh = out.size(-2), ow = out.size(-1);
  dispatch_floating_types(self.dtype(), "avg_pool2d", [&](auto tag) {
    using T = decltype(tag);
    using A = acc_type<T>;
    // the window clipped to the padded input, then to the input
    auto window_of = [&](int64_t y, int64_t x) {
      int64_t y0 = y * s.h - pad.h, x0 = x * s.w - pad.w;
      int64_t y1 = std::min(y0 + k.h, p.h + pad.h), x1 = std::min(x0 + k.w, p.w + pad.w);
      const int64_t padded_count = (y1 - y0) * (x1 - x0);
      y0 = std::max<int64_t>(y0, 0);
      x0 = std::max<int64_t>(x0, 0);
      y1 = std::min(y1, p.h);
      x1 = std::min(x1, p.w);
      const int64_t divisor = divisor_override    ? *divisor_override
                              : count_include_pad ? padded_count
                                                  : (y1 - y0) * (x1 - x0);
      return SumWindow<A>{y0, y1, x0, x1, static_cast<A>(divisor)};
    };
    if (out.dim() == 4 && !out.is_contiguous()) {  // channels last, from the shape rule
      sum_pool_channels_last<T>(self, out, k.h * k.w, window_of);
      return;
    }
    T* dst_base = out.data<T>();
    for_each_plane(p, self.data<T>(), oh * ow * k.h * k.w, [&](const T* plane, int64_t o) {
      T* dst = dst_base + o * oh * ow;
      for (int64_t y = 0; y < oh; ++y) {
        for (int64_t x = 0; x < ow; ++x) {
          const SumWindow<A> w = window_of(y, x);
          A total = 0;
          for (int64_t iy = w.y0; iy < w.y1; ++iy) {
            for (int64_t ix = w.x0; ix < w.x1; ++ix) {
              total += static_cast<A>(plane[iy * p.h_stride + ix * p.w_stride]);
            }
          }
          dst[y * ow + x] = static_cast<T>(total / w.divisor);
        }
      }
    });
  });
  return out;
}

// Adaptive pooling's output cell i covers input [floor(i * in / out), ceil((i + 1) * in / out)).
int64_t adaptive_start(int64_t i, int64_t in, int64_t n) {
  return (i * in) / n;
}
int64_t adaptive_end(int64_t i, int64_t in, int64_t n) {
  return ((i + 1) * in + n - 1) / n;
}

sdk::Tensor adaptive_avg_pool2d_out(const sdk::Tensor& self, std::span<const int64_t>,
                                    const sdk::Tensor& out) {
  Planes p = planes_of(self);
  int64_t oh = out.size(-2), ow = out.size(-1);
  if (out.numel() == 0) return out;
  auto start = adaptive_start;
  auto end = adaptive_end;
  dispatch_floating_types(self.dtype(), "adaptive_avg_pool2d", [&](auto tag) {
    using T = decltype(tag);
    using A = acc_type<T>;
    if (out.dim() == 4 && !out.is_contiguous()) {  // channels last, from the shape rule
      const int64_t taps =
          (p.h / std::max<int64_t>(oh, 1) + 1) * (p.w / std::max<int64_t>(ow, 1) + 1);
      sum_pool_channels_last<T>(self, out, taps, [&](int64_t y, int64_t x) {
        const int64_t y0 = start(y, p.h, oh), y1 = end(y, p.h, oh);
        const int64_t x0 = start(x, p.w, ow), x1 = end(x, p.w, ow);
        return SumWindow<A>{y0, y1, x0, x1, static_cast<A>((y1 - y0) * (x1 - x0))};
      });
      return;
    }
    T* dst_base = out.data<T>();
    for_each_plane(p, self.data<T>(), p.h * p.w + oh * ow, [&](const T* plane, int64_t o) {
      T* dst = dst_base + o * oh * ow;
      for (int64_t y = 0; y < oh; ++y) {
        int64_t y0 = start(y, p.h, oh), y1 = end(y, p.h, oh);
        for (int64_t x = 0; x < ow; ++x) {
          int64_t x0 = start(x, p.w, ow), x1 = end(x, p.w, ow);
          A total = 0;
          for (int64_t iy = y0; iy < y1; ++iy) {
            for (int64_t ix = x0; ix < x1; ++ix) {
              total += static_cast<A>(plane[iy * p.h_stride + ix * p.w_stride]);
            }
          }
          dst[y * ow + x] = static_cast<T>(total / static_cast<A>((y1 - y0) * (x1 - x0)));
        }
      }
    });
  });
  return out;
}

// The maximum of each adaptive cell and its position in the plane (y * W + x). As in
// PyTorch, the first of equal maxima wins and a NaN takes the place of anything (a later
// NaN moves the position to itself).
std::tuple<sdk::Tensor, sdk::Tensor> adaptive_max_pool2d_out(const sdk::Tensor& self,
                                                             std::span<const int64_t>,
                                                             const sdk::Tensor& values,
                                                             const sdk::Tensor& indices) {
  Planes p = planes_of(self);
  const int64_t oh = values.size(-2), ow = values.size(-1);
  if (values.numel() == 0) return {values, indices};
  dispatch_floating_types(self.dtype(), "adaptive_max_pool2d", [&](auto tag) {
    using T = decltype(tag);
    using A = acc_type<T>;
    T* value_base = values.data<T>();
    int64_t* index_base = indices.data<int64_t>();
    for_each_plane(p, self.data<T>(), p.h * p.w + oh * ow, [&](const T* plane, int64_t o) {
      T* dst = value_base + o * oh * ow;
      int64_t* where = index_base + o * oh * ow;
      for (int64_t y = 0; y < oh; ++y) {
        const int64_t y0 = adaptive_start(y, p.h, oh), y1 = adaptive_end(y, p.h, oh);
        for (int64_t x = 0; x < ow; ++x) {
          const int64_t x0 = adaptive_start(x, p.w, ow), x1 = adaptive_end(x, p.w, ow);
          A best = static_cast<A>(plane[y0 * p.h_stride + x0 * p.w_stride]);
          int64_t best_at = y0 * p.w + x0;
          for (int64_t iy = y0; iy < y1; ++iy) {
            for (int64_t ix = x0; ix < x1; ++ix) {
              const A v = static_cast<A>(plane[iy * p.h_stride + ix * p.w_stride]);
              if (v > best || std::isnan(v)) {
                best = v;
                best_at = iy * p.w + ix;
              }
            }
          }
          dst[y * ow + x] = static_cast<T>(best);
          where[y * ow + x] = best_at;
        }
      }
    });
  });
  return {values, indices};
}

// The error of a max-pooling gradient whose indices point outside self's planes.
[[noreturn]] void index_outside_the_plane(const std::string& op, int64_t k, int64_t plane_size) {
  throw sdk::Error(op + "expected indices in [0, " + std::to_string(plane_size) +
                   ") (a plane of self), found " + std::to_string(k));
}

// `t` dense channels last: itself, or a channels-last copy.
sdk::Tensor as_channels_last(const sdk::Tensor& t) {
  if (t.is_channels_last()) return t;
  const std::array<int64_t, 4> strides = channels_last_strides(t.sizes());
  sdk::Tensor copy = sdk::empty_strided(t.sizes(), strides, t.dtype(), t.device());
  sdk::op::copy_(copy, t);
  return copy;
}

// The gradient of channels-last max pooling: a channels-last grad_input, as PyTorch gives
// for a channels-last self. Tasks of (batch element, block of channels) zero their part
// and add each output's gradient at its index, in output order per channel (the order the
// plane loop and scatter_add_ add them in).
sdk::Tensor max_pool_backward_channels_last(const std::string& op, const sdk::Tensor& grad_output,
                                            const sdk::Tensor& self, const sdk::Tensor& indices) {
  constexpr int64_t kChannelBlock = 64;
  const int64_t batch = self.size(0), channels = self.size(1);
  const int64_t plane_size = self.size(2) * self.size(3);
  const int64_t outputs = grad_output.size(2) * grad_output.size(3);
  const std::array<int64_t, 4> strides = channels_last_strides(self.sizes());
  sdk::Tensor grad_input = sdk::empty_strided(self.sizes(), strides, self.dtype(), self.device());
  const sdk::Tensor grad = as_channels_last(grad_output), at = as_channels_last(indices);
  const int64_t blocks = (channels + kChannelBlock - 1) / kChannelBlock;
  dispatch_floating_types(self.dtype(), "max_pool2d_with_indices_backward", [&](auto tag) {
    using T = decltype(tag);
    using A = acc_type<T>;
    T* dst_base = grad_input.data<T>();
    const T* src_base = grad.data<const T>();
    const int64_t* index_base = at.data<const int64_t>();
    const int64_t work = (plane_size + 2 * outputs) * std::min(channels, kChannelBlock);
    parallel_for(0, batch * blocks, grain_for(work), [&](int64_t first, int64_t last) {
      for (int64_t task = first; task < last; ++task) {
        const int64_t n = task / blocks, c0 = task % blocks * kChannelBlock;
        const int64_t c1 = std::min(channels, c0 + kChannelBlock);
        T* dst = dst_base + n * plane_size * channels;
        const T* src = src_base + n * outputs * channels;
        const int64_t* index = index_base + n * outputs * channels;
        for (int64_t e = 0; e < plane_size; ++e)
          std::fill(dst + e * channels + c0, dst + e * channels + c1, T(0));
        for (int64_t o = 0; o < outputs; ++o) {
          for (int64_t c = c0; c < c1; ++c) {
            const int64_t k = index[o * channels + c];
            if (k < 0 || k >= plane_size) index_outside_the_plane(op, k, plane_size);
            T& slot = dst[k * channels + c];
            slot = static_cast<T>(static_cast<A>(slot) + static_cast<A>(src[o * channels + c]));
          }
        }
      }
    });
  });
  return grad_input;
}

}  // namespace

// max_pool2d_with_indices_backward (a decomposition op: zeros and scatter_add_ in the op
// library): one task per plane zeroes the plane and adds grad_output's values at their
// indices in output order, as scatter_add_ adds them, without scatter_add_'s general
// strided walk or a second pass for the zeros.
sdk::Tensor max_pool2d_with_indices_backward(const sdk::Tensor& grad_output,
                                             const sdk::Tensor& self, std::span<const int64_t>,
                                             std::span<const int64_t>, std::span<const int64_t>,
                                             std::span<const int64_t>, bool,
                                             const sdk::Tensor& indices) {
  const std::string op = "[loom::max_pool2d_with_indices_backward] ";
  if (self.dim() != 3 && self.dim() != 4) {
    throw sdk::Error(op + "expected a 3-D [C, H, W] or 4-D [N, C, H, W] self, found " +
                     std::to_string(self.dim()) + " dims");
  }
  if (indices.dtype() != LOOM_DTYPE_INT64) {
    throw sdk::Error(op + "expected int64 indices, found " + sdk::dtype_name(indices.dtype()));
  }
  if (grad_output.dtype() != self.dtype() || !sdk::dtypes::floating.contains(self.dtype())) {
    throw sdk::Error(op + "expected a floating self and grad_output of its dtype, found " +
                     sdk::dtype_name(self.dtype()) + " and " +
                     sdk::dtype_name(grad_output.dtype()));
  }
  const size_t lead = static_cast<size_t>(self.dim()) - 2;
  const bool fits = grad_output.dim() == self.dim() &&
                    std::ranges::equal(grad_output.sizes().first(lead), self.sizes().first(lead)) &&
                    std::ranges::equal(grad_output.sizes(), indices.sizes());
  if (!fits) {
    throw sdk::Error(op + "expected grad_output and indices of one shape with self's leading " +
                     "dims, found grad_output " + shape_string(grad_output.sizes()) + ", indices " +
                     shape_string(indices.sizes()) + " and self " + shape_string(self.sizes()));
  }
  if (self.dim() == 4 && self.is_channels_last() && !self.is_contiguous()) {
    return max_pool_backward_channels_last(op, grad_output, self, indices);
  }
  const Planes p = planes_of(self);
  const int64_t planes = p.batch * p.channels, plane_size = p.h * p.w;
  const int64_t outputs = planes == 0 ? 0 : grad_output.numel() / planes;
  sdk::Tensor grad_input = sdk::empty(self.sizes(), self.dtype(), self.device());
  const sdk::Tensor grad =
      grad_output.is_contiguous() ? grad_output : sdk::op::contiguous(grad_output);
  const sdk::Tensor at = indices.is_contiguous() ? indices : sdk::op::contiguous(indices);
  dispatch_floating_types(self.dtype(), "max_pool2d_with_indices_backward", [&](auto tag) {
    using T = decltype(tag);
    using A = acc_type<T>;
    T* dst_base = grad_input.data<T>();
    const T* src_base = grad.data<const T>();
    const int64_t* index_base = at.data<const int64_t>();
    parallel_for(0, planes, grain_for(plane_size + 2 * outputs), [&](int64_t first, int64_t last) {
      for (int64_t plane = first; plane < last; ++plane) {
        T* dst = dst_base + plane * plane_size;
        const T* src = src_base + plane * outputs;
        const int64_t* index = index_base + plane * outputs;
        std::fill(dst, dst + plane_size, T(0));
        for (int64_t o = 0; o < outputs; ++o) {
          const int64_t k = index[o];
          if (k < 0 || k >= plane_size) index_outside_the_plane(op, k, plane_size);
          dst[k] = static_cast<T>(static_cast<A>(dst[k]) + static_cast<A>(src[o]));
        }
      }
    });
  });
  return grad_input;
}

void register_pool_kernels(sdk::Registrar& r) {
  r.impl<&max_pool2d_with_indices_out>("loom::max_pool2d_with_indices.out", LOOM_KEY_CPU,
                                       sdk::dtypes::floating);
  r.impl<&max_pool2d_with_indices_backward>("loom::max_pool2d_with_indices_backward", LOOM_KEY_CPU,
                                            sdk::dtypes::all);
  r.impl<&avg_pool2d_out>("loom::avg_pool2d.out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&adaptive_max_pool2d_out>("loom::adaptive_max_pool2d.out", LOOM_KEY_CPU,
                                   sdk::dtypes::floating);
  r.impl<&adaptive_avg_pool2d_out>("loom::adaptive_avg_pool2d.out", LOOM_KEY_CPU,
                                   sdk::dtypes::floating);
}

}  // namespace loom::cpu
