// Decompositions of im2col and col2im (torch.nn.functional.unfold and fold): the sliding
// blocks of a padded image as columns, and the sum of columns back into an image.
#include <array>

#include "decomposition.h"
#include "loom/core/type_promotion.h"

namespace loom::ops {
namespace {

// The block geometry both ops share: kernel, dilation, padding, stride (two values each,
// checked as PyTorch checks them) and the number of blocks along the height and width of
// a `height` x `width` image.
struct BlockGeometry {
  std::array<int64_t, 2> kernel, dilation, padding, stride, blocks;
};

BlockGeometry block_geometry(const char* op, const IntList& kernel_size, const IntList& dilation,
                             const IntList& padding, const IntList& stride, int64_t height,
                             int64_t width) {
  auto two = [&](const IntList& v, const char* name) {
    if (v.size() != 2) fail(op, "expected two values for ", name, ", found ", v.size());
    return std::array<int64_t, 2>{v.span()[0], v.span()[1]};
  };
  BlockGeometry g{two(kernel_size, "kernel_size"),
                  two(dilation, "dilation"),
                  two(padding, "padding"),
                  two(stride, "stride"),
                  {}};
  if (g.kernel[0] <= 0 || g.kernel[1] <= 0) {
    fail(op, "kernel size should be greater than zero, but got kernel_height: ", g.kernel[0],
         " kernel_width: ", g.kernel[1]);
  }
  if (g.dilation[0] <= 0 || g.dilation[1] <= 0) {
    fail(op, "dilation should be greater than zero, but got dilation_height: ", g.dilation[0],
         " dilation_width: ", g.dilation[1]);
  }
  if (g.padding[0] < 0 || g.padding[1] < 0) {
    fail(op, "padding should be non-negative, but got pad_height: ", g.padding[0],
         " pad_width: ", g.padding[1]);
  }
  if (g.stride[0] <= 0 || g.stride[1] <= 0) {
    fail(op, "stride should be greater than zero, but got stride_height: ", g.stride[0],
         " stride_width: ", g.stride[1]);
  }
  const std::array<int64_t, 2> size{height, width};
  for (int i = 0; i < 2; ++i) {
    g.blocks[i] =
        (size[i] + 2 * g.padding[i] - (g.dilation[i] * (g.kernel[i] - 1) + 1)) / g.stride[i] + 1;
  }
  if (g.blocks[0] < 1 || g.blocks[1] < 1 ||
      height + 2 * g.padding[0] < g.dilation[0] * (g.kernel[0] - 1) + 1 ||
      width + 2 * g.padding[1] < g.dilation[1] * (g.kernel[1] - 1) + 1) {
    fail(op, "Given input with spatial size (", height, ", ", width,
         "), kernel_size=", shape_to_string(g.kernel), ", dilation=", shape_to_string(g.dilation),
         ", padding=", shape_to_string(g.padding),
         ", calculated shape of the array of sliding blocks as (", g.blocks[0], ", ", g.blocks[1],
         "), but its components must be at least one.");
  }
  return g;
}

// The [N, C, blocks_h, blocks_w] view of the padded image that kernel position (i, j) sees.
Tensor kernel_tap(const Tensor& padded, const BlockGeometry& g, int64_t i, int64_t j) {
  const int64_t top = i * g.dilation[0], left = j * g.dilation[1];
  Tensor rows = loom::slice(padded, 2, top, top + g.stride[0] * (g.blocks[0] - 1) + 1, g.stride[0]);
  return loom::slice(rows, 3, left, left + g.stride[1] * (g.blocks[1] - 1) + 1, g.stride[1]);
}

// Note [im2col and col2im]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// im2col turns a [N, C, H, W] image (or [C, H, W]) into [N, C * kh * kw, L] columns: column
// l holds block l (row-major over the blocks_h x blocks_w grid) of the zero-padded image,
// its rows ordered by channel, then kernel row, then kernel column, as in PyTorch. Each of
// the kh * kw kernel positions is one strided view of the padded image (every block's
// element at that position), copied into its rows of the result. col2im is the adjoint:
// each kernel position's rows are added into the same strided view of a zero image, and
// the padding is cropped. Overlapping blocks add up in fold, as in PyTorch.
Tensor im2col(const Tensor& self, const IntList& kernel_size, const IntList& dilation,
              const IntList& padding, const IntList& stride) {
  const char* op = "loom::im2col";
  if ((self.dim() != 3 && self.dim() != 4) || self.numel() == 0) {
    fail(op,
         "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other "
         "non-zero dimensions for input, but got: ",
         shape_to_string(self.sizes()));
  }
  const bool batched = self.dim() == 4;
  const Tensor x = batched ? self : self.unsqueeze(0);
  const int64_t n = x.size(0), channels = x.size(1);
  const BlockGeometry g =
      block_geometry(op, kernel_size, dilation, padding, stride, x.size(2), x.size(3));
  const Tensor padded = loom::pad(x, {g.padding[1], g.padding[1], g.padding[0], g.padding[0]});
  Tensor columns =
      empty(std::vector<int64_t>{n, channels, g.kernel[0], g.kernel[1], g.blocks[0], g.blocks[1]},
            self.dtype(), self.device());
  for (int64_t i = 0; i < g.kernel[0]; ++i) {
    for (int64_t j = 0; j < g.kernel[1]; ++j) {
      loom::copy_(columns.select(2, i).select(2, j), kernel_tap(padded, g, i, j));
    }
  }
  Tensor out = columns.view({n, channels * g.kernel[0] * g.kernel[1], g.blocks[0] * g.blocks[1]});
  return batched ? out : out.squeeze(0);
}

Tensor col2im(const Tensor& self, const IntList& output_size, const IntList& kernel_size,
              const IntList& dilation, const IntList& padding, const IntList& stride) {
  const char* op = "loom::col2im";
  if ((self.dim() != 2 && self.dim() != 3) || self.numel() == 0) {
    fail(op,
         "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and "
         "non-zero dimensions for input, but got: ",
         shape_to_string(self.sizes()));
  }
  if (output_size.size() != 2) {
    fail(op, "expected two values for output_size, found ", output_size.size());
  }
  const int64_t height = output_size.span()[0], width = output_size.span()[1];
  if (height <= 0 || width <= 0) {
    fail(op, "expected a positive output_size, found ", shape_to_string(output_size.span()));
  }
  const BlockGeometry g = block_geometry(op, kernel_size, dilation, padding, stride, height, width);
  const bool batched = self.dim() == 3;
  const Tensor x = batched ? self : self.unsqueeze(0);
  const int64_t taps = g.kernel[0] * g.kernel[1];
  if (x.size(1) % taps != 0) {
    fail(op,
         "Expected size of input's dimension 1 to be divisible by the product of "
         "kernel_size, but got input.size(1)=",
         x.size(1), " and kernel_size=", shape_to_string(g.kernel));
  }
  if (x.size(2) != g.blocks[0] * g.blocks[1]) {
    fail(op, "Given output_size=", shape_to_string(output_size.span()),
         ", kernel_size=", shape_to_string(g.kernel), ", dilation=", shape_to_string(g.dilation),
         ", padding=", shape_to_string(g.padding), ", stride=", shape_to_string(g.stride),
         ", expected size of input's dimension 2 to match the calculated number of sliding "
         "blocks ",
         g.blocks[0], " * ", g.blocks[1], " = ", g.blocks[0] * g.blocks[1],
         ", but got input.size(2)=", x.size(2), ".");
  }
  const int64_t n = x.size(0), channels = x.size(1) / taps;
  const Tensor columns =
      loom::reshape(x, {n, channels, g.kernel[0], g.kernel[1], g.blocks[0], g.blocks[1]});
  Tensor padded =
      empty(std::vector<int64_t>{n, channels, height + 2 * g.padding[0], width + 2 * g.padding[1]},
            self.dtype(), self.device());
  loom::fill_(padded, Scalar(0));
  for (int64_t i = 0; i < g.kernel[0]; ++i) {
    for (int64_t j = 0; j < g.kernel[1]; ++j) {
      loom::add_(kernel_tap(padded, g, i, j), columns.select(2, i).select(2, j));
    }
  }
  Tensor out = loom::narrow(loom::narrow(padded, 2, g.padding[0], height), 3, g.padding[1], width);
  out = out.contiguous();
  return batched ? out : out.squeeze(0);
}

constexpr DecompositionEntry kDecompositions[] = {
    {"loom::im2col", decomposition<&im2col>()},
    {"loom::col2im", decomposition<&col2im>()},
};

}  // namespace

std::span<const DecompositionEntry> conv_fold_decompositions() {
  return kDecompositions;
}

}  // namespace loom::ops
