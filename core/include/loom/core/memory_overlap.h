// Whether a tensor's elements share memory with each other or with another tensor's:
// the checks that keep a write from reading its own output (Note [Overlapping writes]).
#pragma once

#include "loom/core/tensor_impl.h"

namespace loom {

// Note [Overlapping writes]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// A kernel that writes a tensor assumes each of its elements has memory of its own and
// that no input changes under it. Neither holds for
//   - a written tensor with internal overlap: a [1,5] row expanded to [4,5] (stride 0),
//     where add_ would add four times into each cell;
//   - a written tensor that partially overlaps an input: `a.add_(a[0])` with the row
//     broadcast, or out= a shifted view of an input, where the result depends on the
//     order the kernel visits elements in.
// The dispatcher refuses both for every `Tensor(a!)` argument of a call, before any
// kernel runs, as PyTorch does (its has_internal_overlap and assert_no_partial_overlap):
// only the overlaps known for certain are refused, exact aliasing (`add_(a, a)`, out= an
// input) stays allowed, and ops whose write is idempotent (fill_) may opt out of the
// internal check. Layouts too irregular to decide cheaply are let through, as PyTorch
// lets them through.

enum class InternalOverlap { No, Yes, TooHard };
enum class Overlap { No, Full, Partial, TooHard };

// True when the elements cover a dense block of memory once each, in some dim order.
bool is_non_overlapping_and_dense(const TensorImpl& t);

// Yes when a dim of size > 1 has stride 0 (an expanded tensor); No when the tensor is
// non-overlapping and dense; TooHard otherwise.
InternalOverlap internal_overlap(const TensorImpl& t);

// How the memory of `a` and `b` overlaps: Full when they are the same tensor or cover
// the same block, Partial when dense blocks of one storage intersect otherwise, No when
// they share no memory or either is empty, TooHard when either is not dense.
Overlap overlap(const TensorImpl& a, const TensorImpl& b);

}  // namespace loom
