// Decompositions of the ternary family: div with a rounding mode and a number for
// `other` (div.Scalar_mode and its in-place form), div.Tensor_mode with the number as a
// wrapped 0-dim tensor, which promotes as a Python number.
#include <optional>
#include <string>
#include <string_view>

#include "decomposition.h"

namespace loom::ops {
namespace {

std::optional<std::string> owned(std::optional<std::string_view> text) {
  if (!text) return std::nullopt;
  return std::string(*text);
}

Tensor div_scalar_mode(const Tensor& self, const Scalar& other,
                       std::optional<std::string_view> rounding_mode) {
  return loom::div(self, wrapped_scalar(other), owned(rounding_mode));
}

Tensor div_scalar_mode_(const Tensor& self, const Scalar& other,
                        std::optional<std::string_view> rounding_mode) {
  return loom::div_(self, wrapped_scalar(other), owned(rounding_mode));
}

constexpr DecompositionEntry kDecompositions[] = {
    {"loom::div.Scalar_mode", decomposition<&div_scalar_mode>()},
    {"loom::div_.Scalar_mode", decomposition<&div_scalar_mode_>()},
};

}  // namespace

std::span<const DecompositionEntry> ternary_decompositions() {
  return kDecompositions;
}

}  // namespace loom::ops
