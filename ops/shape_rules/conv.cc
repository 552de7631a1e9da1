// Shape rules of 2-D convolution: conv2d and its two backward ops (conv2d_backward_input,
// conv2d_backward_weight).
#include "loom/core/type_promotion.h"
#include "shape_rule.h"

namespace loom::ops {
namespace {

void require_dtype_of(const ShapeArgs& args, const TensorImpl& t, const char* name,
                      const TensorImpl& ref, const char* ref_name) {
  if (t.dtype() != ref.dtype()) {
    args.fail("expected ", name, " to have the dtype of ", ref_name, " (",
              scalar_type_name(ref.dtype()), "), found ", scalar_type_name(t.dtype()));
  }
}

struct ConvParams {
  Pair stride, padding, dilation;
  int64_t groups;
};

ConvParams conv_params(const ShapeArgs& args, size_t first) {
  ConvParams p{positive_pair(args, first, "stride"), nonnegative_pair(args, first + 1, "padding"),
               positive_pair(args, first + 2, "dilation"), args.integer(first + 3)};
  if (p.groups <= 0) args.fail("expected positive groups, found ", p.groups);
  return p;
}

// Note [Convolution layouts]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A convolution's result is channels last when either operand it reads is (their
// suggest_memory_format, as libtorch's oneDNN and cuDNN paths decide), row-major
// otherwise: conv2d from its input and weight, conv2d_backward_input from grad_output and
// the weight, conv2d_backward_weight from grad_output and the input. So a network made
// channels last keeps that layout from layer to layer and its gradients come back in it,
// and backends whose kernels vectorise over channels (oneDNN, cuDNN) read and write it
// without reordering. Unbatched 3-D inputs have no channels-last layout.
MemoryFormat conv_layout(std::initializer_list<const TensorImpl*> operands) {
  for (const TensorImpl* t : operands) {
    if (suggest_memory_format(*t) == MemoryFormat::ChannelsLast) {
      return MemoryFormat::ChannelsLast;
    }
  }
  return MemoryFormat::Contiguous;
}

int64_t conv_out_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dil) {
  return (in + 2 * pad - dil * (kernel - 1) - 1) / stride + 1;
}

// The output shape of a convolution of `input` (4-D [N, C, H, W]) by `weight`
// ([OC, C / groups, kH, kW]), checking channels, groups and the output size.
DimVector conv_output_shape(const ShapeArgs& args, IntArrayRef input, IntArrayRef weight,
                            const ConvParams& p) {
  if (weight.size() != 4) {
    args.fail("expected a 4-D weight [out_channels, in_channels / groups, kH, kW], found ",
              shape_to_string(weight));
  }
  int64_t channels = input[1];
  if (channels % p.groups != 0 || weight[1] * p.groups != channels) {
    args.fail("expected input with ", weight[1] * p.groups, " channels (weight ",
              shape_to_string(weight), ", groups ", p.groups, "), found input ",
              shape_to_string(input));
  }
  if (weight[0] % p.groups != 0 || weight[0] == 0) {
    args.fail("expected out_channels (weight.size(0) = ", weight[0],
              ") to be a positive multiple of groups ", p.groups);
  }
  int64_t oh = conv_out_size(input[2], weight[2], p.stride.h, p.padding.h, p.dilation.h);
  int64_t ow = conv_out_size(input[3], weight[3], p.stride.w, p.padding.w, p.dilation.w);
  if (input[2] + 2 * p.padding.h < p.dilation.h * (weight[2] - 1) + 1 ||
      input[3] + 2 * p.padding.w < p.dilation.w * (weight[3] - 1) + 1 || oh <= 0 || ow <= 0) {
    args.fail("expected the (padded) input ", shape_to_string(input),
              " to be at least as large as the (dilated) kernel ", shape_to_string(weight),
              ", found an output size of [", oh, ", ", ow, "]");
  }
  return {input[0], weight[0], oh, ow};
}

void conv2d(const ShapeArgs& args, OutputMetas& out) {
  const TensorImpl& input = args.tensor(0);
  const TensorImpl& weight = args.tensor(1);
  const TensorImpl* bias = args.optional_tensor(2);
  ConvParams p = conv_params(args, 3);
  if (input.dim() != 3 && input.dim() != 4) {
    args.fail("expected a 3-D (unbatched) or 4-D (batched) input, found ",
              shape_to_string(input.sizes()));
  }
  require_floating(args, input, "input");
  require_dtype_of(args, weight, "weight", input, "input");
  DimVector in(input.sizes().begin(), input.sizes().end());
  if (input.dim() == 3) in.insert(in.begin(), 1);
  DimVector shape = conv_output_shape(args, in, weight.sizes(), p);
  if (bias != nullptr) {
    require_dtype_of(args, *bias, "bias", input, "input");
    if (bias->dim() != 1 || bias->sizes()[0] != weight.sizes()[0]) {
      args.fail("expected bias of shape [", weight.sizes()[0], "], found ",
                shape_to_string(bias->sizes()));
    }
  }
  const bool unbatched = input.dim() == 3;
  if (unbatched) shape.erase(shape.begin());
  out.push_back(
      output(std::move(shape), input.dtype(), args.common_device({&input, &weight, bias})));
  if (!unbatched) out.back().memory_format = conv_layout({&input, &weight});
}

std::span<const int64_t> size_list(const ShapeArgs& args, size_t i, const char* name) {
  std::span<const int64_t> s = args.ints(i);
  if (s.size() != 4) args.fail("expected ", name, " with 4 values, found ", s.size());
  for (int64_t v : s) {
    if (v < 0) args.fail("expected non-negative sizes in ", name, ", found ", v);
  }
  return s;
}

// grad_output must be the shape the forward convolution gives.
void require_grad_shape(const ShapeArgs& args, const TensorImpl& grad, const DimVector& expected) {
  if (grad.dim() != 4 || !std::equal(expected.begin(), expected.end(), grad.sizes().begin())) {
    args.fail("expected grad_output of shape ", shape_to_string(expected), ", found ",
              shape_to_string(grad.sizes()));
  }
}

void conv2d_backward_input(const ShapeArgs& args, OutputMetas& out) {
  const TensorImpl& grad = args.tensor(0);
  const TensorImpl& weight = args.tensor(1);
  std::span<const int64_t> input_size = size_list(args, 2, "input_size");
  ConvParams p = conv_params(args, 3);
  require_floating(args, grad, "grad_output");
  require_dtype_of(args, weight, "weight", grad, "grad_output");
  require_grad_shape(args, grad, conv_output_shape(args, input_size, weight.sizes(), p));
  out.push_back(output(DimVector(input_size.begin(), input_size.end()), grad.dtype(),
                       args.common_device({&grad, &weight})));
  out.back().memory_format = conv_layout({&grad, &weight});
}

void conv2d_backward_weight(const ShapeArgs& args, OutputMetas& out) {
  const TensorImpl& grad = args.tensor(0);
  const TensorImpl& input = args.tensor(1);
  std::span<const int64_t> weight_size = size_list(args, 2, "weight_size");
  ConvParams p = conv_params(args, 3);
  require_floating(args, grad, "grad_output");
  require_dtype_of(args, input, "input", grad, "grad_output");
  if (input.dim() != 4) {
    args.fail("expected a 4-D input, found ", shape_to_string(input.sizes()));
  }
  require_grad_shape(args, grad, conv_output_shape(args, input.sizes(), weight_size, p));
  out.push_back(output(DimVector(weight_size.begin(), weight_size.end()), grad.dtype(),
                       args.common_device({&grad, &input})));
  out.back().memory_format = conv_layout({&grad, &input});
}

constexpr ShapeRuleEntry kRules[] = {
    {"loom::conv2d", &conv2d},
    {"loom::conv2d_backward_input", &conv2d_backward_input},
    {"loom::conv2d_backward_weight", &conv2d_backward_weight},
};

}  // namespace

std::span<const ShapeRuleEntry> conv_shape_rules() {
  return kRules;
}

}  // namespace loom::ops
