// Decompositions of the view family: squeeze over several dims (squeeze.dims), as
// squeeze.dim from the last dim to the first, so the result is a view like each step.
#include <algorithm>

#include "decomposition.h"

namespace loom::ops {
namespace {

Tensor squeeze_dims(const Tensor& self, const IntList& dims) {
  const char* op = "loom::squeeze.dims";
  const int64_t rank = self.dim();
  const int64_t bound = std::max<int64_t>(rank, 1);
  std::vector<int64_t> wrapped;
  for (int64_t d : dims.span()) {
    if (d < -bound || d >= bound) {
      fail(op, "dimension ", d, " is out of range for a ", rank, "-dim tensor (expected [", -bound,
           ", ", bound - 1, "])");
    }
    int64_t w = d < 0 ? d + bound : d;
    if (std::find(wrapped.begin(), wrapped.end(), w) != wrapped.end()) {
      fail(op, "dimension ", w, " appears twice in dim");
    }
    wrapped.push_back(w);
  }
  std::sort(wrapped.rbegin(), wrapped.rend());
  Tensor out = self;  // a 0-dim tensor has nothing to squeeze: itself, as PyTorch's view of it
  for (int64_t d : wrapped) out = loom::squeeze(out, d);
  return out;
}

constexpr DecompositionEntry kDecompositions[] = {
    {"loom::squeeze.dims", decomposition<&squeeze_dims>()},
};

}  // namespace

std::span<const DecompositionEntry> view_decompositions() {
  return kDecompositions;
}

}  // namespace loom::ops
