// Decompositions of the pooling ops: max_pool2d (the values of max_pool2d_with_indices),
// its gradient max_pool2d_with_indices_backward (scatter_add_ at the indices),
// the 1-D pools (the 2-D ones over a height of 1), nearest / bilinear upsampling
// (index_select of the source rows and columns, mixed with their weights), the 3-D pools
// (two passes of the 2-D ones), and adaptive pooling and avg_pool2d's gradient (matrix
// products along each pooled dim).
#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "decomposition.h"
#include "loom/core/type_promotion.h"

namespace loom::ops {
namespace {

Tensor max_pool2d(const Tensor& self, const IntList& kernel_size, const IntList& stride,
                  const IntList& padding, const IntList& dilation, bool ceil_mode) {
  return std::get<0>(
      loom::max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode));
}

// max_pool2d_with_indices_backward: each plane of self's shape is zero but for grad_output's
// values added at their flat indices into the plane (in output order). grad_output and
// indices are max_pool2d_with_indices's two results' shapes; the pooling arguments are
// PyTorch's signature and not needed otherwise.
Tensor max_pool2d_with_indices_backward(const Tensor& grad_output, const Tensor& self,
                                        const IntList&, const IntList&, const IntList&,
                                        const IntList&, bool, const Tensor& indices) {
  const char* op = "loom::max_pool2d_with_indices_backward";
  if (self.dim() != 3 && self.dim() != 4) {
    fail(op, "expected a 3-D [C, H, W] or 4-D [N, C, H, W] self, found ", self.dim(), " dims");
  }
  if (indices.dtype() != ScalarType::Int64) {
    fail(op, "expected int64 indices, found ", scalar_type_name(indices.dtype()));
  }
  if (grad_output.dtype() != self.dtype()) {
    fail(op, "expected grad_output of self's dtype ", scalar_type_name(self.dtype()), ", found ",
         scalar_type_name(grad_output.dtype()));
  }
  const std::vector<int64_t> planes(self.sizes().begin(), self.sizes().end() - 2);
  const bool fits = grad_output.dim() == self.dim() &&
                    std::ranges::equal(grad_output.sizes().first(planes.size()), planes) &&
                    std::ranges::equal(grad_output.sizes(), indices.sizes());
  if (!fits) {
    fail(op, "expected grad_output and indices of one shape with self's leading dims, found ",
         "grad_output ", shape_to_string(grad_output.sizes()), ", indices ",
         shape_to_string(indices.sizes()), " and self ", shape_to_string(self.sizes()));
  }
  std::vector<int64_t> flat_planes = planes, flat = planes;
  flat_planes.push_back(self.size(-2) * self.size(-1));
  flat.push_back(-1);
  Tensor grad_input = zeros_of(flat_planes, self.dtype(), self.device());
  grad_input.scatter_add_(static_cast<int64_t>(planes.size()), indices.reshape(flat),
                          grad_output.reshape(flat));
  return grad_input.reshape(self.sizes());
}

// A 1-D pool's argument as the 2-D pool's [1, value]; an empty list stays empty.
std::vector<int64_t> with_unit_height(const IntList& v, int64_t unit) {
  if (v.size() == 0) return {};
  return {unit, v.data()[0]};
}

void check_pool1d_input(const char* op, const Tensor& self) {
  if (self.dim() != 2 && self.dim() != 3) {
    fail(op, "expected a 2-D [C, L] or 3-D [N, C, L] input, found ", self.dim(), " dims");
  }
}

Tensor max_pool1d(const Tensor& self, const IntList& kernel_size, const IntList& stride,
                  const IntList& padding, const IntList& dilation, bool ceil_mode) {
  check_pool1d_input("loom::max_pool1d", self);
  return loom::max_pool2d(self.unsqueeze(-2), with_unit_height(kernel_size, 1),
                          with_unit_height(stride, 1), with_unit_height(padding, 0),
                          with_unit_height(dilation, 1), ceil_mode)
      .squeeze(-2);
}

Tensor avg_pool1d(const Tensor& self, const IntList& kernel_size, const IntList& stride,
                  const IntList& padding, bool ceil_mode, bool count_include_pad) {
  check_pool1d_input("loom::avg_pool1d", self);
  return loom::avg_pool2d(self.unsqueeze(-2), with_unit_height(kernel_size, 1),
                          with_unit_height(stride, 1), with_unit_height(padding, 0), ceil_mode,
                          count_include_pad, std::nullopt)
      .squeeze(-2);
}

struct UpsampleSizes {
  int64_t in_h, in_w, out_h, out_w;
};

UpsampleSizes upsample_sizes(const char* op, const Tensor& self, const IntList& output_size) {
  if (self.dim() != 4) fail(op, "expected a 4-D [N, C, H, W] input, found ", self.dim(), " dims");
  if (output_size.size() != 2 || output_size.data()[0] <= 0 || output_size.data()[1] <= 0) {
    fail(op, "expected a positive output size [H, W], found ",
         shape_to_string(std::span<const int64_t>(output_size.data(), output_size.size())));
  }
  if (self.numel() == 0 && (self.sizes()[2] == 0 || self.sizes()[3] == 0)) {
    fail(op, "expected a non-empty input height and width, found ", shape_to_string(self.sizes()));
  }
  return {self.sizes()[2], self.sizes()[3], output_size.data()[0], output_size.data()[1]};
}

// Source-per-destination scale as PyTorch computes it (in float): 1 / scale when given,
// else input / output.
float source_scale(int64_t in, int64_t out, const std::optional<double>& scale) {
  if (scale && *scale > 0) return static_cast<float>(1.0 / *scale);
  return static_cast<float>(in) / static_cast<float>(out);
}

// Nearest: source index floor(dst * scale), in float arithmetic, clamped to the input.
std::vector<int64_t> nearest_indices(int64_t in, int64_t out, const std::optional<double>& scale) {
  std::vector<int64_t> idx(static_cast<size_t>(out));
  const float s = source_scale(in, out, scale);
  for (int64_t o = 0; o < out; ++o) {
    const auto src = static_cast<int64_t>(std::floor(static_cast<float>(o) * s));
    idx[static_cast<size_t>(o)] = std::min(src, in - 1);
  }
  return idx;
}

Tensor upsample_nearest2d(const Tensor& self, const IntList& output_size,
                          std::optional<double> scales_h, std::optional<double> scales_w) {
  const UpsampleSizes s = upsample_sizes("loom::upsample_nearest2d", self, output_size);
  Tensor rows = loom::index_select(
      self, 2, int64_tensor(nearest_indices(s.in_h, s.out_h, scales_h), self.device()));
  return loom::index_select(
      rows, 3, int64_tensor(nearest_indices(s.in_w, s.out_w, scales_w), self.device()));
}

// Bilinear along one dim: each output takes (1 - w) of source i0 and w of source i1.
struct LinearTaps {
  std::vector<int64_t> i0, i1;
  std::vector<double> w;
};

LinearTaps linear_taps(int64_t in, int64_t out, bool align_corners,
                       const std::optional<double>& scale) {
  LinearTaps taps;
  float s;
  if (align_corners) {
    s = out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.0f;
  } else {
    s = source_scale(in, out, scale);
  }
  for (int64_t o = 0; o < out; ++o) {
    float src = align_corners ? s * static_cast<float>(o)
                              : std::max(s * (static_cast<float>(o) + 0.5f) - 0.5f, 0.0f);
    const auto i0 = std::min(static_cast<int64_t>(src), in - 1);
    const int64_t i1 = i0 + (i0 < in - 1 ? 1 : 0);
    taps.i0.push_back(i0);
    taps.i1.push_back(i1);
    taps.w.push_back(static_cast<double>(src - static_cast<float>(i0)));
  }
  return taps;
}

Tensor interpolate_dim(const Tensor& x, int64_t dim, const LinearTaps& taps) {
  Tensor weight = empty(std::vector<int64_t>{static_cast<int64_t>(taps.w.size())},
                        ScalarType::Float64, Device{kCPU, -1});
  std::copy(taps.w.begin(), taps.w.end(), weight.data<double>());
  weight = loom::to(weight, x.device(), x.dtype());
  std::vector<int64_t> shape(static_cast<size_t>(x.dim()), 1);
  shape[static_cast<size_t>(dim)] = static_cast<int64_t>(taps.w.size());
  weight = weight.view(shape);
  Tensor a = loom::index_select(x, dim, int64_tensor(taps.i0, x.device()));
  Tensor b = loom::index_select(x, dim, int64_tensor(taps.i1, x.device()));
  return loom::add(a, loom::mul(loom::sub(b, a), weight));
}

Tensor upsample_bilinear2d(const Tensor& self, const IntList& output_size, bool align_corners,
                           std::optional<double> scales_h, std::optional<double> scales_w) {
  constexpr const char* op = "loom::upsample_bilinear2d";
  const UpsampleSizes s = upsample_sizes(op, self, output_size);
  if (!is_floating_point(self.dtype())) {
    fail(op, "expected a floating point input, found ", scalar_type_name(self.dtype()));
  }
  Tensor rows = interpolate_dim(self, 2, linear_taps(s.in_h, s.out_h, align_corners, scales_h));
  return interpolate_dim(rows, 3, linear_taps(s.in_w, s.out_w, align_corners, scales_w));
}

// Core ATen IR's adaptive average pools: the 2-D one under its underscore name, and the
// 1-D one over a height-1 plane.
Tensor adaptive_avg_pool2d_core(const Tensor& self, const IntList& output_size) {
  return loom::adaptive_avg_pool2d(self, output_size);
}

Tensor adaptive_avg_pool1d(const Tensor& self, const IntList& output_size) {
  check_pool1d_input("loom::adaptive_avg_pool1d", self);
  if (output_size.size() != 1) {
    fail("loom::adaptive_avg_pool1d", "expected one output size, found ", output_size.size());
  }
  return loom::adaptive_avg_pool2d(self.unsqueeze(-2), {1, output_size.span()[0]}).squeeze(-2);
}

// The .vec upsamplings: an output size, or scale factors (one per spatial dim) whose
// output size is floor(input size * scale), as PyTorch computes it; the scales also
// reach the kernel, which maps output to input positions with them.
struct VecSize {
  std::vector<int64_t> size;
  std::optional<double> scale_h, scale_w;
};

VecSize vec_size(const char* op, const Tensor& input, const OptionalIntList& output_size,
                 const std::optional<std::span<const double>>& scale_factors) {
  if (input.dim() != 4)
    fail(op, "expected a 4-D input (N, C, H, W), found ", shape_to_string(input.sizes()));
  if (output_size.has_value() == scale_factors.has_value()) {
    fail(op, "expected exactly one of output_size and scale_factors, found ",
         output_size ? "both" : "neither");
  }
  VecSize v;
  if (output_size) {
    v.size.assign(output_size->span().begin(), output_size->span().end());
    if (v.size.size() != 2) fail(op, "expected 2 output sizes, found ", v.size.size());
    return v;
  }
  if (scale_factors->size() != 2)
    fail(op, "expected 2 scale factors, found ", scale_factors->size());
  for (size_t d = 0; d < 2; ++d) {
    double scale = (*scale_factors)[d];
    if (!(scale > 0)) fail(op, "expected positive scale factors, found ", scale);
    v.size.push_back(
        static_cast<int64_t>(std::floor(static_cast<double>(input.sizes()[2 + d]) * scale)));
  }
  v.scale_h = (*scale_factors)[0];
  v.scale_w = (*scale_factors)[1];
  return v;
}

Tensor upsample_nearest2d_vec(const Tensor& input, const OptionalIntList& output_size,
                              std::optional<std::span<const double>> scale_factors) {
  VecSize v = vec_size("loom::upsample_nearest2d.vec", input, output_size, scale_factors);
  return loom::upsample_nearest2d(input, v.size, v.scale_h, v.scale_w);
}

Tensor upsample_bilinear2d_vec(const Tensor& input, const OptionalIntList& output_size,
                               bool align_corners,
                               std::optional<std::span<const double>> scale_factors) {
  VecSize v = vec_size("loom::upsample_bilinear2d.vec", input, output_size, scale_factors);
  return loom::upsample_bilinear2d(input, v.size, align_corners, v.scale_h, v.scale_w);
}

// Note [3-D pools from 2-D ones]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A 3-D pool over boxes is two passes of the 2-D pools: over (H, W) with the depth as
// channels, then over depth with (H, W) flattened as channels and a 1 x kD window. An
// average is separable even at the borders: a box's count of non-padding elements (or
// its extent clipped by ceil_mode) is the product of the counts per dim; a divisor
// override sums in both passes and divides once. A maximum is separable too, and its
// index is d * H * W + the (h, w) index the first pass chose in plane d: the second pass
// picks the first d holding the maximum, the first pass the first (h, w) within it, as
// PyTorch's scan in (d, h, w) order does.
struct Pool3d {
  std::array<int64_t, 3> kernel, stride, padding, dilation;
};

std::array<int64_t, 3> triple(const char* op, const IntList& v, const char* name,
                              const std::array<int64_t, 3>& fallback) {
  std::span<const int64_t> s = v.span();
  if (s.empty()) return fallback;
  if (s.size() == 1) return {s[0], s[0], s[0]};
  if (s.size() != 3) fail(op, "expected 1 or 3 values for ", name, ", found ", s.size());
  return {s[0], s[1], s[2]};
}

// self as [N * C, D, H, W] (a 4-D unbatched input gets N = 1), and its N and C.
struct Volume {
  Tensor planes;
  int64_t n, c;
  bool batched;
};

Volume volume_of(const char* op, const Tensor& self) {
  if (self.dim() != 4 && self.dim() != 5) {
    fail(op, "expected a 4-D (unbatched) or 5-D (batched) input, found ",
         shape_to_string(self.sizes()));
  }
  const bool batched = self.dim() == 5;
  Tensor x = batched ? self : self.unsqueeze(0);
  return {loom::reshape(x, {x.size(0) * x.size(1), x.size(2), x.size(3), x.size(4)}), x.size(0),
          x.size(1), batched};
}

// [N * C, OH * OW, 1, OD] from the depth pass back to [N, C, OD, OH, OW] (or unbatched).
Tensor from_depth_pass(const Tensor& t, const Volume& v, int64_t oh, int64_t ow) {
  Tensor out = loom::permute(loom::reshape(t, {v.n, v.c, oh, ow, t.size(3)}), {0, 1, 4, 2, 3});
  out = loom::contiguous(out);
  return v.batched ? out : out.squeeze(0);
}

// [N * C, D, OH, OW] after the plane pass, as the depth pass's [N * C, OH * OW, 1, D].
Tensor to_depth_pass(const Tensor& t) {
  return loom::reshape(loom::permute(t, {0, 2, 3, 1}),
                       {t.size(0), t.size(2) * t.size(3), 1, t.size(1)});
}

Tensor avg_pool3d(const Tensor& self, const IntList& kernel_size, const IntList& stride,
                  const IntList& padding, bool ceil_mode, bool count_include_pad,
                  std::optional<int64_t> divisor_override) {
  const char* op = "loom::avg_pool3d";
  const auto k = triple(op, kernel_size, "kernel_size", {0, 0, 0});
  if (kernel_size.span().empty()) fail(op, "expected a kernel_size, found none");
  const auto s = triple(op, stride, "stride", k);
  const auto p = triple(op, padding, "padding", {0, 0, 0});
  if (divisor_override && *divisor_override == 0) fail(op, "divisor_override must not be zero");
  Volume v = volume_of(op, self);
  std::optional<int64_t> sum_only;
  if (divisor_override) sum_only = 1;
  Tensor planes = loom::avg_pool2d(v.planes, {k[1], k[2]}, {s[1], s[2]}, {p[1], p[2]}, ceil_mode,
                                   count_include_pad, sum_only);
  Tensor depth = loom::avg_pool2d(to_depth_pass(planes), {1, k[0]}, {1, s[0]}, {0, p[0]}, ceil_mode,
                                  count_include_pad, sum_only);
  Tensor out = from_depth_pass(depth, v, planes.size(2), planes.size(3));
  if (divisor_override) out = loom::div(out, static_cast<double>(*divisor_override));
  return out;
}

std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& self, const IntList& kernel_size,
                                                   const IntList& stride, const IntList& padding,
                                                   const IntList& dilation, bool ceil_mode) {
  const char* op = "loom::max_pool3d_with_indices";
  const auto k = triple(op, kernel_size, "kernel_size", {0, 0, 0});
  if (kernel_size.span().empty()) fail(op, "expected a kernel_size, found none");
  const auto s = triple(op, stride, "stride", k);
  const auto p = triple(op, padding, "padding", {0, 0, 0});
  const auto d = triple(op, dilation, "dilation", {1, 1, 1});
  Volume v = volume_of(op, self);
  const int64_t plane = v.planes.size(2) * v.planes.size(3);
  auto [plane_max, plane_index] = loom::max_pool2d_with_indices(
      v.planes, {k[1], k[2]}, {s[1], s[2]}, {p[1], p[2]}, {d[1], d[2]}, ceil_mode);
  auto [depth_max, depth_index] = loom::max_pool2d_with_indices(
      to_depth_pass(plane_max), {1, k[0]}, {1, s[0]}, {0, p[0]}, {1, d[0]}, ceil_mode);
  Tensor within_plane = loom::gather(to_depth_pass(plane_index), 3, depth_index);
  Tensor index = loom::add(loom::mul(depth_index, plane), within_plane);
  const int64_t oh = plane_max.size(2), ow = plane_max.size(3);
  return {from_depth_pass(depth_max, v, oh, ow), from_depth_pass(index, v, oh, ow)};
}

