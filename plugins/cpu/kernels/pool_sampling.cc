// The pool family's sampling ops on CPU tensors: grid_sampler_2d and its backward, and
// bilinear upsampling (Note [Bilinear upsampling kernel]); loops over each (batch,
// channel) plane, planes split over the thread pool, computing in the opmath type.
#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "../kernels.h"
#include "../parallel.h"
#include "../scalar_types.h"
#include "../strided_loop.h"
#include "loom/sdk/ops.hpp"
#include "pool_planes.h"

namespace loom::cpu {
namespace {

// Note [Grid sampling]
// ~~~~~~~~~~~~~~~~~~~~
// grid_sampler_2d reads input plane n at the points grid[n, y, x] = (gx, gy) in [-1, 1]
// (-1 and 1 are the centres of the edge pixels with align_corners, else their outer
// edges), PyTorch's formulas throughout: a coordinate is unnormalised to pixels, then
// the padding mode applies (border clips it to [0, size - 1]; reflection reflects it off
// the edges, then clips; zeros leaves it, and taps outside read 0). Bilinear weighs the
// four pixels around the point, nearest takes the pixel at the point rounded half to
// even, bicubic weighs 4 x 4 pixels with the cubic convolution kernel (A = -0.75), the
// padding mode applied to each tap. Coordinates compute in the opmath type.
template <typename A>
A reflect_coordinate(A in, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return A(0);
  const A low = static_cast<A>(twice_low) / 2, span = static_cast<A>(twice_high - twice_low) / 2;
  in = std::fabs(in - low);
  const A extra = std::fmod(in, span);
  const int64_t flips = static_cast<int64_t>(std::floor(in / span));
  return flips % 2 == 0 ? extra + low : span - extra + low;
}

template <typename A>
struct GridAxis {
  int64_t size;
  int64_t padding_mode;  // 0 zeros, 1 border, 2 reflection
  bool align_corners;

