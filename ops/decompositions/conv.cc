// Decompositions of the convolution ops: conv1d (a conv2d over a height-1 plane).
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

constexpr DecompositionEntry kDecompositions[] = {
    {"loom::conv1d", decomposition<&conv1d>()},
};

}  // namespace

std::span<const DecompositionEntry> conv_decompositions() {
  return kDecompositions;
}

}  // namespace loom::ops
