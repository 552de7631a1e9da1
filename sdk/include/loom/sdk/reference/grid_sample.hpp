// grid_sampler_2d's arithmetic (Note [Grid sampling]), shared by every backend so they
// sample the same points with the same weights: host code, and device code under nvcc or
// hipcc (the functions are __host__ __device__ there).
//
// Note [Grid sampling]
// ~~~~~~~~~~~~~~~~~~~~
// grid_sampler_2d reads input plane n at the points grid[n, y, x] = (gx, gy) in [-1, 1]
// (-1 and 1 are the centres of the edge pixels with align_corners, else their outer
// edges), PyTorch's formulas throughout: a coordinate is unnormalised to pixels, then
// the padding mode applies (border clips it to [0, size - 1]; reflection reflects it off
// the edges, then clips; zeros leaves it, and taps outside read 0). Bilinear weighs the
// four pixels around the point, nearest takes the pixel at the point rounded half to
// even, bicubic weighs 4 x 4 pixels with the cubic convolution kernel (A = -0.75), the
// padding mode applied to each tap. Coordinates compute in the opmath type. The backward
// gathers each output gradient back at the taps with their weights (grad_input) and
// multiplies it by the interpolation's slopes, the padding's and the unnormalisation's
// (grad_grid; 0 for nearest, which is piecewise constant).
#pragma once

#include <cmath>
#include <cstdint>

#include "loom/sdk/hd.hpp"

namespace loom::sdk {

enum GridInterpolation : int64_t { kGridBilinear = 0, kGridNearest = 1, kGridBicubic = 2 };
enum GridPadding : int64_t { kGridZeros = 0, kGridBorder = 1, kGridReflection = 2 };

template <typename A>
LOOM_SDK_HD A reflect_coordinate(A in, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return A(0);
  const A low = static_cast<A>(twice_low) / 2, span = static_cast<A>(twice_high - twice_low) / 2;
  in = std::fabs(in - low);
  const A extra = std::fmod(in, span);
  const int64_t flips = static_cast<int64_t>(std::floor(in / span));
  return flips % 2 == 0 ? extra + low : span - extra + low;
}

// A value and its slope.
template <typename A>
struct WithSlope {
  A value, slope;
};

template <typename A>
struct GridAxis {
  int64_t size;
  int64_t padding_mode;  // GridPadding
  bool align_corners;

