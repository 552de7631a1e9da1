// The optimizer base, shaped like libtorch's torch::optim::Optimizer: parameter groups
// with their own options, zero_grad, step, and the learning rate as schedulers see it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "loom/autograd.h"
#include "loom/core/error.h"
#include "loom/ops/tensor.h"

namespace loom::optim {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// What every optimizer and scheduler may read of a group: its learning rate.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // One update of every parameter that has a gradient (parameters without one are
  // skipped, as PyTorch's).
  virtual void step() = 0;
  // Clears the gradients of every parameter: undefined (set_to_none, the default) or zeros.
  void zero_grad(bool set_to_none = true);

  virtual size_t num_param_groups() const = 0;
  virtual double lr(size_t group = 0) const = 0;
  virtual void set_lr(double lr, size_t group) = 0;
  // Sets the learning rate of every group.
  void set_lr(double lr);
  // Every parameter of every group.
  virtual std::vector<Tensor> parameters() const = 0;

  // The optimizer's state for a checkpoint, as named tensors: "param_groups.<g>.lr"
  // (float64 scalar) and "state.<g>.<i>.<field>" for parameter i of group g (its moment
  // buffers; "step" as an int64 scalar).
  NamedTensors state_dict() const;
  // Restores state_dict()'s output. Everything is checked before anything changes (group
  // and parameter indices in range, each buffer shaped and typed as its parameter), so a
  // refused dict leaves the optimizer as it was. check_state_dict only checks.
  void load_state_dict(const NamedTensors& state);
  void check_state_dict(const NamedTensors& state) const;

  // Whether step() computes every number it uses from tensors and its options, so that
  // a compiled step (loom::compile(optimizer)) may replay it: SGD; Adam and AdamW with
  // `capturable`. Not so for an update that counts steps on the host.
  virtual bool capturable() const { return false; }
  // Changes whenever the optimizer's tensors may have been replaced (a loaded state, a
  // new group): a compiled step captures again then.
  uint64_t generation() const { return generation_; }

 protected:
  // One entry of a parameter's state: a tensor buffer or a step count.
  struct StateField {
    const char* name;
    Tensor* tensor = nullptr;
    int64_t* count = nullptr;
  };
  virtual size_t group_size(size_t group) const = 0;
  virtual const char* optimizer_name() const = 0;
  // The state entries of parameter i of group g (its state created empty if absent).
  virtual std::vector<StateField> state_fields(size_t group, size_t i) = 0;
  // Called after load_state_dict changed the state.
  virtual void state_loaded() {}
  uint64_t generation_ = 0;

 private:
  void restore(const NamedTensors& state, bool apply);
};

namespace detail {
// A state_dict key's dot-separated parts ("state.0.3.exp_avg": state, 0, 3, exp_avg).
std::vector<std::string> state_key_parts(const std::string& key);
// A part that is an index (a group's or a parameter's), refused naming `what` and the key
// unless it is digits.
size_t state_key_index(const std::string& part, const std::string& key, const std::string& what);
}  // namespace detail

// Whether an update runs through the foreach ops: as asked, else (PyTorch's default) when
// every parameter is on an accelerator, where each op is a kernel launch. On the CPU the
// per-parameter loop is faster: it runs all of an update's ops on one parameter while
// its tensors are in cache, where each foreach op sweeps every parameter (Adam over 200
// parameters of 4,096 elements, 2 threads: 1.6 ms per parameter, 2.0 ms foreach;
// tools/bench/README.md).
inline bool use_foreach(const std::optional<bool>& wanted, const std::vector<Tensor>& params) {
  if (wanted) return *wanted;
  for (const Tensor& p : params) {
    if (p.device().type == kCPU) return false;
  }
  return true;
}

// A group: its parameters and its options (lr, weight decay, ...).
template <typename Options>
struct ParamGroup {
  std::vector<Tensor> params;
  Options options;
};

// The part every optimizer shares: groups of one options type, with checks.
template <typename Options>
class OptimizerWithOptions : public Optimizer {
 public:
  size_t num_param_groups() const override { return groups_.size(); }
  double lr(size_t group = 0) const override { return group_at(group).options.lr(); }
  void set_lr(double lr, size_t group) override { group_at(group).options.lr(lr); }
  using Optimizer::set_lr;
  std::vector<Tensor> parameters() const override {
    std::vector<Tensor> out;
    for (const auto& g : groups_) out.insert(out.end(), g.params.begin(), g.params.end());
    return out;
  }
  // Adds a group (its options checked as the constructor's).
  void add_param_group(ParamGroup<Options> group) {
    check_group(group);
    ++generation_;
    groups_.push_back(std::move(group));
  }
  std::vector<ParamGroup<Options>>& param_groups() { return groups_; }

