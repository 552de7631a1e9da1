// SGD with momentum, dampening, Nesterov momentum and weight decay, as torch.optim.SGD.
#pragma once

#include "loom/nn/options.h"
#include "loom/optim/optimizer.h"

namespace loom::optim {

struct SGDOptions {
  SGDOptions(double lr) : lr_(lr) {}  // NOLINT: implicit, as libtorch's
  LOOM_OPTION(double, lr);
  LOOM_OPTION(double, momentum) = 0.0;
  LOOM_OPTION(double, dampening) = 0.0;
  LOOM_OPTION(double, weight_decay) = 0.0;
  LOOM_OPTION(bool, nesterov) = false;
};

class SGD : public OptimizerWithOptions<SGDOptions> {
 public:
  SGD(std::vector<Tensor> params, const SGDOptions& options)
      : SGD(std::vector<ParamGroup<SGDOptions>>{{std::move(params), options}}) {}
  explicit SGD(std::vector<ParamGroup<SGDOptions>> groups);
  void step() override;
  // The momentum buffer of parameter i of a group (undefined before its first step).
  const Tensor& momentum_buffer(size_t group, size_t i) const;

 protected:
  void check_options(const SGDOptions& options) const override;
  std::vector<StateField> state_fields(size_t group, size_t i) override;

 private:
  std::vector<std::vector<Tensor>> momentum_;  // [group][param]
};

}  // namespace loom::optim
