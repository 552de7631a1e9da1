// Decompositions of the convolution ops: conv1d (a conv2d over a height-1 plane), conv3d
// (one batched conv2d per kernel depth), the transposed convolutions conv_transpose1d/2d
// (conv2d's input gradient), PyTorch's convolution (whichever of them it names) and
// _conv2d_activation (conv2d, then its activation in place).
#include <array>

#include "decomposition.h"
#include "loom/core/type_promotion.h"

namespace loom::ops {
namespace {

// The `int[1]` value of a conv1d parameter.
int64_t single(const IntList& v, const char* name) {
  if (v.size() != 1) fail("loom::conv1d", "expected one value for ", name, ", found ", v.size());
  return v.span()[0];
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
              const IntList& stride, const IntList& padding, const IntList& dilation,
              int64_t groups) {
  if (input.dim() != 2 && input.dim() != 3) {
    fail("loom::conv1d", "expected a 2-D (unbatched) or 3-D (batched) input, found ",
         shape_to_string(input.sizes()));
  }
  if (weight.dim() != 3) {
    fail("loom::conv1d", "expected a 3-D weight [out_channels, in_channels / groups, kW], found ",
         shape_to_string(weight.sizes()));
  }
  int64_t plane_dim = input.dim() - 1;  // the new height-1 dim goes before the length
  Tensor out = loom::conv2d(input.unsqueeze(plane_dim), weight.unsqueeze(2), bias,
                            {1, single(stride, "stride")}, {0, single(padding, "padding")},
                            {1, single(dilation, "dilation")}, groups);
  return out.squeeze(plane_dim);
}

// The two values of an `int[2]` parameter (one value serves both dims).
std::array<int64_t, 2> pair_of(const char* op, const IntList& v, const char* name) {
  std::span<const int64_t> s = v.span();
  if (s.size() == 1) return {s[0], s[0]};
  if (s.size() != 2) fail(op, "expected one or two values for ", name, ", found ", s.size());
  return {s[0], s[1]};
}

// Note [conv3d as conv2d]
// ~~~~~~~~~~~~~~~~~~~~~~~
// Output depth o of conv3d sums, over the kernel depths k, the 2-D convolution of input
// depth o * sd + k * dd (depth-padded input) with the weight's depth slice k. For each
// k, the input depths all outputs read form one strided slice [N, C, OD, H, W]; moved to
// [N * OD, C, H, W] it is one conv2d with batch N * OD (height and width stride, padding
// and dilation are conv2d's own), and the KD results add up. That costs KD copies of the
// input slab and KD conv2d calls, and runs on every backend with a conv2d.
Tensor conv3d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
              const IntList& stride_list, const IntList& padding_list, const IntList& dilation_list,
              int64_t groups) {
  const char* op = "loom::conv3d";
  if (input.dim() != 4 && input.dim() != 5) {
    fail(op, "expected a 4-D (unbatched) or 5-D (batched) input, found ",
         shape_to_string(input.sizes()));
  }
  if (weight.dim() != 5) {
    fail(op, "expected a 5-D weight [out_channels, in_channels / groups, kD, kH, kW], found ",
         shape_to_string(weight.sizes()));
  }
  auto triple = [&](const IntList& v, const char* name) {
    std::span<const int64_t> s = v.span();
    if (s.size() == 1) return std::array<int64_t, 3>{s[0], s[0], s[0]};
    if (s.size() != 3) fail(op, "expected one or three values for ", name, ", found ", s.size());
    return std::array<int64_t, 3>{s[0], s[1], s[2]};
  };
  const auto stride = triple(stride_list, "stride");
  const auto padding = triple(padding_list, "padding");
  const auto dilation = triple(dilation_list, "dilation");
  for (int i = 0; i < 3; ++i) {
    if (stride[i] <= 0 || dilation[i] <= 0 || padding[i] < 0) {
      fail(op, "expected positive stride and dilation and non-negative padding, found stride ",
           shape_to_string(stride), ", dilation ", shape_to_string(dilation), ", padding ",
           shape_to_string(padding));
    }
  }
  const bool batched = input.dim() == 5;
  const Tensor x = batched ? input : input.unsqueeze(0);
  const int64_t n = x.size(0), channels = x.size(1), out_channels = weight.size(0);
  const int64_t kernel_depth = weight.size(2);
  const int64_t padded_depth = x.size(2) + 2 * padding[0];
  const int64_t out_depth = (padded_depth - dilation[0] * (kernel_depth - 1) - 1) / stride[0] + 1;
  if (padded_depth < dilation[0] * (kernel_depth - 1) + 1) {
    fail(op, "expected an input depth (padded) of at least the kernel's dilated depth ",
         dilation[0] * (kernel_depth - 1) + 1, ", found ", padded_depth);
  }
  if (bias && (bias->dim() != 1 || bias->size(0) != out_channels)) {
    fail(op, "expected bias of shape [", out_channels, "], found ", shape_to_string(bias->sizes()));
  }
  const Tensor padded = padding[0] > 0 ? loom::pad(x, {0, 0, 0, 0, padding[0], padding[0]}) : x;
  Tensor sum;
  for (int64_t k = 0; k < kernel_depth; ++k) {
    const int64_t first = k * dilation[0];
    const Tensor slab = loom::slice(padded, 2, first, first + stride[0] * (out_depth - 1) + 1,
                                    stride[0]);  // [N, C, OD, H, W]
    const Tensor planes = loom::reshape(slab.permute({0, 2, 1, 3, 4}),
                                        {n * out_depth, channels, x.size(3), x.size(4)});
    Tensor part = loom::conv2d(planes, weight.select(2, k), std::nullopt, {stride[1], stride[2]},
                               {padding[1], padding[2]}, {dilation[1], dilation[2]}, groups);
    if (k == 0) {
      sum = part;
    } else {
      loom::add_(sum, part);
    }
  }
  // [N * OD, OC, OH, OW] -> [N, OC, OD, OH, OW]
  Tensor out = loom::reshape(sum, {n, out_depth, out_channels, sum.size(2), sum.size(3)})
                   .permute({0, 2, 1, 3, 4});
  out = bias ? loom::add(out, bias->view({1, out_channels, 1, 1, 1})) : out.contiguous();
  return batched ? out : out.squeeze(0);
}

// Note [Transposed convolution]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// conv_transpose2d(x, w) is the input gradient of conv2d by the same weight: w's layout
// [in_channels, out_channels / groups, kH, kW] is conv2d's [out, in / groups, kH, kW] for
// the convolution it reverses, so conv2d_backward_input computes it (oneDNN's backward-
// data primitive on the CPU). The output size is (H - 1) s - 2 p + d (k - 1) + op + 1.
// When output_padding < stride, conv2d of that size gives back H, and the call is direct.
// PyTorch also allows stride <= output_padding < dilation; then the full result (padding
// 0, output_padding 0) is computed and `pad` crops p before and p - op after (a negative
// crop pads with zeros: those rows receive no input).
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight,
                        const std::optional<Tensor>& bias, const IntList& stride_list,
                        const IntList& padding_list, const IntList& output_padding_list,
                        int64_t groups, const IntList& dilation_list) {
  const char* op = "loom::conv_transpose2d";
  if (input.dim() != 3 && input.dim() != 4) {
    fail(op, "expected a 3-D (unbatched) or 4-D (batched) input, found ",
         shape_to_string(input.sizes()));
  }
  if (weight.dim() != 4) {
    fail(op, "expected a 4-D weight [in_channels, out_channels / groups, kH, kW], found ",
         shape_to_string(weight.sizes()));
  }
  auto stride = pair_of(op, stride_list, "stride");
  auto padding = pair_of(op, padding_list, "padding");
  auto output_padding = pair_of(op, output_padding_list, "output_padding");
  auto dilation = pair_of(op, dilation_list, "dilation");
  if (groups <= 0) fail(op, "expected positive groups, found ", groups);
  for (int i = 0; i < 2; ++i) {
    if (stride[i] <= 0 || dilation[i] <= 0 || padding[i] < 0 || output_padding[i] < 0) {
      fail(op,
           "expected positive stride and dilation and non-negative padding and "
           "output_padding, found stride ",
           shape_to_string(stride), ", dilation ", shape_to_string(dilation), ", padding ",
           shape_to_string(padding), ", output_padding ", shape_to_string(output_padding));
    }
    if (output_padding[i] >= stride[i] && output_padding[i] >= dilation[i]) {
      fail(op,
           "expected output_padding smaller than either stride or dilation, found "
           "output_padding ",
           shape_to_string(output_padding), ", stride ", shape_to_string(stride), ", dilation ",
           shape_to_string(dilation));
    }
  }
  const bool batched = input.dim() == 4;
  Tensor x = batched ? input : input.unsqueeze(0);
  if (x.size(1) != weight.size(0)) {
    fail(op, "expected input with ", weight.size(0), " channels (weight ",
         shape_to_string(weight.sizes()), "), found input ", shape_to_string(input.sizes()));
  }
  if (weight.size(0) % groups != 0) {
    fail(op, "expected in_channels (weight.size(0) = ", weight.size(0),
         ") to be divisible by groups ", groups);
  }
  const int64_t out_channels = weight.size(1) * groups;
  std::array<int64_t, 2> full{}, out_size{};
  for (int i = 0; i < 2; ++i) {
    full[i] = (x.size(2 + i) - 1) * stride[i] + dilation[i] * (weight.size(2 + i) - 1) + 1;
    out_size[i] = full[i] - 2 * padding[i] + output_padding[i];
  }
  if (out_size[0] <= 0 || out_size[1] <= 0) {
    fail(op, "expected a positive output size, found [", out_size[0], ", ", out_size[1],
         "] for input ", shape_to_string(input.sizes()), " and weight ",
         shape_to_string(weight.sizes()));
  }
  Tensor out;
  if (output_padding[0] < stride[0] && output_padding[1] < stride[1]) {
    out = loom::conv2d_backward_input(
        x, weight, {x.size(0), out_channels, out_size[0], out_size[1]}, {stride[0], stride[1]},
        {padding[0], padding[1]}, {dilation[0], dilation[1]}, groups);
  } else {
    Tensor whole = loom::conv2d_backward_input(
        x, weight, {x.size(0), out_channels, full[0], full[1]}, {stride[0], stride[1]}, {0, 0},
        {dilation[0], dilation[1]}, groups);
    out = loom::pad(whole, {-padding[1], output_padding[1] - padding[1], -padding[0],
                            output_padding[0] - padding[0]});
  }
  if (bias) {
    if (bias->dim() != 1 || bias->size(0) != out_channels) {
      fail(op, "expected bias of shape [", out_channels, "], found ",
           shape_to_string(bias->sizes()));
    }
    out = loom::add(out, bias->view({1, out_channels, 1, 1}));
  }
  return batched ? out : out.squeeze(0);
}

