// Samples of the convolution family: conv1d, conv2d, _conv2d_activation, conv3d, the
// transposed convolutions, conv2d's backward ops, im2col and col2im (Note [Op samples] in
// loom/ops/samples.h). Float32 sums compare within 1e-4 (oneDNN's blocking may differ per
// layout).
#include "loom/ops/samples.h"

namespace loom::ops {
namespace {

using namespace sample_helpers;

std::vector<OpSample> make() {
  return {
      blocked_sums("loom::conv2d", {T({1, 2, 5, 5}), T({3, 2, 3, 3})}),
      blocked_sums("loom::conv2d",
                   {T({2, 2, 5, 6}), T({3, 2, 3, 3}), T({3}), L({2, 2}), L({1, 1})}),
      blocked_sums("loom::conv2d", {T({1, 4, 6, 6}), T({4, 2, 3, 3})},
                   {{"bias", T({4})}, {"padding", I(2)}, {"dilation", I(2)}, {"groups", I(2)}}),
      blocked_sums("loom::conv2d", {T({1, 2, 4, 5}), T({2, 2, 1, 3})}, {{"stride", L({1, 2})}}),
      {"loom::conv2d", {T({1, 1, 4, 4}, kF64), T({2, 1, 2, 2}, kF64), T({2}, kF64)}},
      blocked_sums("loom::_conv2d_activation",
                   {T({2, 2, 5, 6}), T({3, 2, 3, 3}), T({3}), L({1, 1}), L({1, 1})}),
      blocked_sums("loom::_conv2d_activation", {T({1, 4, 6, 6}), T({4, 2, 3, 3})},
                   {{"stride", I(2)}, {"groups", I(2)}, {"activation", S("sigmoid")}}),
      blocked_sums("loom::_conv2d_activation", {T({1, 2, 5, 5}), T({3, 2, 3, 3}), T({3})},
                   {{"dilation", I(2)}, {"activation", S("tanh")}}),
      {"loom::_conv2d_activation", {T({1, 1, 4, 4}, kF64), T({2, 1, 2, 2}, kF64), T({2}, kF64)}},
      OpSample{"loom::_conv2d_activation",
               {T({1, 2, 5, 5}), T({3, 2, 3, 3})},
               {{"activation", S("gelu")}}}
          .raises("expected activation \"relu\", \"sigmoid\" or \"tanh\", found \"gelu\""),
      blocked_sums("loom::conv1d", {T({2, 2, 7}), T({4, 2, 3})}),
      blocked_sums("loom::conv_transpose2d.input", {T({1, 2, 3, 3}), T({2, 3, 3, 3}), T({3})},
                   {{"stride", I(2)}, {"padding", I(1)}, {"output_padding", I(1)}}),
      blocked_sums("loom::conv_transpose2d.input", {T({2, 4, 3, 4}), T({4, 1, 2, 3})},
                   {{"groups", I(2)}, {"dilation", L({2, 1})}}),
      {"loom::conv_transpose2d.input",  // output_padding < dilation only: the cropped path
       {T({1, 1, 3, 3}, kF64), T({1, 2, 2, 2}, kF64)},
       {{"padding", I(1)}, {"output_padding", I(1)}, {"dilation", I(2)}}},
      blocked_sums("loom::conv_transpose1d", {T({2, 3, 5}), T({3, 2, 3})},
                   {{"stride", I(2)}, {"output_padding", I(1)}}),
      blocked_sums("loom::conv1d", {T({1, 4, 8}), T({4, 2, 3}), T({4})},
                   {{"stride", I(2)}, {"padding", I(1)}, {"dilation", I(1)}, {"groups", I(2)}}),
      {"loom::conv1d", {T({1, 1, 6}, kF64), T({1, 1, 2}, kF64)}, {{"dilation", I(2)}}},
      // grad_output of conv2d(1x2x5x5, 3x2x3x3) with stride 1, padding 1: 1x3x5x5.
      blocked_sums("loom::conv2d_backward_input",
                   {T({1, 3, 5, 5}), T({3, 2, 3, 3}), L({1, 2, 5, 5}), L({1, 1}), L({1, 1}),
                    L({1, 1}), I(1)}),
      // stride 2, padding 1 on 6x6: 3x3 out (input_size picks 6 among 5 and 6).
      blocked_sums("loom::conv2d_backward_input",
                   {T({2, 4, 3, 3}), T({4, 1, 3, 3}), L({2, 2, 6, 6}), L({2, 2}), L({1, 1}),
                    L({1, 1}), I(2)}),
      {"loom::conv2d_backward_input",
       {T({1, 2, 2, 2}, kF64), T({2, 1, 2, 2}, kF64), L({1, 1, 4, 4}), L({1, 1}), L({0, 0}),
        L({2, 2}), I(1)}},
      blocked_sums("loom::conv2d_backward_weight",
                   {T({1, 3, 5, 5}), T({1, 2, 5, 5}), L({3, 2, 3, 3}), L({1, 1}), L({1, 1}),
                    L({1, 1}), I(1)}),
      blocked_sums("loom::conv2d_backward_weight",
                   {T({2, 4, 3, 3}), T({2, 2, 6, 6}), L({4, 1, 3, 3}), L({2, 2}), L({1, 1}),
                    L({1, 1}), I(2)}),
      {"loom::conv2d_backward_weight",
       {T({1, 2, 2, 2}, kF64), T({1, 1, 4, 4}, kF64), L({2, 1, 2, 2}), L({1, 1}), L({0, 0}),
        L({2, 2}), I(1)}},
      blocked_sums("loom::conv3d", {T({1, 2, 4, 5, 5}), T({3, 2, 2, 3, 3})}),
      blocked_sums("loom::conv3d", {T({2, 4, 5, 4, 4}), T({4, 2, 3, 2, 2}), T({4})},
                   {{"stride", L({2, 1, 2})},
                    {"padding", L({1, 1, 0})},
                    {"dilation", L({1, 2, 1})},
                    {"groups", I(2)}}),
      {"loom::conv3d", {T({1, 3, 3, 3}, kF64), T({2, 1, 2, 2, 2}, kF64)}},
      {"loom::im2col", {T({2, 3, 5, 6}), L({2, 3}), L({1, 1}), L({0, 1}), L({1, 2})}},
      {"loom::im2col", {T({2, 4, 4}, kF64), L({3, 3}), L({2, 1}), L({1, 1}), L({1, 1})}},
      {"loom::im2col", {T({1, 1, 3, 3}, kI64), L({3, 3}), L({1, 1}), L({0, 0}), L({1, 1})}},
      OpSample{"loom::col2im",
               {T({2, 12, 12}, kF32, Fill::SmallInt), L({4, 5}), L({2, 2}), L({1, 1}), L({0, 0}),
                L({1, 1})}}
          .with_note("overlapping blocks add up: integer-valued floats keep the sums exact"),
      {"loom::col2im", {T({8, 4}, kF64), L({3, 3}), L({2, 2}), L({1, 1}), L({1, 1}), L({2, 2})}},
      // Error inputs (Note [Op samples]): each must raise.
      OpSample{"loom::conv2d", {T({1, 3, 5, 5}), T({2, 2, 3, 3})}}.raises(
          "expected input with 2 channels"),
      blocked_sums("loom::convolution", {T({2, 3, 6, 6}), T({4, 3, 3, 3}), T({4}), L({1, 1}),
                                         L({1, 1}), L({1, 1}), B(false), L({0, 0}), I(1)}),
      blocked_sums("loom::convolution", {T({2, 4, 9}), T({6, 2, 3}), none(), L({2}), L({1}), L({1}),
                                         B(false), L({0}), I(2)}),
      blocked_sums("loom::convolution", {T({1, 2, 4, 4}), T({2, 3, 3, 3}), none(), L({2, 2}),
                                         L({1, 1}), L({1, 1}), B(true), L({1, 1}), I(1)}),
      OpSample{"loom::convolution",
               {T({1, 2, 4, 4}), T({3, 2, 3, 3}), none(), L({1, 1, 1}), L({0, 0}), L({1, 1}),
                B(false), L({0, 0}), I(1)}}
          .raises("expected 2 values for stride"),
      blocked_sums("loom::convolution_backward",
                   {T({2, 4, 4, 4}), T({2, 3, 6, 6}), T({4, 3, 3, 3}), L({4}), L({1, 1}), L({0, 0}),
                    L({1, 1}), B(false), L({0, 0}), I(1), BL({true, true, true})}),
      blocked_sums("loom::convolution_backward",
                   {T({2, 6, 5}), T({2, 4, 9}), T({6, 2, 3}), none(), L({2}), L({1}), L({1}),
                    B(false), L({0}), I(2), BL({true, true, false})}),
  };
}

}  // namespace

std::span<const OpSample> conv_samples() {
  static const std::vector<OpSample> samples = make();
  return samples;
}

}  // namespace loom::ops