// Note [Adaptive pooling as products]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Adaptive average pooling is linear and separable: along a dim pooled from `in` to `out`,
// output i averages inputs [floor(i in / out), ceil((i + 1) in / out)). Its matrix A
// [out, in] (1 / the window's length inside the window) applied along each pooled dim is
// the pool, and A^T along each dim its gradient. The matrices are built on the host.
Tensor adaptive_matrix(int64_t in, int64_t out, ScalarType dtype, Device device) {
  return host_matrix(
      out, in,
      [&](double* p) {
        for (int64_t i = 0; i < out; ++i) {
          const int64_t start = (i * in) / out, end = ((i + 1) * in + out - 1) / out;
          for (int64_t k = start; k < end; ++k)
            p[i * in + k] = 1.0 / static_cast<double>(end - start);
        }
      },
      dtype, device);
}

void check_adaptive(const char* op, const Tensor& self, int64_t spatial,
                    const IntList& output_size) {
  if (self.dim() != spatial + 1 && self.dim() != spatial + 2) {
    fail(op, "expected a ", spatial + 1, "-D or ", spatial + 2, "-D input, found ",
         shape_to_string(self.sizes()));
  }
  if (!is_floating_point(self.dtype())) {
    fail(op, "expected a floating-point input, found ", scalar_type_name(self.dtype()));
  }
  if (static_cast<int64_t>(output_size.size()) != spatial) {
    fail(op, "expected ", spatial, " output sizes, found ", output_size.size());
  }
  for (int64_t o : output_size.span()) {
    if (o <= 0)
      fail(op, "expected positive output sizes, found ", shape_to_string(output_size.span()));
  }
}