// conv_transpose1d: conv_transpose2d over a height-1 plane.
Tensor conv_transpose1d(const Tensor& input, const Tensor& weight,
                        const std::optional<Tensor>& bias, const IntList& stride,
                        const IntList& padding, const IntList& output_padding, int64_t groups,
                        const IntList& dilation) {
  const char* op = "loom::conv_transpose1d";
  if (input.dim() != 2 && input.dim() != 3) {
    fail(op, "expected a 2-D (unbatched) or 3-D (batched) input, found ",
         shape_to_string(input.sizes()));
  }
  if (weight.dim() != 3) {
    fail(op, "expected a 3-D weight [in_channels, out_channels / groups, kW], found ",
         shape_to_string(weight.sizes()));
  }
  auto one = [&](const IntList& v, const char* name) {
    if (v.size() != 1) fail(op, "expected one value for ", name, ", found ", v.size());
    return v.span()[0];
  };
  int64_t plane_dim = input.dim() - 1;
  Tensor out = loom::conv_transpose2d(input.unsqueeze(plane_dim), weight.unsqueeze(2), bias,
                                      {1, one(stride, "stride")}, {0, one(padding, "padding")},
                                      {0, one(output_padding, "output_padding")}, groups,
                                      {1, one(dilation, "dilation")});
  return out.squeeze(plane_dim);
}

