// nn::DistributedDataParallel, as torch.nn.parallel.DistributedDataParallel: wraps a
// module whose forward maps a tensor to a tensor, broadcasts its parameters and buffers
// from rank 0 when made, and all-reduces (averages) the gradients across the process
// group during backward, in buckets, each launched as soon as all its gradients are
// ready (Note [Gradient buckets] in frontends/cpp/src/nn/distributed.cc).
//
//   loom::distributed::init_process_group();
//   nn::DistributedDataParallel ddp(model, {.bucket_cap_mb = 25});
//   loss = criterion(ddp(x), y); loss.backward();  // gradients averaged on every rank
//   optimizer.step();
//   { auto guard = ddp->no_sync(); ... backward ... }  // accumulate locally
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "loom/distributed.h"
#include "loom/nn/module.h"

namespace loom::nn {

// How a bucket's gradients travel (PyTorch's default hooks): averaged in their dtype, or
// compressed to float16 / bfloat16 for the all-reduce and back.
enum class CommHook { AllReduce, FP16Compress, BF16Compress };

struct DistributedDataParallelOptions {
  double bucket_cap_mb = 25;
  bool broadcast_buffers = true;  // buffers (BatchNorm's running stats) from rank 0 each forward
  // Parameters a forward does not use (a branch not taken) are found by walking the
  // output's graph and reduced as zeros, instead of refused at the next forward.
  bool find_unused_parameters = false;
  CommHook comm_hook = CommHook::AllReduce;
  distributed::Group group = {};
};

class GradientReducer;

class DistributedDataParallelImpl : public Module {
 public:
  template <typename Holder>
  DistributedDataParallelImpl(const Holder& module, DistributedDataParallelOptions options = {})
      : DistributedDataParallelImpl(
            std::shared_ptr<Module>(module.ptr()),
            [impl = module.ptr()](const Tensor& x) { return impl->forward(x); }, options) {}
  DistributedDataParallelImpl(std::shared_ptr<Module> module,
                              std::function<Tensor(const Tensor&)> forward,
                              DistributedDataParallelOptions options);
  ~DistributedDataParallelImpl() override;

  // Checks that the previous backward reduced every gradient (a parameter the loss did
  // not use is refused, naming it, unless find_unused_parameters), broadcasts buffers,
  // then runs the module.
  Tensor forward(const Tensor& input);
  // The same around another forward of the module: its compiled one (loom::compile of
  // a DistributedDataParallel runs DDP's own work eagerly around the compiled module).
  Tensor forward_with(const Tensor& input,
                      const std::function<Tensor(const Tensor&)>& module_forward);
  Module& module() const { return *module_; }
  // The wrapped module's own forward.
  const std::function<Tensor(const Tensor&)>& module_forward() const { return forward_; }

  // While the guard lives, backward accumulates gradients locally (gradient
  // accumulation); the first backward after it reduces the accumulated gradients.
  class NoSync {
   public:
    explicit NoSync(GradientReducer& reducer);
    ~NoSync();
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;

   private:
    GradientReducer& reducer_;
  };
  NoSync no_sync() { return NoSync(*reducer_); }
  // The parameter names of each bucket, in launch order.
  std::vector<std::vector<std::string>> buckets() const;

 private:
  std::shared_ptr<Module> module_;
  std::function<Tensor(const Tensor&)> forward_;
  DistributedDataParallelOptions options_;
  std::shared_ptr<GradientReducer> reducer_;
};
// The holder: `DistributedDataParallel ddp(model)` or `ddp(model, {.bucket_cap_mb = 25})`.
class DistributedDataParallel : public ModuleHolder<DistributedDataParallelImpl> {
 public:
  using ModuleHolder<DistributedDataParallelImpl>::ModuleHolder;
  template <typename Holder>
  DistributedDataParallel(const Holder& module, DistributedDataParallelOptions options)
      : ModuleHolder(std::make_shared<DistributedDataParallelImpl>(module, options)) {}
};

}  // namespace loom::nn
