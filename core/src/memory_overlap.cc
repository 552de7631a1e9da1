// Memory overlap of tensors (Note [Overlapping writes]).
#include "loom/core/memory_overlap.h"

#include <algorithm>

namespace loom {

bool is_non_overlapping_and_dense(const TensorImpl& t) {
  if (t.is_contiguous()) return true;
  const int64_t rank = t.dim();
  const int64_t* sizes = t.sizes_data();
  const int64_t* strides = t.strides_data();
  // Dims of size 1 place nothing; the others, smallest stride first, must each step over
  // exactly the block of the dims below them.
  absl::InlinedVector<int64_t, 6> order;
  for (int64_t d = 0; d < rank; ++d) {
    if (sizes[d] != 1) order.push_back(d);
  }
  std::sort(order.begin(), order.end(),
            [&](int64_t a, int64_t b) { return strides[a] < strides[b]; });
  int64_t expected = 1;
  for (int64_t d : order) {
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

InternalOverlap internal_overlap(const TensorImpl& t) {
  if (t.is_contiguous()) return InternalOverlap::No;
  const int64_t* sizes = t.sizes_data();
  const int64_t* strides = t.strides_data();
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (strides[d] == 0 && sizes[d] > 1) return InternalOverlap::Yes;
  }
  return is_non_overlapping_and_dense(t) ? InternalOverlap::No : InternalOverlap::TooHard;
}

Overlap overlap(const TensorImpl& a, const TensorImpl& b) {
  if (&a == &b) return Overlap::Full;
  if (a.numel() == 0 || b.numel() == 0) return Overlap::No;
  if (a.storage().get() != b.storage().get()) return Overlap::No;
  if (!is_non_overlapping_and_dense(a) || !is_non_overlapping_and_dense(b)) {
    return Overlap::TooHard;
  }
  // Byte ranges in the storage: dtypes may differ (a view of another dtype).
  const int64_t a_start = a.storage_offset() * static_cast<int64_t>(element_size(a.dtype()));
  const int64_t b_start = b.storage_offset() * static_cast<int64_t>(element_size(b.dtype()));
  const int64_t a_end = a_start + a.numel() * static_cast<int64_t>(element_size(a.dtype()));
  const int64_t b_end = b_start + b.numel() * static_cast<int64_t>(element_size(b.dtype()));
  if (a_start == b_start && a_end == b_end) return Overlap::Full;
  if (a_start < b_end && b_start < a_end) return Overlap::Partial;
  return Overlap::No;
}

}  // namespace loom