// PyTorch's convolution: the conv or transposed conv of the weight's spatial rank, with
// its one-value-per-dim parameters checked here (the convs also take one value for all).
Tensor convolution(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                   const IntList& stride, const IntList& padding, const IntList& dilation,
                   bool transposed, const IntList& output_padding, int64_t groups) {
  const char* op = "loom::convolution";
  if (weight.dim() < 3 || weight.dim() > 5) {
    fail(op, "expected a 3-D, 4-D or 5-D weight (1 to 3 spatial dims), found ",
         shape_to_string(weight.sizes()));
  }
  const size_t spatial = static_cast<size_t>(weight.dim() - 2);
  auto check = [&](const IntList& v, const char* name) {
    if (v.size() != spatial && v.size() != 1) {
      fail(op, "expected ", spatial, " values for ", name, " (one per spatial dim of the ",
           shape_to_string(weight.sizes()), " weight), found ", v.size());
    }
  };
  check(stride, "stride");
  check(padding, "padding");
  check(dilation, "dilation");
  if (!transposed) {
    for (int64_t p : output_padding.span()) {
      if (p != 0)
        fail(op, "output_padding must be 0 for a convolution that is not transposed, found ", p);
    }
    switch (spatial) {
      case 1:
        return loom::conv1d(input, weight, bias, stride, padding, dilation, groups);
      case 2:
        return loom::conv2d(input, weight, bias, stride, padding, dilation, groups);
      default:
        return loom::conv3d(input, weight, bias, stride, padding, dilation, groups);
    }
  }
  check(output_padding, "output_padding");
  switch (spatial) {
    case 1:
      return loom::conv_transpose1d(input, weight, bias, stride, padding, output_padding, groups,
                                    dilation);
    case 2:
      return loom::conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups,
                                    dilation);
    default:
      fail(op, "3-D transposed convolution is not supported by loom yet (weight ",
           shape_to_string(weight.sizes()), ")");
  }
}