  LOOM_SDK_HD A unnormalize(A coord) const {
    return align_corners ? (coord + 1) / 2 * static_cast<A>(size - 1)
                         : ((coord + 1) * static_cast<A>(size) - 1) / 2;
  }
  // d unnormalize / d coord
  LOOM_SDK_HD A unnormalize_slope() const {
    return align_corners ? static_cast<A>(size - 1) / 2 : static_cast<A>(size) / 2;
  }
  // min(size - 1, max(x, 0)) as std::min / std::max order them (NaN becomes size - 1)
  LOOM_SDK_HD A clip(A x) const {
    const A high = static_cast<A>(size - 1);
    const A low_clipped = x < A(0) ? A(0) : x;
    return low_clipped < high ? low_clipped : high;
  }
  LOOM_SDK_HD A pad(A x) const {
    if (padding_mode == kGridBorder) return clip(x);
    if (padding_mode == kGridReflection) {
      x = align_corners ? reflect_coordinate(x, 0, 2 * (size - 1))
                        : reflect_coordinate(x, -1, 2 * size - 1);
      return clip(x);
    }
    return x;
  }
  // pad(x) and its slope d pad / d x: 0 where clipped, -1 where reflected an odd number
  // of times (PyTorch's *_set_grad helpers).
  LOOM_SDK_HD WithSlope<A> pad_with_slope(A x) const {
    if (padding_mode == kGridZeros) return {x, A(1)};
    A slope = 1;
    if (padding_mode == kGridReflection) {
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
struct Quad {
  A v[4];
};

template <typename A>
LOOM_SDK_HD A cubic_near(A x) {
  const A a = A(-0.75);
  return ((a + 2) * x - (a + 3)) * x * x + 1;
}
template <typename A>
LOOM_SDK_HD A cubic_far(A x) {
  const A a = A(-0.75);
  return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
}
template <typename A>
LOOM_SDK_HD Quad<A> cubic_coefficients(A t) {
  return {{cubic_far(t + 1), cubic_near(t), cubic_near(1 - t), cubic_far(2 - t)}};
}
// d cubic_coefficients(t) / dt.
template <typename A>
LOOM_SDK_HD Quad<A> cubic_coefficient_slopes(A t) {
  const A a = A(-0.75);
  auto near = [a](A x) { return (3 * (a + 2) * x - 2 * (a + 3)) * x; };
  auto far = [a](A x) { return (3 * a * x - 10 * a) * x + 8 * a; };
  return {{far(t + 1), near(t), -near(1 - t), -far(2 - t)}};
}

// The value at unnormalised point (gx, gy); `tap(y, x)` reads the pixel at integer-valued
// coordinates, 0 outside the plane (and for NaN coordinates).
template <typename A, typename Tap>
LOOM_SDK_HD A grid_sample_value(const GridAxis<A>& along_x, const GridAxis<A>& along_y, A gx, A gy,
                                int64_t interpolation, const Tap& tap) {
  A value = 0;
  if (interpolation == kGridBicubic) {  // padding per tap
    const A fx = std::floor(gx), fy = std::floor(gy);
    const Quad<A> cx = cubic_coefficients(gx - fx), cy = cubic_coefficients(gy - fy);
    for (int i = 0; i < 4; ++i) {
      A row = 0;
      for (int j = 0; j < 4; ++j) {
        row +=
            cx.v[j] * tap(std::trunc(along_y.pad(fy - 1 + i)), std::trunc(along_x.pad(fx - 1 + j)));
      }
      value += cy.v[i] * row;
    }
    return value;
  }
  const A ix = along_x.pad(gx), iy = along_y.pad(gy);
  if (interpolation == kGridNearest) return tap(std::nearbyint(iy), std::nearbyint(ix));
  if (std::isfinite(ix) && std::isfinite(iy)) {
    const A x0 = std::floor(ix), y0 = std::floor(iy);
    const A wx = ix - x0, wy = iy - y0;
    value = (1 - wy) * ((1 - wx) * tap(y0, x0) + wx * tap(y0, x0 + 1)) +
            wy * ((1 - wx) * tap(y0 + 1, x0) + wx * tap(y0 + 1, x0 + 1));
  }
  return value;
}

// A tap of the backward: the input pixel, its weight in the output and the weight's
// slopes along x and y.
template <typename A>
struct GridTap {
  int64_t row, col;
  A weight, weight_dx, weight_dy;
};

// A point's taps that lie inside the input (those outside read 0 and get no gradient),
// and slope_x / slope_y: d coordinate / d grid value (unnormalisation and padding).
template <typename A>
struct GridTaps {
  GridTap<A> taps[16];
  int count = 0;
  A slope_x = 0, slope_y = 0;
  LOOM_SDK_HD void add(A row, A col, A weight, A weight_dx, A weight_dy, int64_t h, int64_t w) {
    if (!(row >= 0 && row < static_cast<A>(h) && col >= 0 && col < static_cast<A>(w))) return;
    taps[count++] = {static_cast<int64_t>(row), static_cast<int64_t>(col), weight, weight_dx,
                     weight_dy};
  }
};

// The taps of the unnormalised point (gx, gy) in a plane of h x w.
template <typename A>
LOOM_SDK_HD GridTaps<A> grid_sample_taps(const GridAxis<A>& along_x, const GridAxis<A>& along_y,
                                         A gx, A gy, int64_t interpolation, int64_t h, int64_t w) {
  GridTaps<A> taps;
  taps.slope_x = along_x.unnormalize_slope();
  taps.slope_y = along_y.unnormalize_slope();
  if (!(std::isfinite(gx) && std::isfinite(gy))) return taps;
  if (interpolation == kGridBicubic) {
    const A fx = std::floor(gx), fy = std::floor(gy);
    const Quad<A> cx = cubic_coefficients(gx - fx), cy = cubic_coefficients(gy - fy);
    const Quad<A> dx = cubic_coefficient_slopes(gx - fx), dy = cubic_coefficient_slopes(gy - fy);
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < 4; ++j) {
        taps.add(std::trunc(along_y.pad(fy - 1 + i)), std::trunc(along_x.pad(fx - 1 + j)),
                 cy.v[i] * cx.v[j], cy.v[i] * dx.v[j], dy.v[i] * cx.v[j], h, w);
      }
    }
    return taps;
  }
  const WithSlope<A> px = along_x.pad_with_slope(gx), py = along_y.pad_with_slope(gy);
  taps.slope_x *= px.slope;
  taps.slope_y *= py.slope;
  const A ix = px.value, iy = py.value;
  if (interpolation == kGridNearest) {
    taps.add(std::nearbyint(iy), std::nearbyint(ix), A(1), A(0), A(0), h, w);
  } else if (std::isfinite(ix) && std::isfinite(iy)) {
    const A x0 = std::floor(ix), y0 = std::floor(iy);
    const A wx = ix - x0, wy = iy - y0;
    taps.add(y0, x0, (1 - wy) * (1 - wx), -(1 - wy), -(1 - wx), h, w);
    taps.add(y0, x0 + 1, (1 - wy) * wx, 1 - wy, -wx, h, w);
    taps.add(y0 + 1, x0, wy * (1 - wx), -wy, 1 - wx, h, w);
    taps.add(y0 + 1, x0 + 1, wy * wx, wy, wx, h, w);
  }
  return taps;
}

}  // namespace loom::sdk