Tensor adaptive_avg_pool3d(const Tensor& self, const IntList& output_size) {
  check_adaptive("loom::_adaptive_avg_pool3d", self, 3, output_size);
  Tensor out = self;
  for (int64_t i = 0; i < 3; ++i) {
    const int64_t dim = self.dim() - 3 + i;
    out = apply_along(
        out, dim,
        adaptive_matrix(self.size(dim), output_size.span()[i], self.dtype(), self.device()));
  }
  return loom::contiguous(out);
}

// A 2-D pool's list argument along dim i (0 height, 1 width): one value serves both, an
// empty list means `fallback` (stride=[] is the kernel size).
int64_t pair_value(const IntList& v, size_t i, int64_t fallback) {
  std::span<const int64_t> s = v.span();
  if (s.empty()) return fallback;
  return s.size() == 1 ? s[0] : s[i];
}

// avg_pool2d's matrix along one dim (Note [Separable pooling] in the autograd formulas):
// row i averages the window of output i, [i * stride - pad, + kernel) clipped to the
// input, dividing by `divisor` when given, else by the window's length (counting the
// padding when count_include_pad; a ceil_mode window past the padding counts to its end).
Tensor avg_pool_matrix(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t pad,
                       bool count_include_pad, std::optional<double> divisor, ScalarType dtype,
                       Device device) {
  return host_matrix(
      out, in,
      [&](double* p) {
        for (int64_t i = 0; i < out; ++i) {
          int64_t start = i * stride - pad;
          int64_t end = std::min(start + kernel, in + pad);
          const int64_t padded = end - start;
          start = std::max<int64_t>(start, 0);
          end = std::min(end, in);
          const double d =
              divisor ? *divisor : static_cast<double>(count_include_pad ? padded : end - start);
          for (int64_t k = start; k < end; ++k) p[i * in + k] = 1.0 / d;
        }
      },
      dtype, device);
}

