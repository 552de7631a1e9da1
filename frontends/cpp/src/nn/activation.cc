// Activation layers over the unary and softmax ops.
#include "loom/nn/activation.h"

#include "loom/core/error.h"
#include "loom/ops/generated/ops.h"

namespace loom::nn {

Tensor ReLUImpl::forward(const Tensor& input) const {
  return loom::relu(input);
}

GELUImpl::GELUImpl(std::string approximate) : Module("GELU"), approximate(std::move(approximate)) {
  LOOM_CHECK(this->approximate == "none" || this->approximate == "tanh", "nn::GELU",
             "expected approximate 'none' or 'tanh', found '", this->approximate, "'");
}

Tensor GELUImpl::forward(const Tensor& input) const {
  return loom::gelu(input, approximate);
}

std::string GELUImpl::extra_repr() const {
  return approximate == "none" ? "" : "approximate='" + approximate + "'";
}

Tensor SiLUImpl::forward(const Tensor& input) const {
  return loom::silu(input);
}
Tensor TanhImpl::forward(const Tensor& input) const {
  return loom::tanh(input);
}
Tensor SigmoidImpl::forward(const Tensor& input) const {
  return loom::sigmoid(input);
}
Tensor SoftmaxImpl::forward(const Tensor& input) const {
  return loom::softmax(input, dim);
}

std::string SoftmaxImpl::extra_repr() const {
  return str_cat("dim=", dim);
}

}  // namespace loom::nn
