// SGD with momentum, dampening, Nesterov momentum and weight decay, as torch.optim.SGD.
#pragma once

#include <optional>

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
  // Update all the parameters of a group with the multi-tensor ops (loom::_foreach_*, a
  // few kernel calls per step) or per parameter: the same bits. Unset: use_foreach's
  // default (optimizer.h).
  LOOM_OPTION(std::optional<bool>, foreach) = std::nullopt;
};

struct SGDParamState {
  Tensor momentum_buffer;  // undefined before the first step with momentum
};

class SGD : public OptimizerWithOptions<SGDOptions> {
 public:
  SGD(std::vector<Tensor> params, const SGDOptions& options)
      : SGD(std::vector<ParamGroup<SGDOptions>>{{std::move(params), options}}) {}
  explicit SGD(std::vector<ParamGroup<SGDOptions>> groups);
  void step() override;
  // Every number of SGD's update comes from its options (no step count).
  bool capturable() const override { return true; }
  const SGDParamState& state(size_t group, size_t i) const { return state_at(state_, group, i); }

 protected:
  void check_options(const SGDOptions& options) const override;
  static void step_single(const SGDOptions& o, Tensor& p, Tensor g, SGDParamState& s);
  static void step_foreach(GroupUpdate<SGDParamState>& group);
  std::vector<StateField> state_fields(size_t group, size_t i) override;

 private:
  std::vector<std::vector<SGDParamState>> state_;
};

}  // namespace loom::optim