  A unnormalize(A coord) const {
    return align_corners ? (coord + 1) / 2 * static_cast<A>(size - 1)
                         : ((coord + 1) * static_cast<A>(size) - 1) / 2;
  }
  // d unnormalize / d coord
  A unnormalize_slope() const {
    return align_corners ? static_cast<A>(size - 1) / 2 : static_cast<A>(size) / 2;
  }
  A clip(A x) const { return std::min(static_cast<A>(size - 1), std::max(x, A(0))); }
  A pad(A x) const {
    if (padding_mode == 1) return clip(x);
    if (padding_mode == 2) {
      x = align_corners ? reflect_coordinate(x, 0, 2 * (size - 1))
                        : reflect_coordinate(x, -1, 2 * size - 1);
      return clip(x);
    }
    return x;
  }
  // pad(x) and its slope d pad / d x: 0 where clipped, -1 where reflected an odd number
  // of times (PyTorch's *_set_grad helpers).
  std::pair<A, A> pad_with_slope(A x) const {
    if (padding_mode == 0) return {x, A(1)};
    A slope = 1;
    if (padding_mode == 2) {
      const int64_t twice_low = align_corners ? 0 : -1;
      const int64_t twice_high = align_corners ? 2 * (size - 1) : 2 * size - 1;
      if (twice_low == twice_high) return {A(0), A(0)};
      const A low = static_cast<A>(twice_low) / 2;
      const A span = static_cast<A>(twice_high - twice_low) / 2;
      A in = x - low;
      if (in < 0) {
        slope = -1;
        in = -in;
      }
      const A extra = std::fmod(in, span);
      if (static_cast<int64_t>(std::floor(in / span)) % 2 == 0) {
        x = extra + low;
      } else {
        x = span - extra + low;
        slope = -slope;
      }
    }
    if (x <= 0) return {A(0), A(0)};
    if (x >= static_cast<A>(size - 1)) return {static_cast<A>(size - 1), A(0)};
    return {x, slope};
  }
};

template <typename A>
std::array<A, 4> cubic_coefficients(A t) {
  constexpr A a = A(-0.75);
  auto near = [](A x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };
  auto far = [](A x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };
  return {far(t + 1), near(t), near(1 - t), far(2 - t)};
}

// d cubic_coefficients(t) / dt.
template <typename A>
std::array<A, 4> cubic_coefficient_slopes(A t) {
  constexpr A a = A(-0.75);
  auto near = [](A x) { return (3 * (a + 2) * x - 2 * (a + 3)) * x; };
  auto far = [](A x) { return (3 * a * x - 10 * a) * x + 8 * a; };
  return {far(t + 1), near(t), -near(1 - t), -far(2 - t)};
}

sdk::Tensor grid_sampler_2d_out(const sdk::Tensor& input, const sdk::Tensor& grid,
                                int64_t interpolation_mode, int64_t padding_mode,
                                bool align_corners, const sdk::Tensor& out) {
  if (out.numel() == 0) return out;
  const Planes p = planes_of(input);
  const int64_t oh = out.size(2), ow = out.size(3);
  const auto gs = grid.strides();
  dispatch_floating_types(input.dtype(), "grid_sampler_2d", [&](auto tag) {
    using T = decltype(tag);
    using A = acc_type<T>;
    const GridAxis<A> along_x{p.w, padding_mode, align_corners};
    const GridAxis<A> along_y{p.h, padding_mode, align_corners};
    const T* points = grid.data<T>();
    T* dst_base = out.data<T>();
    for_each_plane(p, input.data<T>(), oh * ow * 16, [&](const T* plane, int64_t o) {
      const int64_t n = o / p.channels;
      T* dst = dst_base + o * oh * ow;
      auto at = [&](int64_t y, int64_t x) -> A {
        return static_cast<A>(plane[y * p.h_stride + x * p.w_stride]);
      };
      // The pixel at integer-valued coordinates; 0 outside (and for NaN coordinates).
      auto tap = [&](A y, A x) -> A {
        if (!(y >= 0 && y < static_cast<A>(p.h) && x >= 0 && x < static_cast<A>(p.w))) return 0;
        return at(static_cast<int64_t>(y), static_cast<int64_t>(x));
      };
      for (int64_t y = 0; y < oh; ++y) {
        for (int64_t x = 0; x < ow; ++x) {
          const T* point = points + n * gs[0] + y * gs[1] + x * gs[2];
          const A gx = along_x.unnormalize(static_cast<A>(point[0]));
          const A gy = along_y.unnormalize(static_cast<A>(point[gs[3]]));
          A value = 0;
          if (interpolation_mode == 2) {  // bicubic: padding per tap
            const A fx = std::floor(gx), fy = std::floor(gy);
            const auto cx = cubic_coefficients(gx - fx), cy = cubic_coefficients(gy - fy);
            for (int i = 0; i < 4; ++i) {
              A row = 0;
              for (int j = 0; j < 4; ++j) {
                row += cx[j] * tap(std::trunc(along_y.pad(fy - 1 + i)),
                                   std::trunc(along_x.pad(fx - 1 + j)));
              }
              value += cy[i] * row;
            }
          } else {
            const A ix = along_x.pad(gx), iy = along_y.pad(gy);
            if (interpolation_mode == 1) {
              value = tap(std::nearbyint(iy), std::nearbyint(ix));
            } else if (std::isfinite(ix) && std::isfinite(iy)) {
              const A x0 = std::floor(ix), y0 = std::floor(iy);
              const A wx = ix - x0, wy = iy - y0;
              value = (1 - wy) * ((1 - wx) * tap(y0, x0) + wx * tap(y0, x0 + 1)) +
                      wy * ((1 - wx) * tap(y0 + 1, x0) + wx * tap(y0 + 1, x0 + 1));
            }
          }
          dst[y * ow + x] = static_cast<T>(value);
        }
      }
    });
  });
  return out;
}

// A tap of grid_sampler_2d's backward: the input pixel, its weight in the output and
// the weight's slopes along x and y.
template <typename A>
struct GridTap {
  int64_t row, col;
  A weight, weight_dx, weight_dy;
};

// A point's taps that lie inside the input (those outside read 0 and get no gradient).
template <typename A>
struct GridTaps {
  std::array<GridTap<A>, 16> taps;
  int count = 0;
  void add(A row, A col, A weight, A weight_dx, A weight_dy, int64_t h, int64_t w) {
    if (!(row >= 0 && row < static_cast<A>(h) && col >= 0 && col < static_cast<A>(w))) return;
    taps[count++] = {static_cast<int64_t>(row), static_cast<int64_t>(col), weight, weight_dx,
                     weight_dy};
  }
};

// The gradients of grid_sampler_2d: grad_input gathers each output gradient back at the
// taps that produced it, with their weights; grad_grid is the output gradient times the
// slope of the interpolation along each axis, times the slopes of the padding and the
// unnormalisation (0 for nearest, which is piecewise constant). Batches are split over
// the thread pool: each writes only its own planes and grid points.
std::tuple<sdk::Tensor, sdk::Tensor> grid_sampler_2d_backward_out(
    const sdk::Tensor& grad_output, const sdk::Tensor& input, const sdk::Tensor& grid,
    int64_t interpolation_mode, int64_t padding_mode, bool align_corners,
    const sdk::Tensor& grad_input, const sdk::Tensor& grad_grid) {
  const Planes p = planes_of(input);
  const int64_t channels = p.channels, oh = grad_output.size(2), ow = grad_output.size(3);
  const auto gs = grid.strides(), gos = grad_output.strides(), gis = grad_input.strides(),
             ggs = grad_grid.strides();
  dispatch_floating_types(input.dtype(), "grid_sampler_2d_backward", [&](auto tag) {
    using T = decltype(tag);
    using A = acc_type<T>;
    const GridAxis<A> along_x{p.w, padding_mode, align_corners};
    const GridAxis<A> along_y{p.h, padding_mode, align_corners};
    const T* points = grid.data<T>();
    const T* grads = grad_output.data<T>();
    const T* src = input.data<T>();
    T* dst_input = grad_input.data<T>();
    T* dst_grid = grad_grid.data<T>();
    parallel_for(0, p.batch, grain_for(channels * oh * ow * 16), [&](int64_t begin, int64_t end) {
      for (int64_t n = begin; n < end; ++n) {
        for (int64_t c = 0; c < channels; ++c) {
          for (int64_t y = 0; y < p.h; ++y) {
            for (int64_t x = 0; x < p.w; ++x) {
              dst_input[n * gis[0] + c * gis[1] + y * gis[2] + x * gis[3]] = T(0);
            }
          }
        }
        for (int64_t y = 0; y < oh; ++y) {
          for (int64_t x = 0; x < ow; ++x) {
            const T* point = points + n * gs[0] + y * gs[1] + x * gs[2];
            const A gx = along_x.unnormalize(static_cast<A>(point[0]));
            const A gy = along_y.unnormalize(static_cast<A>(point[gs[3]]));
            // This point's taps, the same for every channel; slope_* become
            // d coordinate / d grid value once the padding's slope is in.
            GridTaps<A> taps;
            A slope_x = along_x.unnormalize_slope(), slope_y = along_y.unnormalize_slope();
            if (std::isfinite(gx) && std::isfinite(gy)) {
              if (interpolation_mode == 2) {
                const A fx = std::floor(gx), fy = std::floor(gy);
                const auto cx = cubic_coefficients(gx - fx), cy = cubic_coefficients(gy - fy);
                const auto dx = cubic_coefficient_slopes(gx - fx);
                const auto dy = cubic_coefficient_slopes(gy - fy);
                for (int i = 0; i < 4; ++i) {
                  for (int j = 0; j < 4; ++j) {
                    taps.add(std::trunc(along_y.pad(fy - 1 + i)),
                             std::trunc(along_x.pad(fx - 1 + j)), cy[i] * cx[j], cy[i] * dx[j],
                             dy[i] * cx[j], p.h, p.w);
                  }
                }
              } else {
                const auto [ix, ix_slope] = along_x.pad_with_slope(gx);
                const auto [iy, iy_slope] = along_y.pad_with_slope(gy);
                slope_x *= ix_slope;
                slope_y *= iy_slope;
                if (interpolation_mode == 1) {
                  taps.add(std::nearbyint(iy), std::nearbyint(ix), A(1), A(0), A(0), p.h, p.w);
                } else if (std::isfinite(ix) && std::isfinite(iy)) {
                  const A x0 = std::floor(ix), y0 = std::floor(iy);
                  const A wx = ix - x0, wy = iy - y0;
                  taps.add(y0, x0, (1 - wy) * (1 - wx), -(1 - wy), -(1 - wx), p.h, p.w);
                  taps.add(y0, x0 + 1, (1 - wy) * wx, 1 - wy, -wx, p.h, p.w);
                  taps.add(y0 + 1, x0, wy * (1 - wx), -wy, 1 - wx, p.h, p.w);
                  taps.add(y0 + 1, x0 + 1, wy * wx, wy, wx, p.h, p.w);
                }
              }
            }
            A grad_x = 0, grad_y = 0;  // d loss / d unnormalised coordinate
            for (int64_t c = 0; c < channels; ++c) {
              const A g = static_cast<A>(grads[n * gos[0] + c * gos[1] + y * gos[2] + x * gos[3]]);
              const T* plane = src + n * p.batch_stride + c * p.channel_stride;
              T* plane_grad = dst_input + n * gis[0] + c * gis[1];
              for (int k = 0; k < taps.count; ++k) {
                const GridTap<A>& t = taps.taps[k];
                const A v = static_cast<A>(plane[t.row * p.h_stride + t.col * p.w_stride]);
                T& slot = plane_grad[t.row * gis[2] + t.col * gis[3]];
                slot = static_cast<T>(static_cast<A>(slot) + t.weight * g);
                grad_x += t.weight_dx * v * g;
                grad_y += t.weight_dy * v * g;
              }
            }
            T* out = dst_grid + n * ggs[0] + y * ggs[1] + x * ggs[2];
            out[0] = static_cast<T>(grad_x * slope_x);
            out[ggs[3]] = static_cast<T>(grad_y * slope_y);
          }
        }
      }
    });
  });
  return {grad_input, grad_grid};
}

// Note [Bilinear upsampling kernel]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// upsample_bilinear2d is a decomposition (two index_selects and a lerp per dim) that
// every backend gets; the CPU registers its own kernel, which takes precedence (the meta
// device keeps the decomposition). The source coordinates follow PyTorch: with
// align_corners, dst * (in - 1) / (out - 1); else (dst + 0.5) / scale - 0.5 clamped at 0,
// with scale = out / in unless given. Coordinates, weights and the sum of the four
// neighbours (weights 1 - l and l per dim) are in the accumulation type A, as PyTorch's
// opmath: double for float64, float otherwise. The taps are computed once per call.
template <typename A>
struct LinearTap {
  int64_t i0, i1;
  A lambda;  // weight of i1; i0 gets 1 - lambda
};

template <typename A>
std::vector<LinearTap<A>> linear_taps(int64_t in, int64_t out, bool align_corners,
                                      std::optional<double> scale) {
  A ratio;
  if (align_corners) {
    ratio = out > 1 ? static_cast<A>(in - 1) / static_cast<A>(out - 1) : A(0);
  } else if (scale && *scale > 0) {
    ratio = static_cast<A>(1.0 / *scale);
  } else {
    ratio = static_cast<A>(in) / static_cast<A>(out);
  }
  std::vector<LinearTap<A>> taps(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    A src = align_corners ? ratio * static_cast<A>(o)
                          : std::max(ratio * (static_cast<A>(o) + A(0.5)) - A(0.5), A(0));
    int64_t i0 = std::min(static_cast<int64_t>(src), in - 1);
    taps[static_cast<size_t>(o)] = {i0, i0 < in - 1 ? i0 + 1 : i0, src - static_cast<A>(i0)};
  }
  return taps;
}

sdk::Tensor upsample_bilinear2d(const sdk::Tensor& self, std::span<const int64_t> output_size,
                                bool align_corners, std::optional<double> scales_h,
                                std::optional<double> scales_w) {
  const std::string op = "[loom::upsample_bilinear2d] ";
  if (self.dim() != 4) {
    throw sdk::Error(op + "expected a 4-D [N, C, H, W] input, found " + std::to_string(self.dim()) +
                     " dims");
  }
  if (output_size.size() != 2 || output_size[0] <= 0 || output_size[1] <= 0) {
    throw sdk::Error(op + "expected a positive output size [H, W]");
  }
  if (!sdk::dtypes::floating.contains(self.dtype())) {
    throw sdk::Error(op + "expected a floating point input, found " +
                     sdk::dtype_name(self.dtype()));
  }
  Planes p = planes_of(self);
  if (self.numel() == 0 && (p.h == 0 || p.w == 0)) {
    throw sdk::Error(op + "expected a non-empty input height and width");
  }
  const int64_t oh = output_size[0], ow = output_size[1];
  sdk::Tensor out = sdk::empty({p.batch, p.channels, oh, ow}, self.dtype(), self.device());
  if (out.numel() == 0) return out;
  dispatch_floating_types(self.dtype(), "upsample_bilinear2d", [&](auto tag) {
    using T = decltype(tag);
    using A = acc_type<T>;
    const auto rows = linear_taps<A>(p.h, oh, align_corners, scales_h);
    const auto cols = linear_taps<A>(p.w, ow, align_corners, scales_w);
    T* dst_base = out.data<T>();
    for_each_plane(p, self.data<T>(), 8 * oh * ow, [&](const T* plane, int64_t o) {
      T* dst = dst_base + o * oh * ow;
      for (int64_t y = 0; y < oh; ++y) {
        const LinearTap<A>& r = rows[static_cast<size_t>(y)];
        const T* row0 = plane + r.i0 * p.h_stride;
        const T* row1 = plane + r.i1 * p.h_stride;
        const A h1 = r.lambda, h0 = static_cast<A>(1) - h1;
        for (int64_t x = 0; x < ow; ++x) {
          const LinearTap<A>& c = cols[static_cast<size_t>(x)];
          const A w1 = c.lambda, w0 = static_cast<A>(1) - w1;
          const int64_t c0 = c.i0 * p.w_stride, c1 = c.i1 * p.w_stride;
          A top = w0 * static_cast<A>(row0[c0]) + w1 * static_cast<A>(row0[c1]);
          A bottom = w0 * static_cast<A>(row1[c0]) + w1 * static_cast<A>(row1[c1]);
          dst[y * ow + x] = static_cast<T>(h0 * top + h1 * bottom);
        }
      }
    });
  });
  return out;
}

}  // namespace

void register_pool_sampling_kernels(sdk::Registrar& r) {
  r.impl<&upsample_bilinear2d>("loom::upsample_bilinear2d", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&grid_sampler_2d_out>("loom::grid_sampler_2d.out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&grid_sampler_2d_backward_out>("loom::grid_sampler_2d_backward.out", LOOM_KEY_CPU,
                                        sdk::dtypes::floating);
}

}  // namespace loom::cpu
