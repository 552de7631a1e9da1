// Linear, Identity and Flatten.
#include "loom/nn/linear.h"

#include <cmath>

#include "loom/core/error.h"
#include "loom/core/type_promotion.h"
#include "loom/factories.h"
#include "loom/nn/init.h"
#include "loom/ops/generated/ops.h"

namespace loom::nn {

namespace {

const LinearOptions& checked(const LinearOptions& opts) {
  LOOM_CHECK(opts.in_features() >= 0 && opts.out_features() >= 0, "nn::Linear",
             "expected non-negative in_features and out_features, found ", opts.in_features(),
             " and ", opts.out_features());
  return opts;
}

}  // namespace

LinearImpl::LinearImpl(const LinearOptions& opts)
    : Module("Linear"),
      options(checked(opts)),
      weight(register_parameter("weight", loom::empty({opts.out_features(), opts.in_features()}))),
      bias(
          register_parameter("bias", opts.bias() ? loom::empty({opts.out_features()}) : Tensor())) {
  reset_parameters();
}

void LinearImpl::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined() && options.in_features() > 0) {
    double bound = 1.0 / std::sqrt(static_cast<double>(options.in_features()));
    init::uniform_(bias, -bound, bound);
  }
}

Tensor LinearImpl::forward(const Tensor& input) const {
  LOOM_CHECK(input.dim() >= 1 && input.sizes()[input.dim() - 1] == options.in_features(),
             "nn::Linear", "expected an input whose last dimension is in_features ",
             options.in_features(), ", found shape ", shape_to_string(input.sizes()));
  return loom::linear(input, weight, bias.defined() ? std::optional<Tensor>(bias) : std::nullopt);
}

std::string LinearImpl::extra_repr() const {
  return str_cat("in_features=", options.in_features(), ", out_features=", options.out_features(),
                 ", bias=", options.bias() ? "true" : "false");
}

Tensor FlattenImpl::forward(const Tensor& input) const {
  return loom::flatten(input, start_dim, end_dim);
}

std::string FlattenImpl::extra_repr() const {
  return str_cat("start_dim=", start_dim, ", end_dim=", end_dim);
}

}  // namespace loom::nn
