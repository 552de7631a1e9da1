// Gradient clipping, as torch.nn.utils.clip_grad_norm_ and clip_grad_value_.
#pragma once

#include <optional>
#include <vector>

#include "loom/ops/tensor.h"

namespace loom::optim {

// Scales every gradient by min(1, max_norm / (total_norm + 1e-6)), total_norm being the
// norm_type norm of all gradients together (inf: the largest magnitude); returns
// total_norm. Parameters without a gradient are skipped. error_if_nonfinite: a NaN or
// infinite total norm is an error instead of scaling by it. foreach: take the norms and
// scale with the foreach ops over all gradients (the same bits); unset, as the optimizers
// decide (use_foreach in optimizer.h).
double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm,
                       double norm_type = 2.0, bool error_if_nonfinite = false,
                       std::optional<bool> foreach = std::nullopt);
// Clamps every gradient to [-clip_value, clip_value].
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);

}  // namespace loom::optim
