// Shape rules of 2-D pooling: max_pool2d_with_indices, avg_pool2d, adaptive_avg_pool2d,
// adaptive_max_pool2d; and of grid_sampler_2d and its backward.
#include <algorithm>

#include "loom/core/type_promotion.h"
#include "shape_rule.h"

namespace loom::ops {
namespace {

void require_pool_input(const ShapeArgs& args, const TensorImpl& self) {
  if (self.dim() != 3 && self.dim() != 4) {
    args.fail("expected a 3-D (unbatched) or 4-D (batched) input, found ",
              shape_to_string(self.sizes()));
  }
  for (int64_t d = self.dim() - 3; d < self.dim(); ++d) {
    if (self.sizes()[d] == 0) {
      args.fail("expected non-zero sizes in the channel and spatial dims, found ",
                shape_to_string(self.sizes()));
    }
  }
  require_floating(args, self, "self");
}

// The pooled size along one dim (PyTorch's rule: with ceil_mode the last window must start
// inside the input or the left padding).
int64_t pool_out_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dil,
                      bool ceil_mode) {
  int64_t span = in + 2 * pad - dil * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  int64_t out = (span >= 0 ? span / stride : -((-span + stride - 1) / stride)) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

DimVector pooled_shape(const ShapeArgs& args, const TensorImpl& self, Pair kernel, Pair stride,
                       Pair pad, Pair dil, bool ceil_mode) {
  if (pad.h > kernel.h / 2 || pad.w > kernel.w / 2) {
    args.fail("expected padding of at most half the kernel size [", kernel.h, ", ", kernel.w,
              "], found [", pad.h, ", ", pad.w, "]");
  }
  int64_t h = self.sizes()[self.dim() - 2];
  int64_t w = self.sizes()[self.dim() - 1];
  int64_t oh = pool_out_size(h, kernel.h, stride.h, pad.h, dil.h, ceil_mode);
  int64_t ow = pool_out_size(w, kernel.w, stride.w, pad.w, dil.w, ceil_mode);
  if (oh <= 0 || ow <= 0) {
    args.fail("expected an output size of at least 1, found [", oh, ", ", ow, "] for input ",
              shape_to_string(self.sizes()));
  }
  DimVector shape(self.sizes().begin(), self.sizes().end() - 2);
  shape.push_back(oh);
  shape.push_back(ow);
  return shape;
}

// stride=[] means the kernel size.
Pair pool_stride(const ShapeArgs& args, size_t i, Pair kernel) {
  if (args.ints(i).empty()) return kernel;
  return positive_pair(args, i, "stride");
}

void max_pool2d_with_indices(const ShapeArgs& args, OutputMetas& out) {
  const TensorImpl& self = args.tensor(0);
  require_pool_input(args, self);
  Pair kernel = positive_pair(args, 1, "kernel_size");
  DimVector shape = pooled_shape(args, self, kernel, pool_stride(args, 2, kernel),
                                 nonnegative_pair(args, 3, "padding"),
                                 positive_pair(args, 4, "dilation"), args.boolean(5));
  out.push_back(output(shape, self.dtype(), self.device()));
  out.push_back(output(std::move(shape), ScalarType::Int64, self.device()));
  follow_channels_last(self, out);  // values and indices
}

void avg_pool2d(const ShapeArgs& args, OutputMetas& out) {
  const TensorImpl& self = args.tensor(0);
  require_pool_input(args, self);
  Pair kernel = positive_pair(args, 1, "kernel_size");
  std::optional<int64_t> divisor = args.optional_integer(6);
  if (divisor && *divisor == 0) args.fail("expected a non-zero divisor_override, found 0");
  out.push_back(
      output(pooled_shape(args, self, kernel, pool_stride(args, 2, kernel),
                          nonnegative_pair(args, 3, "padding"), Pair{1, 1}, args.boolean(4)),
             self.dtype(), self.device()));
  follow_channels_last(self, out);
}

// self's leading dims and the output_size.
DimVector adaptive_shape(const ShapeArgs& args, const TensorImpl& self) {
  require_pool_input(args, self);
  Pair size = nonnegative_pair(args, 1, "output_size");
  DimVector shape(self.sizes().begin(), self.sizes().end() - 2);
  shape.push_back(size.h);
  shape.push_back(size.w);
  return shape;
}

void adaptive_avg_pool2d(const ShapeArgs& args, OutputMetas& out) {
  const TensorImpl& self = args.tensor(0);
  out.push_back(output(adaptive_shape(args, self), self.dtype(), self.device()));
  follow_channels_last(self, out);
}

// The maxima and their positions in each input plane (row-major over H x W).
void adaptive_max_pool2d(const ShapeArgs& args, OutputMetas& out) {
  const TensorImpl& self = args.tensor(0);
  DimVector shape = adaptive_shape(args, self);
  out.push_back(output(shape, self.dtype(), self.device()));
  out.push_back(output(std::move(shape), ScalarType::Int64, self.device()));
}

// The checks grid_sampler_2d and its backward share: input [N, C, H, W] and grid
// [N, H_out, W_out, 2] of one floating dtype, and the two modes in range.
void check_grid_sampler(const ShapeArgs& args, const TensorImpl& input, const TensorImpl& grid,
                        int64_t interpolation, int64_t padding) {
  if (input.dim() != 4 || grid.dim() != 4 || grid.sizes()[3] != 2) {
    args.fail("expected a 4-D input [N, C, H, W] and a 4-D grid [N, H_out, W_out, 2], found ",
              shape_to_string(input.sizes()), " and ", shape_to_string(grid.sizes()));
  }
  if (input.sizes()[0] != grid.sizes()[0]) {
    args.fail("expected grid and input to have same batch size, but got input with sizes ",
              shape_to_string(input.sizes()), " and grid with sizes ",
              shape_to_string(grid.sizes()));
  }
  if (input.sizes()[2] == 0 || input.sizes()[3] == 0) {
    args.fail("expected input to have non-empty spatial dimensions, but input has sizes ",
              shape_to_string(input.sizes()));
  }
  require_floating(args, input, "input");
  if (grid.dtype() != input.dtype()) {
    args.fail("expected input and grid to have the same dtype, but input has ",
              scalar_type_name(input.dtype()), " and grid has ", scalar_type_name(grid.dtype()));
  }
  if (interpolation < 0 || interpolation > 2) {
    args.fail("expected interpolation_mode 0 (bilinear), 1 (nearest) or 2 (bicubic), found ",
              interpolation);
  }
  if (padding < 0 || padding > 2) {
    args.fail("expected padding_mode 0 (zeros), 1 (border) or 2 (reflection), found ", padding);
  }
}

// grid_sampler_2d: input [N, C, H, W] sampled at grid [N, Ho, Wo, 2] gives [N, C, Ho, Wo].
void grid_sampler_2d(const ShapeArgs& args, OutputMetas& out) {
  const TensorImpl& input = args.tensor(0);
  const TensorImpl& grid = args.tensor(1);
  check_grid_sampler(args, input, grid, args.integer(2), args.integer(3));
  out.push_back(
      output(DimVector{input.sizes()[0], input.sizes()[1], grid.sizes()[1], grid.sizes()[2]},
             input.dtype(), input.device()));
}

// grid_sampler_2d_backward: grad_output [N, C, Ho, Wo] gives the gradients of input and
// grid, in their shapes.
void grid_sampler_2d_backward(const ShapeArgs& args, OutputMetas& out) {
  const TensorImpl& grad = args.tensor(0);
  const TensorImpl& input = args.tensor(1);
  const TensorImpl& grid = args.tensor(2);
  check_grid_sampler(args, input, grid, args.integer(3), args.integer(4));
  const DimVector expected{input.sizes()[0], input.sizes()[1], grid.sizes()[1], grid.sizes()[2]};
  if (!std::ranges::equal(grad.sizes(), expected) || grad.dtype() != input.dtype()) {
    args.fail("expected grad_output of shape ", shape_to_string(expected), " and dtype ",
              scalar_type_name(input.dtype()), ", found ", shape_to_string(grad.sizes()), " and ",
              scalar_type_name(grad.dtype()));
  }
  out.push_back(
      output(DimVector(input.sizes().begin(), input.sizes().end()), input.dtype(), input.device()));
  out.push_back(
      output(DimVector(grid.sizes().begin(), grid.sizes().end()), grid.dtype(), grid.device()));
}

constexpr ShapeRuleEntry kRules[] = {
    {"loom::max_pool2d_with_indices", &max_pool2d_with_indices},
    {"loom::avg_pool2d", &avg_pool2d},
    {"loom::adaptive_avg_pool2d", &adaptive_avg_pool2d},
    {"loom::adaptive_max_pool2d", &adaptive_max_pool2d},
    {"loom::grid_sampler_2d", &grid_sampler_2d},
    {"loom::grid_sampler_2d_backward", &grid_sampler_2d_backward},
};

}  // namespace

std::span<const ShapeRuleEntry> pool_shape_rules() {
  return kRules;
}

}  // namespace loom::ops
