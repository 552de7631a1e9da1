// Decompositions of the binary family: the ops with a number on one side (pow.Tensor_Scalar,
// pow.Scalar and the .Scalar overloads of the arithmetic, bitwise and comparison ops), each
// its Tensor overload with the number as a wrapped 0-dim tensor, so type promotion treats
// it as PyTorch treats a Python number.
#include "decomposition.h"

namespace loom::ops {
namespace {

// An integer tensor to a negative integer number is refused, as PyTorch refuses it; with a
// tensor of exponents the elements follow integer pow (1 and -1 stay powers, others give 0).
Tensor pow_tensor_scalar(const Tensor& self, const Scalar& exponent) {
  if (is_integral(self.dtype(), /*include_bool=*/true) && exponent.is_integral() &&
      exponent.to_int() < 0) {
    fail("loom::pow.Tensor_Scalar",
         "integers to negative integer powers are not allowed: expected an exponent >= 0 for "
         "a ",
         scalar_type_name(self.dtype()), " tensor, found ", exponent.to_int());
  }
  return loom::pow(self, wrapped_scalar(exponent));
}

Tensor pow_scalar(const Scalar& self, const Tensor& exponent) {
  return loom::pow(wrapped_scalar(self), exponent);
}

// `op(self, other, alpha)` for the ops with an alpha (add, sub and their in-place forms).
template <Tensor (*op)(const Tensor&, const Tensor&, const Scalar&)>
Tensor with_number_and_alpha(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  return op(self, wrapped_scalar(other), alpha);
}

template <Tensor (*op)(const Tensor&, const Tensor&)>
Tensor with_number(const Tensor& self, const Scalar& other) {
  return op(self, wrapped_scalar(other));
}

constexpr DecompositionEntry kDecompositions[] = {
    {"loom::pow.Tensor_Scalar", decomposition<&pow_tensor_scalar>()},
    {"loom::pow.Scalar", decomposition<&pow_scalar>()},
    {"loom::add.Scalar", decomposition<&with_number_and_alpha<&loom::add>>()},
    {"loom::add_.Scalar", decomposition<&with_number_and_alpha<&loom::add_>>()},
    {"loom::sub.Scalar", decomposition<&with_number_and_alpha<&loom::sub>>()},
    {"loom::sub_.Scalar", decomposition<&with_number_and_alpha<&loom::sub_>>()},
    {"loom::mul.Scalar", decomposition<&with_number<&loom::mul>>()},
    {"loom::mul_.Scalar", decomposition<&with_number<&loom::mul_>>()},
    {"loom::div.Scalar", decomposition<&with_number<&loom::div>>()},
    {"loom::div_.Scalar", decomposition<&with_number<&loom::div_>>()},
    {"loom::remainder.Scalar", decomposition<&with_number<&loom::remainder>>()},
    {"loom::remainder_.Scalar", decomposition<&with_number<&loom::remainder_>>()},
    {"loom::fmod.Scalar", decomposition<&with_number<&loom::fmod>>()},
    {"loom::fmod_.Scalar", decomposition<&with_number<&loom::fmod_>>()},
    {"loom::bitwise_and.Scalar", decomposition<&with_number<&loom::bitwise_and>>()},
    {"loom::bitwise_and_.Scalar", decomposition<&with_number<&loom::bitwise_and_>>()},
    {"loom::bitwise_or.Scalar", decomposition<&with_number<&loom::bitwise_or>>()},
    {"loom::bitwise_or_.Scalar", decomposition<&with_number<&loom::bitwise_or_>>()},
    {"loom::bitwise_xor.Scalar", decomposition<&with_number<&loom::bitwise_xor>>()},
    {"loom::bitwise_xor_.Scalar", decomposition<&with_number<&loom::bitwise_xor_>>()},
    {"loom::eq.Scalar", decomposition<&with_number<&loom::eq>>()},
    {"loom::ne.Scalar", decomposition<&with_number<&loom::ne>>()},
    {"loom::lt.Scalar", decomposition<&with_number<&loom::lt>>()},
    {"loom::le.Scalar", decomposition<&with_number<&loom::le>>()},
    {"loom::gt.Scalar", decomposition<&with_number<&loom::gt>>()},
    {"loom::ge.Scalar", decomposition<&with_number<&loom::ge>>()},
};

}  // namespace

std::span<const DecompositionEntry> binary_decompositions() {
  return kDecompositions;
}

}  // namespace loom::ops
