// RMSprop with momentum, centering and weight decay, as torch.optim.RMSprop.
#pragma once

#include <optional>

#include "loom/nn/options.h"
#include "loom/optim/optimizer.h"

namespace loom::optim {

struct RMSpropOptions {
  RMSpropOptions(double lr = 1e-2) : lr_(lr) {}  // NOLINT: implicit, as libtorch's
  LOOM_OPTION(double, lr);
  LOOM_OPTION(double, alpha) = 0.99;
  LOOM_OPTION(double, eps) = 1e-8;
  LOOM_OPTION(double, weight_decay) = 0.0;
  LOOM_OPTION(double, momentum) = 0.0;
  LOOM_OPTION(bool, centered) = false;
  // Update all the parameters of a group with the multi-tensor ops (loom::_foreach_*, a
  // few kernel calls per step) or per parameter: the same bits. Unset: use_foreach's
  // default (optimizer.h).
  LOOM_OPTION(std::optional<bool>, foreach) = std::nullopt;
};

struct RMSpropParamState {
  int64_t step = 0;
  Tensor square_avg, momentum_buffer, grad_avg;
};

class RMSprop : public OptimizerWithOptions<RMSpropOptions> {
 public:
  RMSprop(std::vector<Tensor> params, const RMSpropOptions& options = {})
      : RMSprop(std::vector<ParamGroup<RMSpropOptions>>{{std::move(params), options}}) {}
  explicit RMSprop(std::vector<ParamGroup<RMSpropOptions>> groups);
  void step() override;
  const RMSpropParamState& state(size_t group, size_t i) const {
    return state_at(state_, group, i);
  }

 protected:
  void check_options(const RMSpropOptions& options) const override;
  static void step_single(const RMSpropOptions& o, Tensor& p, Tensor g, RMSpropParamState& s);
  static void step_foreach(GroupUpdate<RMSpropParamState>& group);
  std::vector<StateField> state_fields(size_t group, size_t i) override;

 private:
  std::vector<std::vector<RMSpropParamState>> state_;
};

}  // namespace loom::optim