// avg_pool2d's gradient for self: A_h^T grad A_w. The pooling arguments are checked by
// pooling a meta tensor of self's shape, which also gives the shape grad_output must have.
Tensor avg_pool2d_backward(const Tensor& grad_output, const Tensor& self,
                           const IntList& kernel_size, const IntList& stride,
                           const IntList& padding, bool ceil_mode, bool count_include_pad,
                           std::optional<int64_t> divisor_override) {
  const char* op = "loom::avg_pool2d_backward";
  const Tensor pooled =
      loom::avg_pool2d(empty(self.sizes(), self.dtype(), Device{kMeta, -1}), kernel_size, stride,
                       padding, ceil_mode, count_include_pad, divisor_override);
  if (!same_shape(grad_output.sizes(), pooled.sizes())) {
    fail(op, "expected grad_output of avg_pool2d's output shape ", shape_to_string(pooled.sizes()),
         ", found ", shape_to_string(grad_output.sizes()));
  }
  if (grad_output.dtype() != self.dtype()) {
    fail(op, "expected grad_output of self's dtype ", scalar_type_name(self.dtype()), ", found ",
         scalar_type_name(grad_output.dtype()));
  }
  std::optional<double> divisor;
  if (divisor_override) divisor = static_cast<double>(*divisor_override);
  Tensor grad = grad_output;
  for (size_t i = 0; i < 2; ++i) {
    const int64_t dim = self.dim() - 2 + static_cast<int64_t>(i);
    const int64_t k = pair_value(kernel_size, i, 1);
    Tensor a = avg_pool_matrix(self.size(dim), grad_output.size(dim), k, pair_value(stride, i, k),
                               pair_value(padding, i, 0), count_include_pad,
                               i == 0 ? divisor : (divisor ? std::optional<double>(1.0) : divisor),
                               grad_output.dtype(), grad_output.device());
    grad = apply_along(grad, dim, a.t());
  }
  return loom::contiguous(grad);
}

