// Adafactor, as torch.optim.Adafactor: second moments factored into row and column
// averages for matrices (memory O(n + m) instead of O(n m)), a relative step size, and
// update clipping.
#pragma once

#include <optional>

#include "loom/nn/options.h"
#include "loom/optim/optimizer.h"

namespace loom::optim {

struct AdafactorOptions {
  AdafactorOptions(double lr = 1e-2) : lr_(lr) {}  // NOLINT: implicit, as libtorch's
  LOOM_OPTION(double, lr);
  LOOM_OPTION(double, beta2_decay) = -0.8;   // 1 - beta2 at step t is t^beta2_decay
  LOOM_OPTION(std::optional<double>, eps1);  // floor of the variance; default the dtype's eps
  LOOM_OPTION(double, eps2) = 1e-3;          // floor of the parameter scale
  LOOM_OPTION(double, d) = 1.0;              // clipping threshold of the update's RMS
  LOOM_OPTION(double, weight_decay) = 0.0;   // decoupled
  // Update all the parameters of a group with the multi-tensor ops (loom::_foreach_*) or
  // per parameter: the same bits. Unset: use_foreach's default (optimizer.h).
  LOOM_OPTION(std::optional<bool>, foreach) = std::nullopt;
};

struct AdafactorParamState {
  int64_t step = 0;
  Tensor row_var, col_var;  // matrices (dims >= 2): [..., n, 1] and [..., 1, m]
  Tensor variance;          // vectors and scalars
};

class Adafactor : public OptimizerWithOptions<AdafactorOptions> {
 public:
  Adafactor(std::vector<Tensor> params, const AdafactorOptions& options = {})
      : Adafactor(std::vector<ParamGroup<AdafactorOptions>>{{std::move(params), options}}) {}
  explicit Adafactor(std::vector<ParamGroup<AdafactorOptions>> groups);
  void step() override;
  const AdafactorParamState& state(size_t group, size_t i) const {
    return state_at(state_, group, i);
  }

 protected:
  void check_options(const AdafactorOptions& options) const override;
  static void step_single(const AdafactorOptions& o, Tensor& p, Tensor g, AdafactorParamState& s);
  static void step_foreach(GroupUpdate<AdafactorParamState>& group);
  std::vector<StateField> state_fields(size_t group, size_t i) override;

 private:
  std::vector<std::vector<AdafactorParamState>> state_;
};

}  // namespace loom::optim
