// Decompositions of the sorting ops: argsort (the indices of sort), searchsorted and
// bucketize (counts of the boundaries below each value, by broadcast comparison or by
// merging), unique (runs of equal values in the sorted elements).
#include "decomposition.h"
#include "loom/core/type_promotion.h"

namespace loom::ops {
namespace {

Tensor argsort_indices(const Tensor& self, int64_t dim, bool descending) {
  return std::get<1>(loom::sort(self, dim, descending));
}

// Note [searchsorted by counting or merging]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The insertion index of v in a sorted row is the number of boundaries b with b < v
// (left) or b <= v (right); a NaN value's index is the row's length, as PyTorch's binary
// search gives it (every comparison with NaN is false). Two ways, both of ops every backend
// has:
// - counting: compare every value with every boundary of its row and count (!(b >= v),
//   !(b > v)): values x boundaries work and memory, the quickest for the short boundary
//   lists models use; taken while that product is at most kCountingElements;
// - merging: sort each row of values and boundaries together, values first for the left
//   side and boundaries first for the right; the sort is stable, so a value lands before
//   the boundaries equal to it (left) or after them (right), and its index is the number
//   of boundaries before it in the merged row (a cumsum over the sorted row, scattered
//   back through the sort's permutation): (values + boundaries) log work and linear
//   memory, so a long boundary list costs no more memory than its values.
// The two agree unless a boundary is NaN (a sorted row has them last): counting counts a
// NaN boundary below every value, merging counts it below NaN values on the right side
// only, and PyTorch's binary search gives either or neither, depending on where it probes.
constexpr int64_t kCountingElements = int64_t{1} << 22;

// Insertion indices of each row of `values` ([R, K]) in the same row of `boundaries`
// ([R, M]), by merging.
Tensor merged_insertion_indices(const Tensor& boundaries, const Tensor& values, bool right) {
  const int64_t m = boundaries.size(-1), k = values.size(-1);
  const Tensor merged =
      right ? loom::cat({boundaries, values}, -1) : loom::cat({values, boundaries}, -1);
  const Tensor order = std::get<1>(loom::sort(merged, -1, false));
  const Tensor is_boundary = right ? loom::lt(order, Scalar(m)) : loom::ge(order, Scalar(k));
  // At a value's sorted position, the inclusive count is the boundaries before it.
  const Tensor before = loom::cumsum(is_boundary, -1, ScalarType::Int64);
  Tensor at = empty(std::vector<int64_t>(before.sizes().begin(), before.sizes().end()),
                    ScalarType::Int64, before.device());
  loom::scatter_(at, -1, order, before);
  return at.narrow(-1, right ? m : 0, k);
}

Tensor insertion_indices(const char* op, const Tensor& sorted, const Tensor& values, bool right,
                         bool out_int32) {
  if (sorted.dim() == 0) fail(op, "expected a 1-D or N-D sorted sequence, found a 0-dim tensor");
  if (sorted.dim() > 1) {
    if (values.dim() != sorted.dim() ||
        !same_shape(values.sizes().first(static_cast<size_t>(values.dim() - 1)),
                    sorted.sizes().first(static_cast<size_t>(sorted.dim() - 1)))) {
      fail(op, "expected values with the sorted sequence's leading dims ",
           shape_to_string(sorted.sizes().first(static_cast<size_t>(sorted.dim() - 1))),
           ", found shape ", shape_to_string(values.sizes()));
    }
  }
  Tensor counts;
  if (values.numel() * sorted.size(-1) <= kCountingElements) {
    // [..., K, 1] against [..., 1, M] (or [M] for a 1-D sequence): count over M.
    Tensor column = values.unsqueeze(-1);
    Tensor row = sorted.dim() > 1 ? sorted.unsqueeze(-2) : sorted;
    Tensor below =
        right ? loom::logical_not(loom::gt(row, column)) : loom::logical_not(loom::ge(row, column));
    counts = loom::sum(below, IntList{-1});
  } else {
    // Rows [R, M] and [R, K]; a 1-D sequence is one row for all the values.
    const ScalarType dtype = promote_types(sorted.dtype(), values.dtype());
    const int64_t m = sorted.size(-1);
    Tensor rows = cast(sorted, dtype).reshape({-1, m});
    Tensor of_values = cast(values, dtype).reshape({rows.size(0), -1});
    counts = merged_insertion_indices(rows, of_values, right).reshape(values.sizes());
  }
  return out_int32 ? cast(counts, ScalarType::Int32) : counts;
}

Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& self, bool out_int32, bool right,
                    std::optional<std::string_view> side, const std::optional<Tensor>& sorter) {
  constexpr const char* op = "loom::searchsorted.Tensor";
  if (side) {
    if (*side != "left" && *side != "right") {
      fail(op, "expected side 'left' or 'right', found '", *side, "'");
    }
    if (*side == "left" && right) fail(op, "side 'left' contradicts right=True");
    right = *side == "right";
  }
  Tensor sorted = sorted_sequence;
  if (sorter) sorted = loom::gather(sorted_sequence, -1, *sorter);
  if (self.dim() == 0)
    return insertion_indices(op, sorted, self.view({1}), right, out_int32).view({});
  return insertion_indices(op, sorted, self, right, out_int32);
}

Tensor bucketize(const Tensor& self, const Tensor& boundaries, bool out_int32, bool right) {
  constexpr const char* op = "loom::bucketize.Tensor";
  if (boundaries.dim() != 1) {
    fail(op, "expected 1-D boundaries, found ", boundaries.dim(), " dims");
  }
  if (self.dim() == 0)
    return insertion_indices(op, boundaries, self.view({1}), right, out_int32).view({});
  return insertion_indices(op, boundaries, self, right, out_int32);
}

// Note [unique by sorting]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// unique (PyTorch's _unique2: torch.unique without dim) sorts the flattened elements
// (stably, NaN last) and marks where a run of equal values starts; the marked values are
// the result, ascending (also for sorted=False, where PyTorch allows any order). A NaN
// never equals the one before it, so every NaN stays, as in PyTorch. The run number of
// each sorted position (the cumsum of the marks, less one), scattered back through the
// sort's permutation, is the inverse (self's shape); counts are the run lengths. Outputs
// not asked for are empty [0] tensors, as PyTorch returns them. The result's size
// depends on the values, so meta tensors get an error from nonzero.
std::tuple<Tensor, Tensor, Tensor> unique_sorted(const Tensor& self, bool, bool return_inverse,
                                                 bool return_counts) {
  const Device device = self.device();
  const Tensor flat = loom::reshape(self, {-1});
  const int64_t n = flat.numel();
  auto none = [&] { return empty(std::vector<int64_t>{0}, ScalarType::Int64, device); };
  if (n == 0) {
    return {empty(std::vector<int64_t>{0}, self.dtype(), device),
            return_inverse ? empty(self.sizes(), ScalarType::Int64, device) : none(), none()};
  }
  auto [sorted, permutation] = loom::sort(flat, 0, false);
  Tensor starts = empty(std::vector<int64_t>{n}, ScalarType::Bool, device);
  loom::fill_(starts.narrow(0, 0, 1), Scalar(true));
  if (n > 1) {
    loom::copy_(starts.narrow(0, 1, n - 1),
                loom::ne(sorted.narrow(0, 1, n - 1), sorted.narrow(0, 0, n - 1)));
  }
  Tensor values = loom::masked_select(sorted, starts);
  if (!return_inverse && !return_counts) return {values, none(), none()};
  Tensor run = loom::sub(loom::cumsum(starts, 0), wrapped_scalar(Scalar(int64_t{1})));
  Tensor inverse = none();
  if (return_inverse) {
    inverse = empty(std::vector<int64_t>{n}, ScalarType::Int64, device);
    loom::scatter_(inverse, 0, permutation, run);
    inverse = inverse.view(self.sizes());
  }
  Tensor counts = return_counts ? loom::bincount(run) : none();
  return {values, inverse, counts};
}

constexpr DecompositionEntry kDecompositions[] = {
    {"loom::argsort", decomposition<&argsort_indices>()},
    {"loom::searchsorted.Tensor", decomposition<&searchsorted>()},
    {"loom::bucketize.Tensor", decomposition<&bucketize>()},
    {"loom::unique", decomposition<&unique_sorted>()},
};

}  // namespace

std::span<const DecompositionEntry> sort_decompositions() {
  return kDecompositions;
}

}  // namespace loom::ops