// conv2d, then its activation ("relu", "sigmoid" or "tanh") in place on the result.
Tensor conv2d_activation(const Tensor& input, const Tensor& weight,
                         const std::optional<Tensor>& bias, const IntList& stride,
                         const IntList& padding, const IntList& dilation, int64_t groups,
                         std::string_view activation) {
  if (activation != "relu" && activation != "sigmoid" && activation != "tanh") {
    fail("loom::_conv2d_activation",
         "expected activation \"relu\", \"sigmoid\" or \"tanh\", found \"", activation, "\"");
  }
  Tensor out = loom::conv2d(input, weight, bias, stride, padding, dilation, groups);
  if (activation == "relu") return loom::relu_(out);
  return activation == "sigmoid" ? loom::sigmoid_(out) : loom::tanh_(out);
}

// convolution's gradients, 1-D and 2-D, not transposed: conv2d's backward ops (1-D
// over a height-1 plane) and the bias gradient, each only when output_mask asks for it.
std::tuple<Tensor, Tensor, Tensor> convolution_backward(
    const Tensor& grad_output, const Tensor& input, const Tensor& weight,
    const OptionalIntList& bias_sizes, const IntList& stride, const IntList& padding,
    const IntList& dilation, bool transposed, const IntList& output_padding, int64_t groups,
    const std::vector<bool>& output_mask) {
  const char* op = "loom::convolution_backward";
  if (output_mask.size() != 3)
    fail(op, "expected 3 output_mask values, found ", output_mask.size());
  const int64_t spatial = weight.dim() - 2;
  if (transposed || (spatial != 1 && spatial != 2)) {
    fail(op,
         "loom computes the gradients of 1-D and 2-D convolutions that are not transposed; "
         "found a ",
         transposed ? "transposed " : "", shape_to_string(weight.sizes()), " weight");
  }
  if (input.dim() != spatial + 2 || grad_output.dim() != spatial + 2) {
    fail(op, "expected a batched ", spatial + 2, "-D input and grad_output, found ",
         shape_to_string(input.sizes()), " and ", shape_to_string(grad_output.sizes()));
  }
  auto two = [&](const IntList& v, int64_t unit, const char* name) -> std::vector<int64_t> {
    std::span<const int64_t> s = v.span();
    if (s.size() != 1 && static_cast<int64_t>(s.size()) != spatial) {
      fail(op, "expected ", spatial, " values for ", name, ", found ", s.size());
    }
    if (spatial == 1) return {unit, s[0]};
    return {s[0], s.size() == 1 ? s[0] : s[1]};
  };
  std::vector<int64_t> st = two(stride, 1, "stride"), pd = two(padding, 0, "padding"),
                       dl = two(dilation, 1, "dilation");
  const bool plane = spatial == 1;
  Tensor g = plane ? grad_output.unsqueeze(2) : grad_output;
  Tensor x = plane ? input.unsqueeze(2) : input;
  Tensor w = plane ? weight.unsqueeze(2) : weight;
  Tensor grad_input, grad_weight, grad_bias;
  if (output_mask[0]) {
    grad_input = loom::conv2d_backward_input(g, w, x.sizes(), st, pd, dl, groups);
    if (plane) grad_input = grad_input.squeeze(2);
  }
  if (output_mask[1]) {
    grad_weight = loom::conv2d_backward_weight(g, x, w.sizes(), st, pd, dl, groups);
    if (plane) grad_weight = grad_weight.squeeze(2);
  }
  if (output_mask[2]) {
    DimVector dims{0};
    for (int64_t d = 2; d < grad_output.dim(); ++d) dims.push_back(d);
    grad_bias = loom::sum(grad_output, dims, false);
  }
  return masked_gradients(grad_input, grad_weight, grad_bias, grad_output);
}

constexpr DecompositionEntry kDecompositions[] = {
    {"loom::convolution", decomposition<&convolution>()},
    {"loom::convolution_backward", decomposition<&convolution_backward>()},
    {"loom::conv1d", decomposition<&conv1d>()},
    {"loom::_conv2d_activation", decomposition<&conv2d_activation>()},
    {"loom::conv3d", decomposition<&conv3d>()},
    {"loom::conv_transpose2d.input", decomposition<&conv_transpose2d>()},
    {"loom::conv_transpose1d", decomposition<&conv_transpose1d>()},
};

}  // namespace

std::span<const DecompositionEntry> conv_decompositions() {
  return kDecompositions;
}

}  // namespace loom::ops
