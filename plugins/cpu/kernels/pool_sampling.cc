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
#include "loom/sdk/reference/grid_sample.hpp"
#include "pool_planes.h"

namespace loom::cpu {
namespace {

// grid_sampler_2d and its backward: the SDK's arithmetic (Note [Grid sampling] in
// loom/sdk/reference/grid_sample.hpp), which the GPU plugins share.
using sdk::GridAxis;
using sdk::GridTap;
using sdk::GridTaps;

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
          const A value = sdk::grid_sample_value(along_x, along_y, gx, gy, interpolation_mode, tap);
          dst[y * ow + x] = static_cast<T>(value);
        }
      }
    });
  });
  return out;
}

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
            // This point's taps, the same for every channel.
            const GridTaps<A> taps =
                sdk::grid_sample_taps(along_x, along_y, gx, gy, interpolation_mode, p.h, p.w);
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
            out[0] = static_cast<T>(grad_x * taps.slope_x);
            out[ggs[3]] = static_cast<T>(grad_y * taps.slope_y);
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
