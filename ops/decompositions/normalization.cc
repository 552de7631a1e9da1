// Decompositions of the normalization ops: layer_norm (the output of native_layer_norm),
// batch_norm, group_norm, instance_norm (group_norm with a group per channel), and Core
// ATen IR's forms with statistics: _native_batch_norm_legit (and its eval and no-stats
// forms), native_group_norm, native_layer_norm_backward.
#include "decomposition.h"
#include "loom/core/type_promotion.h"
#include "loom/dispatcher/local_dispatch_key_set.h"

namespace loom::ops {
namespace {

// Note [Running statistics]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// batch_norm and instance_norm update running_mean/var in place as a side effect. The
// update is no part of the function being differentiated (PyTorch makes it under no_grad):
// it records no history, so a buffer never joins the graph of the batch that updated it.
struct NoHistory {
  dispatch::ExcludeDispatchKeyGuard guard{DispatchKeySet(DispatchKey::Autograd)};
};

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

// Note [Normalizing channels]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// (x - mean) * rsqrt(var + eps) * weight + bias over the channels of dim 1 is computed as
// PyTorch's CPU kernel computes it: x * scale + shift with the per-channel
// scale = weight * rsqrt(var + eps) and shift = bias - mean * scale. The factors are
// C-element ops and the input is read and written once (one addcmul) where the four
// pointwise ops took four passes over it. The factors are in float32 at least (float16 and
// bfloat16 statistics), the result cast back to the input's dtype.
Tensor normalize_channels(const Tensor& input, const Tensor& mean, const Tensor& var,
                          const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                          double eps) {
  const int64_t ndim = input.dim();
  ScalarType factors = promote_types(promote_types(mean.dtype(), var.dtype()), ScalarType::Float32);
  if (weight) factors = promote_types(factors, weight->dtype());
  if (bias) factors = promote_types(factors, bias->dtype());
  Tensor scale = loom::rsqrt(loom::add(cast(var, factors), wrapped_number(eps)));
  if (weight) scale = loom::mul(scale, *weight);
  Tensor centred = loom::mul(cast(mean, factors), scale);
  Tensor shift = bias ? loom::sub(*bias, centred) : loom::neg(centred);
  Tensor y = loom::addcmul(channel_view(shift, ndim), input, channel_view(scale, ndim));
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
  // One var_mean: a backend with a kernel for it (the CPU) reads the input twice, not
  // three times (mean, then var's two passes). A channels-last input's statistics are
  // column reductions (the channels innermost), which the backends fold for adjacent
  // channels together: taken on the input itself.
  auto [var, mean] = loom::var_mean(input, dims, Scalar(int64_t{0}));
  if (running_mean) {
    NoHistory running_update;  // Note [Running statistics]
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

// Each sample's channel normalized over its spatial elements: group_norm with one group
// per channel. With running stats, they move towards the batch's average per-sample mean
// and unbiased variance; without use_input_stats the running stats normalize (eval mode).
Tensor instance_norm(const Tensor& input, const std::optional<Tensor>& weight,
                     const std::optional<Tensor>& bias, const std::optional<Tensor>& running_mean,
                     const std::optional<Tensor>& running_var, bool use_input_stats,
                     double momentum, double eps) {
  const char* op = "loom::instance_norm";
  if (input.dim() < 3) {
    fail(op, "expected an input of at least 3 dims (N, C, spatial...), found ", input.dim(),
         " dims");
  }
  const int64_t batch = input.size(0), channels = input.size(1);
  if (running_mean.has_value() != running_var.has_value()) {
    fail(op, "expected running_mean and running_var both given or both None");
  }
  if (!use_input_stats) {
    if (!running_mean) fail(op, "expected running stats when use_input_stats is false, found None");
    return loom::batch_norm(input, weight, bias, running_mean, running_var, false, momentum, eps);
  }
  const int64_t spatial = input.numel() / std::max<int64_t>(batch * channels, 1);
  if (spatial <= 1 && input.numel() > 0) {
    fail(op, "expected more than 1 spatial element per channel, found an input of shape ",
         shape_to_string(input.sizes()));
  }
  if (running_mean && input.numel() > 0) {
    check_channels(running_mean, "running_mean", channels, op);
    check_channels(running_var, "running_var", channels, op);
    NoHistory running_update;  // Note [Running statistics]
    Tensor rows = loom::contiguous(input).view({batch, channels, spatial});
    Tensor mean = loom::mean(loom::mean(rows, IntList{2}), IntList{0});
    Tensor var = loom::mean(loom::var(rows, IntList{2}), IntList{0});  // unbiased per sample
    Tensor keep = wrapped_number(1.0 - momentum), take = wrapped_number(momentum);
    loom::copy_(*running_mean, loom::add(loom::mul(*running_mean, keep),
                                         loom::mul(cast(mean, running_mean->dtype()), take)));
    loom::copy_(*running_var, loom::add(loom::mul(*running_var, keep),
                                        loom::mul(cast(var, running_var->dtype()), take)));
  }
  return loom::group_norm(input, channels, weight, bias, eps);
}

// Core ATen's eval-mode batch norm: batch_norm with the running statistics, and the
// empty saved mean and inverse deviation PyTorch returns in that mode.
std::tuple<Tensor, Tensor, Tensor> batch_norm_legit_no_training(
    const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
    const Tensor& running_mean, const Tensor& running_var, double momentum, double eps) {
  Tensor out =
      loom::batch_norm(input, weight, bias, running_mean, running_var, false, momentum, eps);
  return {out, zeros_of({0}, input.dtype(), input.device()),
          zeros_of({0}, input.dtype(), input.device())};
}

// The batch's per-channel mean and 1 / sqrt(biased var + eps), as the training form
// saves them (float32 at least).
std::pair<Tensor, Tensor> batch_statistics(const Tensor& input, double eps) {
  DimVector dims;
  for (int64_t d = 0; d < input.dim(); ++d) {
    if (d != 1) dims.push_back(d);
  }
  auto [var, mean] = loom::var_mean(input, dims, Scalar(int64_t{0}));
  return {mean, loom::rsqrt(loom::add(var, wrapped_number(eps)))};
}

std::tuple<Tensor, Tensor, Tensor> batch_norm_legit(const Tensor& input,
                                                    const std::optional<Tensor>& weight,
                                                    const std::optional<Tensor>& bias,
                                                    const Tensor& running_mean,
                                                    const Tensor& running_var, bool training,
                                                    double momentum, double eps) {
  if (!training) {
    return batch_norm_legit_no_training(input, weight, bias, running_mean, running_var, momentum,
                                        eps);
  }
  Tensor out =
      loom::batch_norm(input, weight, bias, running_mean, running_var, true, momentum, eps);
  auto [mean, rstd] = batch_statistics(input, eps);
  return {out, mean, rstd};
}

std::tuple<Tensor, Tensor, Tensor> batch_norm_legit_no_stats(const Tensor& input,
                                                             const std::optional<Tensor>& weight,
                                                             const std::optional<Tensor>& bias,
                                                             bool training, double momentum,
                                                             double eps) {
  // Without running statistics there are only the batch's, in either mode.
  Tensor out =
      loom::batch_norm(input, weight, bias, std::nullopt, std::nullopt, true, momentum, eps);
  auto [mean, rstd] = batch_statistics(input, eps);
  return {out, mean, rstd};
}

// group_norm with the per-(sample, group) mean and 1 / sqrt(var + eps), [N, group].
std::tuple<Tensor, Tensor, Tensor> native_group_norm(const Tensor& input,
                                                     const std::optional<Tensor>& weight,
                                                     const std::optional<Tensor>& bias, int64_t n,
                                                     int64_t c, int64_t hxw, int64_t group,
                                                     double eps) {
  const char* op = "loom::native_group_norm";
  if (input.dim() < 2 || input.size(0) != n || input.size(1) != c || input.numel() != n * c * hxw) {
    fail(op, "expected an input of N=", n, ", C=", c, " and HxW=", hxw,
         " elements per channel, found ", shape_to_string(input.sizes()));
  }
  Tensor out = loom::group_norm(input, group, weight, bias, eps);
  Tensor rows = loom::reshape(input, {n, group, -1});
  auto [var, mean] = loom::var_mean(rows, IntList{2}, Scalar(int64_t{0}));
  return {out, mean, loom::rsqrt(loom::add(var, wrapped_number(eps)))};
}

// group_norm's gradients, as layer_norm's (Note [layer_norm's gradients]) over each
// (sample, group) of C / group channels and HxW elements, with the per-channel weight
// applied before the group's means.
std::tuple<Tensor, Tensor, Tensor> native_group_norm_backward(
    const Tensor& grad_out, const Tensor& input, const Tensor& mean, const Tensor& rstd,
    const std::optional<Tensor>& weight, int64_t n, int64_t c, int64_t hxw, int64_t group,
    const std::vector<bool>& output_mask) {
  const char* op = "loom::native_group_norm_backward";
  if (output_mask.size() != 3)
    fail(op, "expected 3 output_mask values, found ", output_mask.size());
  if (group <= 0 || c % group != 0 || input.numel() != n * c * hxw ||
      !same_shape(grad_out.sizes(), input.sizes())) {
    fail(op, "expected input and grad_out of N=", n, ", C=", c, " (", group,
         " groups) and HxW=", hxw, ", found ", shape_to_string(input.sizes()), " and ",
         shape_to_string(grad_out.sizes()));
  }
  const std::vector<int64_t> grouped = {n, group, c / group, hxw};
  Tensor x = loom::reshape(input, grouped), g = loom::reshape(grad_out, grouped);
  Tensor m = loom::reshape(mean, {n, group, 1, 1}), r = loom::reshape(rstd, {n, group, 1, 1});
  Tensor x_hat = loom::mul(loom::sub(x, m), r);
  Tensor grad_input, grad_weight, grad_bias;
  if (output_mask[0]) {
    Tensor gw = weight ? loom::mul(g, loom::reshape(*weight, {1, group, c / group, 1})) : g;
    Tensor mean_g = loom::mean(gw, IntList{2, 3}, true);
    Tensor mean_gx = loom::mean(loom::mul(gw, x_hat), IntList{2, 3}, true);
    grad_input = loom::reshape(
        loom::mul(loom::sub(loom::sub(gw, mean_g), loom::mul(x_hat, mean_gx)), r), input.sizes());
  }
  if (output_mask[1])
    grad_weight = loom::reshape(loom::sum(loom::mul(g, x_hat), IntList{0, 3}, false), {c});
  if (output_mask[2]) grad_bias = loom::reshape(loom::sum(g, IntList{0, 3}, false), {c});
  return masked_gradients(grad_input, grad_weight, grad_bias, grad_out);
}

// Note [layer_norm's gradients]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// With x^ = (x - mean) * rstd over the normalized dims and g = grad_out * weight:
// grad_input = rstd * (g - mean(g) - x^ * mean(g * x^)), the means over the normalized
// dims; grad_weight = sum(grad_out * x^) and grad_bias = sum(grad_out) over the others.
std::tuple<Tensor, Tensor, Tensor> native_layer_norm_backward(
    const Tensor& grad_out, const Tensor& input, const IntList& normalized_shape,
    const Tensor& mean, const Tensor& rstd, const std::optional<Tensor>& weight,
    const std::optional<Tensor>& bias, const std::vector<bool>& output_mask) {
  const char* op = "loom::native_layer_norm_backward";
  const int64_t axis = input.dim() - static_cast<int64_t>(normalized_shape.size());
  if (axis < 0) {
    fail(op, "normalized_shape ", shape_to_string(normalized_shape.span()),
         " has more dims than the ", shape_to_string(input.sizes()), " input");
  }
  if (output_mask.size() != 3)
    fail(op, "expected 3 output_mask values, found ", output_mask.size());
  if (!same_shape(grad_out.sizes(), input.sizes())) {
    fail(op, "expected grad_out of the input's shape ", shape_to_string(input.sizes()), ", found ",
         shape_to_string(grad_out.sizes()));
  }
  DimVector normalized, batch;
  for (int64_t d = 0; d < input.dim(); ++d) (d < axis ? batch : normalized).push_back(d);
  Tensor x_hat = loom::mul(loom::sub(input, mean), rstd);
  Tensor grad_input, grad_weight, grad_bias;
  if (output_mask[0]) {
    Tensor g = weight ? loom::mul(grad_out, *weight) : grad_out;
    Tensor mean_g = loom::mean(g, normalized, true);
    Tensor mean_gx = loom::mean(loom::mul(g, x_hat), normalized, true);
    grad_input = loom::mul(loom::sub(loom::sub(g, mean_g), loom::mul(x_hat, mean_gx)), rstd);
  }
  auto over_batch = [&](const Tensor& t) { return batch.empty() ? t : loom::sum(t, batch, false); };
  if (output_mask[1] && weight) grad_weight = over_batch(loom::mul(grad_out, x_hat));
  if (output_mask[2] && bias) grad_bias = over_batch(grad_out);
  return masked_gradients(grad_input, grad_weight, grad_bias, grad_out);
}

constexpr DecompositionEntry kDecompositions[] = {
    {"loom::layer_norm", decomposition<&layer_norm>()},
    {"loom::batch_norm", decomposition<&batch_norm>()},
    {"loom::_native_batch_norm_legit_no_training", decomposition<&batch_norm_legit_no_training>()},
    {"loom::_native_batch_norm_legit", decomposition<&batch_norm_legit>()},
    {"loom::_native_batch_norm_legit.no_stats", decomposition<&batch_norm_legit_no_stats>()},
    {"loom::native_group_norm", decomposition<&native_group_norm>()},
    {"loom::native_layer_norm_backward", decomposition<&native_layer_norm_backward>()},
    {"loom::native_group_norm_backward", decomposition<&native_group_norm_backward>()},
    {"loom::group_norm", decomposition<&group_norm>()},
    {"loom::instance_norm", decomposition<&instance_norm>()},
};

}  // namespace

std::span<const DecompositionEntry> normalization_decompositions() {
  return kDecompositions;
}

}  // namespace loom::ops
