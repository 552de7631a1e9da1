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
#pragma once

#include <functional>
#include <memory>
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
  // The optimizer of this rank's partition: its state_dict() is this rank's shard.
  Optimizer& local_optimizer() { return *local_; }

 private:
  std::vector<Tensor> params_;
  std::vector<int> owners_;       // group ranks
  std::vector<int> group_ranks_;  // their world ranks
  distributed::Group group_;
  std::unique_ptr<Optimizer> local_;
};

}  // namespace loom::optim
