// Normalization layers over batch_norm, layer_norm and group_norm.
#include "loom/nn/normalization.h"

#include "loom/autograd.h"
#include "loom/core/error.h"
#include "loom/core/type_promotion.h"
#include "loom/factories.h"
#include "loom/ops/generated/ops.h"
#include "loom/tensor_io.h"

namespace loom::nn {
namespace {

std::optional<Tensor> optional(const Tensor& t) {
  return t.defined() ? std::optional<Tensor>(t) : std::nullopt;
}

const BatchNormOptions& checked(const BatchNormOptions& o, const char* type_name) {
  LOOM_CHECK(o.num_features() > 0, str_cat("nn::", type_name), "expected num_features > 0, found ",
             o.num_features());
  LOOM_CHECK(o.eps() > 0, str_cat("nn::", type_name), "expected eps > 0, found ", o.eps());
  return o;
}

}  // namespace

BatchNormImplBase::BatchNormImplBase(const char* type_name, const BatchNormOptions& o)
    : Module(type_name),
      options(checked(o, type_name)),
      weight(register_parameter("weight", o.affine() ? loom::ones({o.num_features()}) : Tensor())),
      bias(register_parameter("bias", o.affine() ? loom::zeros({o.num_features()}) : Tensor())),
      running_mean(register_buffer(
          "running_mean", o.track_running_stats() ? loom::zeros({o.num_features()}) : Tensor())),
      running_var(register_buffer(
          "running_var", o.track_running_stats() ? loom::ones({o.num_features()}) : Tensor())),
      num_batches_tracked(register_buffer(
          "num_batches_tracked", o.track_running_stats()
                                     ? loom::zeros({}, TensorOptions().dtype(ScalarType::Int64))
                                     : Tensor())) {}

void BatchNormImplBase::reset_running_stats() {
  if (!options.track_running_stats()) return;
  NoGradGuard no_grad;
  loom::fill_(running_mean, 0);
  loom::fill_(running_var, 1);
  loom::fill_(num_batches_tracked, 0);
}

void BatchNormImplBase::reset_parameters() {
  reset_running_stats();
  if (!options.affine()) return;
  NoGradGuard no_grad;
  loom::fill_(weight, 1);
  loom::fill_(bias, 0);
}

Tensor BatchNormImplBase::forward(const Tensor& input) {
  check_input(input);
  LOOM_CHECK(input.sizes()[1] == options.num_features(), str_cat("nn::", type_name()), "expected ",
             options.num_features(), " channels (dim 1), found shape ",
             shape_to_string(input.sizes()));
  // Batch statistics when training or when there are no running ones (PyTorch's rule).
  const bool use_batch_stats = is_training() || !options.track_running_stats();
  double momentum = options.momentum().value_or(0.0);
  if (is_training() && options.track_running_stats()) {
    NoGradGuard no_grad;
    loom::add_(num_batches_tracked, loom::ones_like(num_batches_tracked));
    if (!options.momentum()) {
      momentum = 1.0 / static_cast<double>(num_batches_tracked.item<int64_t>());
    }
  }
  const bool pass_stats = !is_training() || options.track_running_stats();
  return loom::batch_norm(
      input, optional(weight), optional(bias), pass_stats ? optional(running_mean) : std::nullopt,
      pass_stats ? optional(running_var) : std::nullopt, use_batch_stats, momentum, options.eps());
}

std::string BatchNormImplBase::extra_repr() const {
  return str_cat(options.num_features(), ", eps=", options.eps(), ", momentum=",
                 options.momentum() ? str_cat(*options.momentum()) : std::string("None"),
                 ", affine=", options.affine() ? "true" : "false",
                 ", track_running_stats=", options.track_running_stats() ? "true" : "false");
}

void BatchNorm1dImpl::check_input(const Tensor& input) const {
  LOOM_CHECK(input.dim() == 2 || input.dim() == 3, "nn::BatchNorm1d",
             "expected a 2D or 3D input, found shape ", shape_to_string(input.sizes()));
}

void BatchNorm2dImpl::check_input(const Tensor& input) const {
  LOOM_CHECK(input.dim() == 4, "nn::BatchNorm2d", "expected a 4D input, found shape ",
             shape_to_string(input.sizes()));
}

LayerNormImpl::LayerNormImpl(const LayerNormOptions& o)
    : Module("LayerNorm"),
      options(o),
      weight(register_parameter(
          "weight", o.elementwise_affine() ? loom::ones(o.normalized_shape()) : Tensor())),
      bias(register_parameter("bias", o.elementwise_affine() && o.bias()
                                          ? loom::zeros(o.normalized_shape())
                                          : Tensor())) {}

Tensor LayerNormImpl::forward(const Tensor& input) const {
  return loom::layer_norm(input, options.normalized_shape(), optional(weight), optional(bias),
                          options.eps());
}

std::string LayerNormImpl::extra_repr() const {
  return str_cat(shape_to_string(options.normalized_shape()), ", eps=", options.eps(),
                 ", elementwise_affine=", options.elementwise_affine() ? "true" : "false");
}

GroupNormImpl::GroupNormImpl(const GroupNormOptions& o)
    : Module("GroupNorm"),
      options(o),
      weight(register_parameter("weight", o.affine() ? loom::ones({o.num_channels()}) : Tensor())),
      bias(register_parameter("bias", o.affine() ? loom::zeros({o.num_channels()}) : Tensor())) {
  LOOM_CHECK(o.num_groups() > 0 && o.num_channels() % o.num_groups() == 0, "nn::GroupNorm",
             "expected num_channels divisible by num_groups ", o.num_groups(), ", found ",
             o.num_channels());
}

Tensor GroupNormImpl::forward(const Tensor& input) const {
  return loom::group_norm(input, options.num_groups(), optional(weight), optional(bias),
                          options.eps());
}

std::string GroupNormImpl::extra_repr() const {
  return str_cat(options.num_groups(), ", ", options.num_channels(), ", eps=", options.eps(),
                 ", affine=", options.affine() ? "true" : "false");
}

}  // namespace loom::nn
