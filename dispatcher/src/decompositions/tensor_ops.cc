// Decompositions of tensor-level ops: clone, contiguous.
#include "decomposition.h"

namespace loom::dispatch {
namespace {

Tensor clone_contiguous(const Tensor& self) {
  Tensor out = empty(self.sizes(), self.dtype(), self.device());
  loom::copy_(out, self);
  return out;
}

Tensor contiguous(const Tensor& self) {
  return self.is_contiguous() ? self : clone_contiguous(self);
}

constexpr DecompositionEntry kDecompositions[] = {
    {"loom::clone", decomposition<&clone_contiguous>()},
    {"loom::contiguous", decomposition<&contiguous>()},
};

}  // namespace

std::span<const DecompositionEntry> tensor_decompositions() {
  return kDecompositions;
}

}  // namespace loom::dispatch
