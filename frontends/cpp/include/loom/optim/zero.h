// optim::ZeroRedundancyOptimizer, as torch.distributed.optim.ZeroRedundancyOptimizer
// (ZeRO stage 1): the parameters are partitioned over the ranks of a process group, each
// rank keeps the optimizer state of its own partition only and updates those parameters,
// then every parameter is broadcast from the rank that owns it. Gradients must already
// be the same on every rank (nn::DistributedDataParallel makes them so).
//
//   optim::ZeroRedundancyOptimizer zero(model->parameters(), [](std::vector<Tensor> p) {
//     return std::make_unique<optim::Adam>(p, optim::AdamOptions(1e-3));
//   });
//   ... backward through DDP ...; zero.step();
//   zero.consolidate_state_dict(0);  // every rank; then on rank 0: save zero.state_dict()
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "loom/distributed.h"
#include "loom/optim/optimizer.h"

namespace loom::optim {

class ZeroRedundancyOptimizer {
 public:
  using Factory = std::function<std::unique_ptr<Optimizer>(std::vector<Tensor>)>;
  // `make` builds the local optimizer over this rank's partition (called once).
  ZeroRedundancyOptimizer(std::vector<Tensor> params, const Factory& make,
                          distributed::Group group = {});
  // Updates this rank's partition, then broadcasts every parameter from its owner.
  void step();
  void zero_grad(bool set_to_none = true);
  double lr() const { return local_->lr(); }
  void set_lr(double lr) { local_->set_lr(lr); }
  // The rank that owns parameter i (greedy by size, the same on every rank).
  int owner(size_t i) const { return owners_[i]; }
  // The optimizer of this rank's partition: its state_dict() is this rank's shard. A rank
  // that owns no parameter has one over the first parameter that it never steps (only its
  // options are read), where the factory refuses an empty list.
  Optimizer& local_optimizer() { return *local_; }

  // Gathers every rank's shard of the state on group rank `to`; every rank of the group
  // calls it (Note [Consolidated ZeRO state]).
  void consolidate_state_dict(int to = 0);
  // The whole state as of the last consolidate_state_dict, on the rank it went to, in the
  // keys of one optimizer over all the parameters ("param_groups.0.lr",
  // "state.0.<i>.<field>", i the parameter's index in the constructor's list): what a plain
  // optimizer over the same parameters saves and loads. Refused on other ranks.
  NamedTensors state_dict() const;
  // Every rank of the group calls it with a whole state (state_dict()'s, or a plain
  // optimizer's over the same parameters) and takes its partition's entries; the ranks
  // check every entry and agree before any of them changes anything.
  void load_state_dict(const NamedTensors& state);

 private:
  std::vector<Tensor> params_;
  std::vector<int> owners_;          // group ranks
  std::vector<size_t> local_index_;  // parameter i's index in local_'s list (if it owns it)
  std::vector<int> group_ranks_;     // their world ranks
  distributed::Group group_;
  std::unique_ptr<Optimizer> local_;
  bool local_owns_nothing_ = false;
  std::optional<NamedTensors> consolidated_;
};

}  // namespace loom::optim
