// Samples of the pooling family: max_pool2d_with_indices (and its backward), max_pool2d,
// avg_pool2d, adaptive_avg_pool2d, adaptive_max_pool2d, grid_sampler_2d and its backward (Note
// [Op samples] in loom/ops/samples.h). Max pooling inputs hold distinct values, so the indices
// of the maxima are unique.
#include "loom/ops/samples.h"

namespace loom::ops {
namespace {

using namespace sample_helpers;

std::vector<OpSample> make() {
  std::vector<OpSample> s;
  for (const char* op : {"loom::max_pool2d_with_indices", "loom::max_pool2d"}) {
    s.push_back({op, {T({1, 2, 5, 5}, kF32, Fill::Distinct), L({2, 2})}});
    s.push_back({op,
                 {T({2, 1, 6, 5}, kF32, Fill::Distinct), L({3, 3}), L({2, 2}), L({1, 1})},
                 {{"ceil_mode", B(true)}}});
    s.push_back({op,
                 {T({2, 7, 7}, kF64, Fill::Distinct), L({2, 2})},
                 {{"stride", L({1, 2})}, {"dilation", L({2, 2})}}});
    s.push_back(OpSample{op, {T({1, 2, 4, 4}, kBF16, Fill::Distinct), I(2), I(1)}}.tol(2e-2));
  }
  // max pooling's gradient: grad_output added at any indices of self's planes (overlapping
  // windows add twice); the indices must fit the planes.
  s.push_back({"loom::max_pool2d_with_indices_backward",
               {T({1, 2, 2, 2}), T({1, 2, 5, 5}), L({2, 2}), L({2, 2}), L({0, 0}), L({1, 1}),
                B(false), Idx({1, 2, 2, 2}, 25)}});
  s.push_back({"loom::max_pool2d_with_indices_backward",
               {T({2, 3, 3}, kF64), T({2, 7, 7}, kF64), L({3, 3}), L({2, 2}), L({1, 1}), L({1, 1}),
                B(true), Idx({2, 3, 3}, 49)}});
  s.push_back(OpSample{"loom::max_pool2d_with_indices_backward",
                       {T({1, 1, 2, 2}, kBF16), T({1, 1, 4, 4}, kBF16), L({2, 2}), L({2, 2}),
                        L({0, 0}), L({1, 1}), B(false), Idx({1, 1, 2, 2}, 16)}}
                  .tol(2e-2));
  s.push_back(OpSample{
      "loom::max_pool2d_with_indices_backward",
      {T({1, 2, 2, 2}), T({1, 3, 5, 5}), L({2, 2}), L({2, 2}), L({0, 0}), L({1, 1}), B(false),
       Idx({1, 2, 2, 2},
           25)}}.raises("expected grad_output and indices of one shape with self's leading"));
  s.push_back({"loom::avg_pool2d", {T({1, 2, 5, 5}), L({2, 2})}});
  s.push_back({"loom::avg_pool2d",
               {T({2, 1, 6, 5}), L({3, 3}), L({2, 2}), L({1, 1})},
               {{"ceil_mode", B(true)}, {"count_include_pad", B(false)}}});
  s.push_back({"loom::avg_pool2d",
               {T({2, 5, 5}, kF64), L({3, 2})},
               {{"stride", L({1, 1})}, {"padding", L({1, 0})}, {"divisor_override", I(4)}}});
  s.push_back(OpSample{"loom::avg_pool2d", {T({1, 2, 4, 4}, kBF16), I(2)}}.tol(2e-2));
  // avg_pool2d_backward: the gradients of the three avg_pool2d samples above
  s.push_back({"loom::avg_pool2d_backward",
               {T({1, 2, 2, 2}), T({1, 2, 5, 5}), L({2, 2}), L({2, 2}), L({0, 0}), B(false),
                B(true), none()}});
  s.push_back({"loom::avg_pool2d_backward",
               {T({2, 1, 4, 3}), T({2, 1, 6, 5}), L({3, 3}), L({2, 2}), L({1, 1}), B(true),
                B(false), none()}});
  s.push_back({"loom::avg_pool2d_backward",
               {T({2, 5, 4}, kF64), T({2, 5, 5}, kF64), L({3, 2}), L({1, 1}), L({1, 0}), B(false),
                B(true), I(4)}});
  s.push_back(OpSample{
      "loom::avg_pool2d_backward",
      {T({1, 2, 3, 3}), T({1, 2, 5, 5}), L({2, 2}), L({2, 2}), L({0, 0}), B(false), B(true),
       none()}}.raises("expected grad_output of avg_pool2d's output shape [1, 2, 2, 2]"));
  s.push_back({"loom::adaptive_avg_pool2d", {T({1, 2, 5, 7}), L({2, 3})}});
  s.push_back({"loom::adaptive_max_pool2d", {T({1, 2, 5, 7}, kF32, Fill::Distinct), L({2, 3})}});
  // grid_sampler_2d: every interpolation (bilinear, nearest, bicubic) and padding mode
  // (zeros, border, reflection); grid points fall inside and outside [-1, 1].
  for (int64_t interpolation : {0, 1, 2}) {
    for (int64_t padding : {0, 1, 2}) {
      s.push_back(
          {"loom::grid_sampler_2d",
           {T({2, 3, 4, 5}), T({2, 3, 2, 2}), I(interpolation), I(padding), B(padding == 1)}});
    }
  }
  s.push_back({"loom::grid_sampler_2d",
               {T({1, 2, 3, 3}, kF64), T({1, 4, 4, 2}, kF64), I(0), I(2), B(true)}});
  // its backward: the gradient of a [2, 3, 3, 2] output
  for (int64_t interpolation : {0, 1, 2}) {
    s.push_back({"loom::grid_sampler_2d_backward",
                 {T({2, 3, 3, 2}), T({2, 3, 4, 5}), T({2, 3, 2, 2}), I(interpolation),
                  I(interpolation), B(interpolation == 0)}});
  }
  s.push_back({"loom::adaptive_max_pool2d", {T({2, 6, 6}, kF64, Fill::Distinct), L({4, 4})}});
  s.push_back({"loom::adaptive_max_pool2d", {T({2, 3, 4, 4}, kF32, Fill::Distinct), I(1)}});
  s.push_back({"loom::adaptive_max_pool2d", {T({1, 1, 3, 3}, kF32, Fill::Distinct), L({5, 4})}});
  s.push_back({"loom::adaptive_avg_pool2d", {T({2, 6, 6}, kF64), L({3, 3})}});
  s.push_back({"loom::adaptive_avg_pool2d", {T({2, 3, 4, 4}), I(1)}});
  s.push_back({"loom::adaptive_avg_pool2d", {T({1, 1, 3, 3}), L({5, 4})}});
  s.push_back({"loom::max_pool1d", {T({2, 3, 8}, kF32, Fill::Distinct), L({2})}});
  s.push_back({"loom::max_pool1d", {T({3, 7}, kF64, Fill::Distinct), L({3}), L({2}), L({1})}});
  s.push_back(OpSample{"loom::max_pool1d",
                       {T({1, 2, 9}, kF32, Fill::Distinct), L({2})},
                       {{"dilation", L({2})}, {"ceil_mode", B(true)}}});
  s.push_back({"loom::avg_pool1d", {T({2, 3, 8}), L({2})}});
  s.push_back({"loom::avg_pool1d",
               {T({3, 7}, kF64), L({3}), L({2}), L({1})},
               {{"count_include_pad", B(false)}}});
  s.push_back({"loom::upsample_nearest2d", {T({1, 2, 3, 3}), L({6, 5})}});
  s.push_back({"loom::upsample_nearest2d", {T({2, 1, 4, 4}, kI64), L({2, 3})}});
  s.push_back({"loom::upsample_nearest2d", {T({1, 1, 2, 2}, kF64), L({4, 4}), D(2.0), D(2.0)}});
  s.push_back({"loom::upsample_bilinear2d", {T({1, 2, 3, 3}), L({5, 4}), B(false)}});
  s.push_back({"loom::upsample_bilinear2d", {T({2, 1, 4, 4}, kF64), L({7, 3}), B(true)}});
  s.push_back({"loom::upsample_bilinear2d", {T({1, 1, 2, 3}), L({1, 1}), B(true)}});
  // Core ATen IR's spellings.
  s.push_back({"loom::_adaptive_avg_pool2d", {T({2, 3, 5, 7}), L({2, 3})}});
  s.push_back({"loom::adaptive_avg_pool1d", {T({2, 3, 7}), L({3})}});
  s.push_back({"loom::adaptive_avg_pool1d", {T({3, 8}, kF64), L({4})}});
  s.push_back({"loom::upsample_nearest2d.vec", {T({1, 2, 3, 4}), L({6, 5}), none()}});
  s.push_back({"loom::upsample_nearest2d.vec", {T({1, 1, 2, 3}), none(), DL({2.0, 1.5})}});
  s.push_back({"loom::upsample_bilinear2d.vec", {T({1, 2, 3, 3}), L({5, 4}), B(false), none()}});
  s.push_back(
      {"loom::upsample_bilinear2d.vec", {T({1, 1, 2, 2}), none(), B(true), DL({2.0, 2.0})}});
  s.push_back(
      OpSample{"loom::upsample_nearest2d.vec", {T({1, 1, 2, 2}), L({4, 4}), DL({2.0, 2.0})}}.raises(
          "expected exactly one of output_size and scale_factors"));
  // 3-D pools from the 2-D ones, adaptive pooling as products (Core ATen IR).
  s.push_back({"loom::avg_pool3d", {T({1, 2, 4, 5, 6}), L({2, 2, 2})}});
  s.push_back(
      {"loom::avg_pool3d",
       {T({2, 3, 5, 4, 5}, kF64), L({3, 2, 3}), L({2, 1, 2}), L({1, 1, 1}), B(true), B(false)}});
  s.push_back(
      {"loom::avg_pool3d", {T({2, 4, 4, 4}), L({2}), L({1}), L({1}), B(false), B(true), I(3)}});
  s.push_back(
      {"loom::max_pool3d_with_indices", {T({1, 2, 4, 5, 6}, kF32, Fill::Distinct), L({2, 2, 2})}});
  s.push_back({"loom::max_pool3d_with_indices",
               {T({2, 5, 4, 6}, kF64, Fill::Distinct), L({3, 2, 2}), L({2, 1, 2}), L({1, 1, 1}),
                L({1, 2, 1}), B(true)}});
  s.push_back({"loom::_adaptive_avg_pool3d", {T({1, 2, 5, 6, 7}), L({2, 3, 4})}});
  s.push_back({"loom::_adaptive_avg_pool3d", {T({2, 4, 4, 3}, kF64), L({4, 1, 3})}});
  s.push_back({"loom::_adaptive_avg_pool2d_backward", {T({2, 3, 2, 3}), T({2, 3, 5, 7})}});
  s.push_back({"loom::_adaptive_avg_pool2d_backward", {T({3, 4, 4}, kF64), T({3, 6, 5}, kF64)}});
  s.push_back(OpSample{"loom::avg_pool3d", {T({2, 3, 4}), L({2, 2, 2})}}.raises(
      "expected a 4-D (unbatched) or 5-D (batched) input"));
  // Quantized pooling (Note [Quantized samples]).
  s.push_back(OpSample{"loom::max_pool2d", {Q({1, 2, 5, 5}), L({2, 2})}}.against({}));
  s.push_back(OpSample{
      "loom::max_pool2d",
      {Q({2, 1, 6, 5}, kQI8), L({3, 3}), L({2, 2}), L({1, 1})},
      {{"ceil_mode",
        B(true)}}}.against({}));
  s.push_back(OpSample{"loom::avg_pool2d", {Q({1, 2, 5, 5}), L({2, 2})}}.against({}));
  s.push_back(OpSample{"loom::avg_pool2d",
                       {Q({2, 1, 6, 5}, kQI8), L({3, 3}), L({2, 2}), L({1, 1})},
                       {{"ceil_mode", B(true)}, {"count_include_pad", B(false)}}}
                  .against({}));
  return s;
}

}  // namespace

std::span<const OpSample> pool_samples() {
  static const std::vector<OpSample> samples = make();
  return samples;
}

}  // namespace loom::ops
