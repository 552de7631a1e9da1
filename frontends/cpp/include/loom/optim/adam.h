// Adam and AdamW (decoupled weight decay), with AMSGrad, as torch.optim's.
#pragma once

#include <optional>
#include <utility>

#include "loom/nn/options.h"
#include "loom/optim/optimizer.h"

namespace loom::optim {

struct AdamOptions {
  AdamOptions(double lr = 1e-3) : lr_(lr) {}  // NOLINT: implicit, as libtorch's
  LOOM_OPTION(double, lr);
  LOOM_OPTION(double, beta1) = 0.9;
  LOOM_OPTION(double, beta2) = 0.999;
  LOOM_OPTION(double, eps) = 1e-8;
  LOOM_OPTION(double, weight_decay) = 0.0;
  LOOM_OPTION(bool, amsgrad) = false;
  // Update all the parameters of a group with the multi-tensor ops (loom::_foreach_*, a
  // few kernel calls per step) or per parameter: the same bits. Unset: use_foreach's
  // default (optimizer.h).
  LOOM_OPTION(std::optional<bool>, foreach) = std::nullopt;
  // Keep the step count in a tensor and compute the bias corrections with tensor ops, so
  // that no number the update uses is read on the host and a compiled step
  // (loom::compile(optimizer), loom/compile.h) stays right at every step: PyTorch's
  // `capturable`. The update runs per parameter (foreach is not used).
  LOOM_OPTION(bool, capturable) = false;
  // Update all the parameters of a group with one op, loom::_fused_adam_ (or
  // _fused_adamw_): one kernel per table of chunks on a GPU (Note [Fused Adam]), the
  // single-tensor update's bits elsewhere. Not with foreach set to true; with capturable
  // the step counts stay in their tensors.
  LOOM_OPTION(bool, fused) = false;
};

// The per-parameter state of Adam and AdamW.
struct AdamParamState {
  int64_t step = 0;
  Tensor exp_avg, exp_avg_sq, max_exp_avg_sq;
  // capturable: the step count as a float64 scalar on the parameter's device (the truth;
  // `step` follows it when the state is saved).
  Tensor step_tensor;
};

// Adam: weight decay adds weight_decay * param to the gradient (L2).
class Adam : public OptimizerWithOptions<AdamOptions> {
 public:
  Adam(std::vector<Tensor> params, const AdamOptions& options = {})
      : Adam(std::vector<ParamGroup<AdamOptions>>{{std::move(params), options}}) {}
  explicit Adam(std::vector<ParamGroup<AdamOptions>> groups)
      : Adam("Adam", std::move(groups), false) {}
  void step() override;
  // Whether every group has AdamOptions::capturable (then loom::compile(optimizer) may
  // replay its step).
  bool capturable() const override;
  const AdamParamState& state(size_t group, size_t i) const { return state_at(state_, group, i); }

 protected:
  Adam(const char* name, std::vector<ParamGroup<AdamOptions>> groups, bool decoupled);
  void check_options(const AdamOptions& options) const override;
  void step_single(const AdamOptions& o, Tensor& p, Tensor g, AdamParamState& s) const;
  void step_foreach(GroupUpdate<AdamParamState>& group) const;
  void step_fused(GroupUpdate<AdamParamState>& group) const;
  void step_capturable(const AdamOptions& o, Tensor& p, Tensor g, AdamParamState& s) const;
  Tensor decay(const AdamOptions& o, Tensor& p, Tensor g) const;
  std::vector<StateField> state_fields(size_t group, size_t i) override;
  void state_loaded() override;

 private:
  bool decoupled_;
  std::vector<std::vector<AdamParamState>> state_;  // [group][param]
};

// AdamW: weight decay multiplies the parameter by 1 - lr * weight_decay before the Adam
// update (default weight_decay 0.01, as PyTorch's).
class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, const AdamOptions& options = AdamOptions().weight_decay(0.01))
      : AdamW(std::vector<ParamGroup<AdamOptions>>{{std::move(params), options}}) {}
  explicit AdamW(std::vector<ParamGroup<AdamOptions>> groups)
      : Adam("AdamW", std::move(groups), true) {}
};

}  // namespace loom::optim
