// Dropout, as torch.nn.Dropout: zeroes elements with probability p while training and
// scales the rest by 1 / (1 - p); the identity in eval mode.
#pragma once

#include "loom/nn/module.h"

namespace loom::nn {

class DropoutImpl : public Module {
 public:
  explicit DropoutImpl(double p = 0.5);
  Tensor forward(const Tensor& input) const;
  double p;

 protected:
  std::string extra_repr() const override;
};
LOOM_MODULE(Dropout);

}  // namespace loom::nn
