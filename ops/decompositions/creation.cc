// Decompositions of the creation ops: eye.
#include "decomposition.h"
#include "loom/core/type_promotion.h"

namespace loom::ops {
namespace {

// Zeros with ones on the main diagonal (a view of out).
Tensor eye_out(int64_t n, int64_t m, const Tensor& out) {
  if (n < 0 || m < 0) fail("loom::eye", "expected non-negative sizes, found n=", n, " m=", m);
  if (out.dim() != 2 || out.sizes()[0] != n || out.sizes()[1] != m) {
    fail("loom::eye", "expected out of shape [", n, ", ", m, "], found ",
         shape_to_string(out.sizes()));
  }
  if (out.numel() == 0) return out;
  loom::fill_(out, 0);
  loom::fill_(out.diagonal(), 1);
  return out;
}

constexpr DecompositionEntry kDecompositions[] = {
    {"loom::eye.m_out", decomposition<&eye_out>()},
};

}  // namespace

std::span<const DecompositionEntry> creation_decompositions() {
  return kDecompositions;
}

}  // namespace loom::ops
