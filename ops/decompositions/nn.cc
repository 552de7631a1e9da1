// Decompositions of the nn ops: layer_norm, batch_norm, group_norm, cross_entropy_loss,
// mse_loss, binary_cross_entropy_with_logits, pad.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "decomposition.h"

#include "loom/core/type_promotion.h"

namespace loom::ops {
namespace {

// A 0-dim int64 CPU tensor flagged as a wrapped number.
Tensor wrapped_integer(int64_t value) {
  Tensor t = empty({}, ScalarType::Int64, Device{kCPU, -1});
  *static_cast<int64_t*>(t.data_ptr()) = value;
  t.impl()->set_wrapped_number(true);
  return t;
}

// The losses' reduction (PyTorch's enum: 0 none, 1 mean, 2 sum).
void check_reduction(int64_t reduction, const char* op) {
  if (reduction < 0 || reduction > 2) {
    fail(op, "reduction ", reduction, " is not one of 0 (none), 1 (mean), 2 (sum)");
  }
}

Tensor reduce_loss(const Tensor& loss, int64_t reduction) {
  if (reduction == 1) return loom::mean(loss);
  if (reduction == 2) return loom::sum(loss);
  return loss;
}

// A per-channel [C] tensor viewed as [1, C, 1, ...] to broadcast against an input of
// `ndim` dims whose channels are dim 1.
Tensor channel_view(const Tensor& t, int64_t ndim) {
  DimVector shape(static_cast<size_t>(ndim), 1);
  shape[1] = t.numel();
  return loom::contiguous(t).view(shape);
}

void check_channels(const std::optional<Tensor>& t, const char* name, int64_t channels,
                    const char* op) {
  if (t && (t->dim() != 1 || t->numel() != channels)) {
    fail(op, "expected ", name, " of shape [", channels, "] (one per channel), found ",
         shape_to_string(t->sizes()));
  }
}

Tensor layer_norm(const Tensor& input, const IntList& normalized_shape,
                  const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                  double eps) {
  return std::get<0>(loom::native_layer_norm(input, normalized_shape, weight, bias, eps));
}

// (x - mean) * rsqrt(var + eps) * weight + bias over the channels of dim 1, in the
// input's dtype.
Tensor normalize_channels(const Tensor& input, const Tensor& mean, const Tensor& var,
                          const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                          double eps) {
  const int64_t ndim = input.dim();
  Tensor scale = loom::rsqrt(loom::add(channel_view(var, ndim), wrapped_number(eps)));
  Tensor y = loom::mul(loom::sub(input, channel_view(mean, ndim)), scale);
  if (weight) y = loom::mul(y, channel_view(*weight, ndim));
  if (bias) y = loom::add(y, channel_view(*bias, ndim));
  return cast(y, input.dtype());
}

// Note [batch_norm statistics]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Training normalizes with the batch's mean and biased variance over every dim but the
// channels (dim 1) and, when running stats are given, updates them in place:
// running = (1 - momentum) * running + momentum * batch, with the unbiased variance
// (n / (n - 1) times the biased one), as PyTorch. Evaluation normalizes with the running
// stats. An empty input gives an empty output and leaves the running stats alone.
Tensor batch_norm(const Tensor& input, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& bias, const std::optional<Tensor>& running_mean,
                  const std::optional<Tensor>& running_var, bool training, double momentum,
                  double eps) {
  const char* op = "loom::batch_norm";
  if (input.dim() < 2) {
    fail(op, "expected an input of at least 2 dims (N, C, ...), found ", input.dim(), " dims");
  }
  if (!is_floating_point(input.dtype())) {
    fail(op, "expected a floating point input, found ", scalar_type_name(input.dtype()));
  }
  const int64_t channels = input.size(1);
  check_channels(weight, "weight", channels, op);
  check_channels(bias, "bias", channels, op);
  check_channels(running_mean, "running_mean", channels, op);
  check_channels(running_var, "running_var", channels, op);
  if (running_mean.has_value() != running_var.has_value()) {
    fail(op, "expected running_mean and running_var both given or both None");
  }
  if (!training && !running_mean) {
    fail(op, "expected running_mean and running_var when training is false, found None");
  }
  if (input.numel() == 0) return loom::clone(input);
  if (!training) return normalize_channels(input, *running_mean, *running_var, weight, bias, eps);

  const int64_t per_channel = input.numel() / channels;
  if (per_channel <= 1) {
    fail(op, "expected more than 1 value per channel when training, found an input of shape ",
         shape_to_string(input.sizes()));
  }
  DimVector dims;
  for (int64_t d = 0; d < input.dim(); ++d) {
    if (d != 1) dims.push_back(d);
  }
  Tensor mean = loom::mean(input, dims);
  Tensor var = loom::var(input, dims, Scalar(int64_t{0}));
  if (running_mean) {
    Tensor keep = wrapped_number(1.0 - momentum), take = wrapped_number(momentum);
    loom::copy_(*running_mean, loom::add(loom::mul(*running_mean, keep),
                                         loom::mul(cast(mean, running_mean->dtype()), take)));
    double unbias = static_cast<double>(per_channel) / static_cast<double>(per_channel - 1);
    Tensor unbiased = loom::mul(cast(var, running_var->dtype()), wrapped_number(unbias));
    loom::copy_(*running_var, loom::add(loom::mul(*running_var, keep), loom::mul(unbiased, take)));
  }
  return normalize_channels(input, mean, var, weight, bias, eps);
}

// Each sample's channels split into groups; a group (its channels and every spatial
// element) is normalized as one layer_norm row, then the per-channel affine applies.
Tensor group_norm(const Tensor& input, int64_t num_groups, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& bias, double eps) {
  const char* op = "loom::group_norm";
  if (input.dim() < 2) {
    fail(op, "expected an input of at least 2 dims (N, C, ...), found ", input.dim(), " dims");
  }
  const int64_t batch = input.size(0), channels = input.size(1);
  if (num_groups <= 0 || channels % num_groups != 0) {
    fail(op, "expected the number of channels ", channels, " to be divisible by num_groups ",
         num_groups);
  }
  check_channels(weight, "weight", channels, op);
  check_channels(bias, "bias", channels, op);
  int64_t group_size = channels / num_groups;
  for (int64_t d = 2; d < input.dim(); ++d) group_size *= input.size(d);
  Tensor rows = loom::contiguous(input).view({batch, num_groups, group_size});
  const std::optional<Tensor> no_affine;
  Tensor y = loom::layer_norm(rows, {group_size}, no_affine, no_affine, eps).view(input.sizes());
  if (weight) y = loom::mul(y, channel_view(*weight, input.dim()));
  if (bias) y = loom::add(y, channel_view(*bias, input.dim()));
  return cast(y, input.dtype());
}

// Note [cross_entropy_loss]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// log_softmax over the class dim (1, or 0 for a 1-D input) then nll_loss for class-index
// targets; for class-probability targets (a floating target shaped like the input) the
// loss is -sum_c weight_c * target_c * logp_c, and `mean` averages over the samples.
// Label smoothing mixes (1 - s) * nll with s / C times the smoothing term
// -sum_c weight_c * logp_c (zero at ignored targets); its `mean` divides by the same
// total weight as nll_loss's, computed as nll_loss(-1, target, weight, sum).
Tensor cross_entropy_loss(const Tensor& self, const Tensor& target,
                          const std::optional<Tensor>& weight, int64_t reduction,
                          int64_t ignore_index, double label_smoothing) {
  const char* op = "loom::cross_entropy_loss";
  check_reduction(reduction, op);
  if (self.dim() < 1) fail(op, "expected an input of at least 1 dim, found 0 dims");
  if (!(label_smoothing >= 0.0 && label_smoothing <= 1.0)) {
    fail(op, "expected label_smoothing in [0, 1], found ", label_smoothing);
  }
  const int64_t class_dim = self.dim() == 1 ? 0 : 1;
  const int64_t classes = self.size(class_dim);
  if (weight && (weight->dim() != 1 || weight->numel() != classes)) {
    fail(op, "expected a weight of shape [", classes, "] (one per class), found ",
         shape_to_string(weight->sizes()));
  }
  Tensor logp = loom::log_softmax(self, class_dim);
  auto class_weighted = [&](const Tensor& t) {
    if (!weight) return t;
    return loom::mul(t, self.dim() == 1 ? *weight : channel_view(*weight, self.dim()));
  };
  const double smoothing_share = label_smoothing / static_cast<double>(classes);

  if (is_floating_point(target.dtype())) {
    if (!std::ranges::equal(target.sizes(), self.sizes())) {
      fail(op, "expected class probabilities of the input's shape ", shape_to_string(self.sizes()),
           ", found ", shape_to_string(target.sizes()));
    }
    if (ignore_index >= 0) {  // PyTorch's check: only the default (negative) is allowed
      fail(op, "expected no ignore_index with class probabilities, found ", ignore_index);
    }
    Tensor probs = target;
    if (label_smoothing > 0) {
      probs = loom::add(loom::mul(target, wrapped_number(1.0 - label_smoothing)),
                        wrapped_number(smoothing_share));
    }
    Tensor loss = loom::neg(loom::sum(class_weighted(loom::mul(logp, probs)), {class_dim}));
    return reduce_loss(loss, reduction);
  }

  Tensor nll = loom::nll_loss(logp, target, weight, reduction, ignore_index);
  if (label_smoothing == 0) return nll;
  Tensor smooth = loom::neg(loom::sum(class_weighted(logp), {class_dim}));
  Tensor kept = cast(loom::ne(target, wrapped_integer(ignore_index)), smooth.dtype());
  smooth = loom::mul(smooth, kept);
  if (reduction == 1) {
    Tensor minus_one = empty(logp.sizes(), logp.dtype(), logp.device());
    loom::fill_(minus_one, Scalar(-1.0));
    Tensor total_weight = loom::nll_loss(minus_one, target, weight, 2, ignore_index);
    smooth = loom::div(loom::sum(smooth), total_weight);
  } else if (reduction == 2) {
    smooth = loom::sum(smooth);
  }
  return loom::add(loom::mul(nll, wrapped_number(1.0 - label_smoothing)),
                   loom::mul(smooth, wrapped_number(smoothing_share)));
}

Tensor mse_loss(const Tensor& self, const Tensor& target, int64_t reduction) {
  check_reduction(reduction, "loom::mse_loss");
  Tensor diff = loom::sub(self, target);
  return reduce_loss(loom::mul(diff, diff), reduction);
}

// (1 - t) * x + w_pos * log(1 + exp(-x)), with log(1 + exp(-x)) computed as
// relu(-x) + log1p(exp(-|x|)) (no overflow for large |x|) and w_pos = 1 + (pos_weight - 1) * t.
Tensor binary_cross_entropy_with_logits(const Tensor& self, const Tensor& target,
                                        const std::optional<Tensor>& weight,
                                        const std::optional<Tensor>& pos_weight,
                                        int64_t reduction) {
  const char* op = "loom::binary_cross_entropy_with_logits";
  check_reduction(reduction, op);
  if (!std::ranges::equal(target.sizes(), self.sizes())) {
    fail(op, "expected a target of the input's shape ", shape_to_string(self.sizes()), ", found ",
         shape_to_string(target.sizes()));
  }
  Tensor one = wrapped_number(1.0);
  Tensor log_one_plus_exp_neg =
      loom::add(loom::relu(loom::neg(self)), loom::log1p(loom::exp(loom::neg(loom::abs(self)))));
  if (pos_weight) {
    Tensor log_weight = loom::add(loom::mul(loom::sub(*pos_weight, one), target), one);
    log_one_plus_exp_neg = loom::mul(log_weight, log_one_plus_exp_neg);
  }
  Tensor loss = loom::add(loom::mul(loom::sub(one, target), self), log_one_plus_exp_neg);
  if (weight) loss = loom::mul(loss, *weight);
  return reduce_loss(loss, reduction);
}

// Note [pad]
// ~~~~~~~~~~
// `pad` lists (before, after) pairs from the last dim backwards. Constant mode fills a
// new tensor with the value and copies the input's overlap into a narrowed view of it
// (negative pads crop). The other modes pad one dim at a time (so corners come from the
// already padded dims), copying single slices: reflect mirrors without repeating the edge,
// replicate repeats the edge, circular wraps around.
Tensor pad_constant(const Tensor& self, std::span<const int64_t> pad, double value) {
  const int64_t ndim = self.dim();
  DimVector sizes(self.sizes().begin(), self.sizes().end());
  Tensor source = self;
  DimVector out_start(static_cast<size_t>(ndim), 0);
  bool empty_overlap = false;
  for (size_t p = 0; p < pad.size() / 2; ++p) {
    const int64_t d = ndim - 1 - static_cast<int64_t>(p);
    const int64_t before = pad[2 * p], after = pad[2 * p + 1];
    const int64_t size = self.size(d);
    sizes[d] = size + before + after;
    if (sizes[d] < 0) {
      fail("loom::pad", "padding (", before, ", ", after, ") of dim ", d, " of size ", size,
           " gives a negative size ", sizes[d]);
    }
    const int64_t crop_before = std::max<int64_t>(-before, 0);
    const int64_t length = size - crop_before - std::max<int64_t>(-after, 0);
    if (length <= 0) {
      empty_overlap = true;
      continue;
    }
    source = source.narrow(d, crop_before, length);
    out_start[d] = std::max<int64_t>(before, 0);
  }
  Tensor out = empty(sizes, self.dtype(), self.device());
  loom::fill_(out, Scalar(value));
  if (empty_overlap || source.numel() == 0) return out;
  Tensor target = out;
  for (int64_t d = 0; d < ndim; ++d) target = target.narrow(d, out_start[d], source.size(d));
  loom::copy_(target, source);
  return out;
}

Tensor pad_dim(const Tensor& self, int64_t d, int64_t before, int64_t after,
               std::string_view mode) {
  const int64_t size = self.size(d);
  const bool reflect = mode == "reflect", circular = mode == "circular";
  if (before < 0 || after < 0) {
    fail("loom::pad", "expected non-negative padding in mode '", mode, "', found (", before, ", ",
         after, ") for dim ", d);
  }
  const int64_t limit = reflect ? size - 1 : circular ? size : (size > 0 ? INT64_MAX : 0);
  if (before > limit || after > limit) {
    fail("loom::pad", "padding (", before, ", ", after, ") of dim ", d, " of size ", size,
         " is too large for mode '", mode, "' (at most ", limit, ")");
  }
  DimVector sizes(self.sizes().begin(), self.sizes().end());
  sizes[d] = size + before + after;
  Tensor out = empty(sizes, self.dtype(), self.device());
  if (out.numel() == 0) return out;
  loom::copy_(out.narrow(d, before, size), self);
  for (int64_t i = 0; i < before; ++i) {
    int64_t src = reflect ? before - i : circular ? size - before + i : 0;
    loom::copy_(out.narrow(d, i, 1), self.narrow(d, src, 1));
  }
  for (int64_t j = 0; j < after; ++j) {
    int64_t src = reflect ? size - 2 - j : circular ? j : size - 1;
    loom::copy_(out.narrow(d, before + size + j, 1), self.narrow(d, src, 1));
  }
  return out;
}

Tensor pad(const Tensor& self, const IntList& pad_list, std::string_view mode,
           std::optional<double> value) {
  std::span<const int64_t> pad = pad_list.span();
  if (pad.size() % 2 != 0 || static_cast<int64_t>(pad.size()) > 2 * self.dim()) {
    fail("loom::pad", "expected an even number of pads, at most 2 per dim (", 2 * self.dim(),
         "), found ", pad.size());
  }
  if (mode == "constant") return pad_constant(self, pad, value.value_or(0.0));
  if (mode != "reflect" && mode != "replicate" && mode != "circular") {
    fail("loom::pad", "expected mode 'constant', 'reflect', 'replicate' or 'circular', found '",
         mode, "'");
  }
  if (value && *value != 0.0) {
    fail("loom::pad", "expected no value in mode '", mode, "', found ", *value);
  }
  Tensor out = self;
  for (size_t p = 0; p < pad.size() / 2; ++p) {
    out = pad_dim(out, self.dim() - 1 - static_cast<int64_t>(p), pad[2 * p], pad[2 * p + 1], mode);
  }
  return out.is_alias_of(self) ? loom::clone(self) : out;
}

constexpr DecompositionEntry kDecompositions[] = {
    {"loom::layer_norm", decomposition<&layer_norm>()},
    {"loom::batch_norm", decomposition<&batch_norm>()},
    {"loom::group_norm", decomposition<&group_norm>()},
    {"loom::cross_entropy_loss", decomposition<&cross_entropy_loss>()},
    {"loom::mse_loss", decomposition<&mse_loss>()},
    {"loom::binary_cross_entropy_with_logits", decomposition<&binary_cross_entropy_with_logits>()},
    {"loom::pad", decomposition<&pad>()},
};

}  // namespace

std::span<const DecompositionEntry> nn_decompositions() {
  return kDecompositions;
}

}  // namespace loom::ops
