// optim::ZeroRedundancyOptimizer: optimizer state sharded over the ranks (ZeRO stage 1).
// The partition is greedy by size (largest parameter first, to the rank holding the
// fewest elements so far; ties to the lower rank), so every rank computes the same one
// without talking. An empty partition gets a local optimizer over no parameters only if
// the factory accepts that; a rank with nothing to update skips its step.
#include "loom/optim/zero.h"

#include <algorithm>
#include <numeric>

#include "loom/autograd.h"
#include "loom/core/error.h"

namespace loom::optim {

ZeroRedundancyOptimizer::ZeroRedundancyOptimizer(std::vector<Tensor> params, const Factory& make,
                                                 distributed::Group group)
    : params_(std::move(params)), group_(group) {
  LOOM_CHECK(!params_.empty(), "optim::ZeroRedundancyOptimizer", "expected parameters, found none");
  LOOM_CHECK(make != nullptr, "optim::ZeroRedundancyOptimizer", "expected an optimizer factory");
  const int n = distributed::get_world_size(group);
  const int me = distributed::get_rank(group);
  LOOM_CHECK(me >= 0, "optim::ZeroRedundancyOptimizer", "this rank is not in process group ",
             group.id);
  std::vector<size_t> order(params_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return params_[a].numel() > params_[b].numel(); });
  group_ranks_ = distributed::get_process_group_ranks(group);
  std::vector<int64_t> load(n, 0);
  owners_.assign(params_.size(), 0);
  for (size_t i : order) {
    const int r = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    owners_[i] = r;
    load[r] += params_[i].numel();
  }
  std::vector<Tensor> mine;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (owners_[i] == me) mine.push_back(params_[i]);
  }
  if (!mine.empty()) local_ = make(std::move(mine));
}

void ZeroRedundancyOptimizer::step() {
  if (local_) local_->step();
  NoGradGuard no_grad;
  // Every parameter from its owner (a world rank for broadcast), all in flight at once.
  std::vector<distributed::Work> works;
  for (size_t i = 0; i < params_.size(); ++i) {
    works.push_back(distributed::broadcast(
        params_[i], group_ranks_[static_cast<size_t>(owners_[i])], group_, true));
  }
  for (distributed::Work& w : works) w.wait();
}

void ZeroRedundancyOptimizer::zero_grad(bool set_to_none) {
  autograd::clear_grads(params_, set_to_none);
}

}  // namespace loom::optim