 protected:
  size_t group_size(size_t group) const override { return group_at(group).params.size(); }
  const char* optimizer_name() const override { return name_; }
  // The derived constructor calls check_groups() (check_options is virtual).
  OptimizerWithOptions(const char* name, std::vector<ParamGroup<Options>> groups)
      : name_(name), groups_(std::move(groups)) {
    LOOM_CHECK(!groups_.empty(), name_, "expected at least one parameter group, found none");
  }
  void check_groups() const {
    for (const auto& g : groups_) check_group(g);
  }
  ParamGroup<Options>& group_at(size_t i) {
    LOOM_CHECK(i < groups_.size(), name_, "parameter group ", i, " is out of range for ",
               groups_.size(), " groups");
    return groups_[i];
  }
  const ParamGroup<Options>& group_at(size_t i) const {
    return const_cast<OptimizerWithOptions*>(this)->group_at(i);
  }
  virtual void check_options(const Options& options) const = 0;
  // Refuses a negative hyperparameter: "expected lr >= 0, found -1".
  void check_non_negative(const char* option, double value) const {
    LOOM_CHECK(value >= 0, name_, "expected ", option, " >= 0, found ", value);
  }

  // Per-parameter state, [group][param], grown to the groups as they are now.
  template <typename State>
  State& state_slot(std::vector<std::vector<State>>& state, size_t group, size_t i) {
    state.resize(groups_.size());
    state[group].resize(groups_[group].params.size());
    return state[group][i];
  }
  template <typename State>
  const State& state_at(const std::vector<std::vector<State>>& state, size_t group,
                        size_t i) const {
    LOOM_CHECK(group < state.size() && i < state[group].size(), name_, "no state for parameter ", i,
               " of group ", group, " (before its first step)");
    return state[group][i];
  }
  // Calls f(options, param, grad, state) for every parameter that has a gradient (the
  // others are skipped, as PyTorch's), with gradient recording off.
  template <typename State, typename F>
  void for_each_update(std::vector<std::vector<State>>& state, const F& f);

  // The parameters of one group that have a gradient, with those gradients and their
  // states: what a multi-tensor ("foreach") update takes.
  template <typename State>
  struct GroupUpdate {
    const Options& options;
    std::vector<Tensor> params, grads;
    std::vector<State*> states;
  };
  // Calls f(GroupUpdate&) for every group with at least one gradient, with gradient
  // recording off.
  template <typename State, typename F>
  void for_each_group_update(std::vector<std::vector<State>>& state, const F& f);
  // An optimizer's step: every group through `foreach_update(group)` where use_foreach
  // says so for its options and parameters, else `single_update(options, param, grad,
  // state)` for each of its parameters.
  template <typename State, typename Single, typename Foreach>
  void step_groups(std::vector<std::vector<State>>& state, const Single& single_update,
                   const Foreach& foreach_update) {
    for_each_group_update(state, [&](GroupUpdate<State>& group) {
      if (use_foreach(group.options.foreach(), group.params)) {
        foreach_update(group);
        return;
      }
      for (size_t i = 0; i < group.params.size(); ++i) {
        single_update(group.options, group.params[i], group.grads[i], *group.states[i]);
      }
    });
  }

  const char* name_;
  std::vector<ParamGroup<Options>> groups_;

 private:
  void check_group(const ParamGroup<Options>& group) const {
    check_options(group.options);
    for (size_t i = 0; i < group.params.size(); ++i) {
      const Tensor& p = group.params[i];
      LOOM_CHECK(p.defined(), name_, "parameter ", i, " of the group is undefined");
      LOOM_CHECK(p.is_leaf(), name_, "parameter ", i,
                 " is not a leaf (it has a history); optimize leaves, as the model's "
                 "parameters are");
    }
  }
};

template <typename Options>
template <typename State, typename F>
void OptimizerWithOptions<Options>::for_each_update(std::vector<std::vector<State>>& state,
                                                    const F& f) {
  NoGradGuard no_grad;
  for (size_t g = 0; g < groups_.size(); ++g) {
    for (size_t i = 0; i < groups_[g].params.size(); ++i) {
      Tensor& p = groups_[g].params[i];
      Tensor grad = p.grad();
      if (grad.defined()) f(groups_[g].options, p, grad, state_slot(state, g, i));
    }
  }
}

template <typename Options>
template <typename State, typename F>
void OptimizerWithOptions<Options>::for_each_group_update(std::vector<std::vector<State>>& state,
                                                          const F& f) {
  NoGradGuard no_grad;
  state.resize(groups_.size());
  for (size_t g = 0; g < groups_.size(); ++g) {
    state[g].resize(groups_[g].params.size());
    GroupUpdate<State> update{groups_[g].options, {}, {}, {}};
    for (size_t i = 0; i < groups_[g].params.size(); ++i) {
      Tensor grad = groups_[g].params[i].grad();
      if (!grad.defined()) continue;
      update.params.push_back(groups_[g].params[i]);
      update.grads.push_back(std::move(grad));
      update.states.push_back(&state[g][i]);
    }
    if (!update.params.empty()) f(update);
  }
}

}  // namespace loom::optim