Tensor adaptive_avg_pool2d_backward(const Tensor& grad_output, const Tensor& self) {
  const char* op = "loom::_adaptive_avg_pool2d_backward";
  if (grad_output.dim() != self.dim() || (self.dim() != 3 && self.dim() != 4)) {
    fail(op, "expected a 3-D or 4-D self and a grad_output of its rank, found ",
         shape_to_string(self.sizes()), " and ", shape_to_string(grad_output.sizes()));
  }
  Tensor grad = grad_output;
  for (int64_t i = 0; i < 2; ++i) {
    const int64_t dim = self.dim() - 2 + i;
    Tensor a = adaptive_matrix(self.size(dim), grad_output.size(dim), grad_output.dtype(),
                               grad_output.device());
    grad = apply_along(grad, dim, a.t());
  }
  return loom::contiguous(grad);
}

constexpr DecompositionEntry kDecompositions[] = {
    {"loom::max_pool2d", decomposition<&max_pool2d>()},
    {"loom::max_pool2d_with_indices_backward", decomposition<&max_pool2d_with_indices_backward>()},
    {"loom::max_pool1d", decomposition<&max_pool1d>()},
    {"loom::avg_pool1d", decomposition<&avg_pool1d>()},
    {"loom::upsample_nearest2d", decomposition<&upsample_nearest2d>()},
    {"loom::upsample_bilinear2d", decomposition<&upsample_bilinear2d>()},
    {"loom::_adaptive_avg_pool2d", decomposition<&adaptive_avg_pool2d_core>()},
    {"loom::adaptive_avg_pool1d", decomposition<&adaptive_avg_pool1d>()},
    {"loom::upsample_nearest2d.vec", decomposition<&upsample_nearest2d_vec>()},
    {"loom::upsample_bilinear2d.vec", decomposition<&upsample_bilinear2d_vec>()},
    {"loom::avg_pool3d", decomposition<&avg_pool3d>()},
    {"loom::max_pool3d_with_indices", decomposition<&max_pool3d_with_indices>()},
    {"loom::_adaptive_avg_pool3d", decomposition<&adaptive_avg_pool3d>()},
    {"loom::_adaptive_avg_pool2d_backward", decomposition<&adaptive_avg_pool2d_backward>()},
    {"loom::avg_pool2d_backward", decomposition<&avg_pool2d_backward>()},
};

}  // namespace

std::span<const DecompositionEntry> pool_decompositions() {
  return kDecompositions;
}

}  // namespace loom::ops
