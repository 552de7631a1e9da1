// Loss modules over the loss ops (which check shapes, dtypes and target ranges).
#include "loom/nn/loss.h"

#include "loom/core/error.h"
#include "loom/ops/generated/ops.h"

namespace loom::nn {
namespace {

int64_t code(Reduction r) {
  return static_cast<int64_t>(r);
}

}  // namespace

CrossEntropyLossImpl::CrossEntropyLossImpl(const CrossEntropyLossOptions& options)
    : Module("CrossEntropyLoss"), options(options) {
  LOOM_CHECK(options.label_smoothing() >= 0.0 && options.label_smoothing() <= 1.0,
             "nn::CrossEntropyLoss", "expected label_smoothing in [0, 1], found ",
             options.label_smoothing());
}

Tensor CrossEntropyLossImpl::forward(const Tensor& input, const Tensor& target) const {
  return loom::cross_entropy_loss(input, target, options.weight(), code(options.reduction()),
                                  options.ignore_index(), options.label_smoothing());
}

Tensor NLLLossImpl::forward(const Tensor& input, const Tensor& target) const {
  return loom::nll_loss(input, target, options.weight(), code(options.reduction()),
                        options.ignore_index());
}

Tensor MSELossImpl::forward(const Tensor& input, const Tensor& target) const {
  return loom::mse_loss(input, target, code(reduction));
}

Tensor L1LossImpl::forward(const Tensor& input, const Tensor& target) const {
  return loom::l1_loss(input, target, code(reduction));
}

Tensor BCEWithLogitsLossImpl::forward(const Tensor& input, const Tensor& target) const {
  return loom::binary_cross_entropy_with_logits(input, target, options.weight(),
                                                options.pos_weight(), code(options.reduction()));
}

}  // namespace loom::nn
