// Dropout over the dropout op.
#include "loom/nn/dropout.h"

#include "loom/core/error.h"
#include "loom/ops/generated/ops.h"

namespace loom::nn {

DropoutImpl::DropoutImpl(double p) : Module("Dropout"), p(p) {
  LOOM_CHECK(p >= 0.0 && p <= 1.0, "nn::Dropout", "expected a probability p in [0, 1], found ", p);
}

Tensor DropoutImpl::forward(const Tensor& input) const {
  return loom::dropout(input, p, is_training());
}

std::string DropoutImpl::extra_repr() const {
  return str_cat("p=", p);
}

}  // namespace loom::nn
