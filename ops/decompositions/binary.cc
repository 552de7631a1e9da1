// Decompositions of the binary family: pow with a number on either side (pow.Tensor_Scalar,
// pow.Scalar), which is pow.Tensor_Tensor with the number as a wrapped 0-dim tensor, so
// type promotion treats it as PyTorch treats a Python number.
#include "decomposition.h"

namespace loom::ops {
namespace {

Tensor pow_tensor_scalar(const Tensor& self, const Scalar& exponent) {
  return loom::pow(self, wrapped_scalar(exponent));
}

Tensor pow_scalar(const Scalar& self, const Tensor& exponent) {
  return loom::pow(wrapped_scalar(self), exponent);
}

constexpr DecompositionEntry kDecompositions[] = {
    {"loom::pow.Tensor_Scalar", decomposition<&pow_tensor_scalar>()},
    {"loom::pow.Scalar", decomposition<&pow_scalar>()},
};

}  // namespace

std::span<const DecompositionEntry> binary_decompositions() {
  return kDecompositions;
}

}  // namespace loom::ops
