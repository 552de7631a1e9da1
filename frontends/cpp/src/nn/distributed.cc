// nn::DistributedDataParallel and its gradient reducer.
//
// Note [Gradient buckets]
// ~~~~~~~~~~~~~~~~~~~~~~~
// DDP overlaps communication with backward as PyTorch's does: the parameters are cut
// into buckets of at most bucket_cap_mb, in reverse registration order (backward reaches
// the last layers first), and each parameter gets a post-accumulate-grad hook. When a
// bucket's last gradient has accumulated, its gradients are flattened into one tensor
// and all-reduced asynchronously (average, or a sum of a float16/bfloat16 copy divided
// after), while backward goes on with the layers before. Buckets are launched strictly
// in order, so every rank issues the same collectives in the same order even if its
// gradients become ready in another order. The hook that readies the last bucket waits
// for every bucket and copies the averages back into .grad, so when backward returns the
// gradients are the same on every rank, and an optimizer step keeps the parameters
// bitwise equal. A parameter whose gradient never came (not used by the loss) leaves
// its bucket unlaunched: the next forward refuses to go on, naming it, unless
// find_unused_parameters is set (Note [Unused parameters]). Under no_sync() the hooks do
// nothing and gradients accumulate locally.
//
// Note [Unused parameters]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// With find_unused_parameters, as in PyTorch, each forward walks the output's graph
// (autograd::reaches) and notes the parameters it leads to (over every forward since the
// last reduction). The output passes through an identity node
// (DistributedDataParallelSink); its backward, the first of the module's to run, marks the
// parameters no forward reached ready, so their buckets launch without them, carrying
// their accumulated gradient or zeros; one that gets a gradient after all (the loss used
// it directly) is refused. Which parameters got a gradient since the last reduction (under
// no_sync too) is all-reduced with the last bucket: a parameter used on some rank gets the
// average (a .grad made where it had none), one used on no rank keeps its .grad as it was
// (none, after zero_grad). The walk costs a visit of every node of the forward, which is
// why it is an option.
#include "loom/nn/distributed.h"

#include <numeric>

#include "loom/autograd.h"
#include "loom/core/error.h"
#include "loom/factories.h"
#include "loom/operators.h"
#include "loom/ops/generated/ops.h"

namespace loom::nn {

class GradientReducer : public std::enable_shared_from_this<GradientReducer> {
 public:
  GradientReducer(NamedTensors params, DistributedDataParallelOptions options)
      : params_(std::move(params)), options_(options) {
    const double cap = options.bucket_cap_mb * 1024 * 1024;
    bucket_of_.assign(params_.size(), 0);
    // Reverse registration order; a bucket holds parameters of one dtype.
    for (size_t k = params_.size(); k-- > 0;) {
      const Tensor& p = params_[k].second;
      const double bytes = static_cast<double>(p.numel()) * element_size(p.dtype());
      if (buckets_.empty() || buckets_.back().bytes + bytes > cap ||
          params_[buckets_.back().params.front()].second.dtype() != p.dtype()) {
        buckets_.push_back({});
      }
      buckets_.back().params.push_back(k);
      buckets_.back().bytes += bytes;
      bucket_of_[k] = buckets_.size() - 1;
    }
    reset();
    marked_unused_.assign(params_.size(), false);
  }

  void attach_hooks() {
    std::weak_ptr<GradientReducer> self = weak_from_this();
    for (size_t k = 0; k < params_.size(); ++k) {
      params_[k].second.register_post_accumulate_grad_hook([self, k](const Tensor&) {
        if (auto r = self.lock()) r->grad_ready(k);
      });
    }
  }

  void set_sync(bool sync) { sync_ = sync; }

  // After a forward that records a graph: with find_unused_parameters, finds the
  // parameters `output` does not lead to and returns it through the sink node that marks
  // them ready when backward reaches it (Note [Unused parameters]).
  Tensor prepare_for_backward(const Tensor& output) {
    if (!options_.find_unused_parameters || !sync_ || !output.defined() ||
        !output.requires_grad()) {
      return output;
    }
    std::vector<Tensor> leaves;
    for (const auto& [name, p] : params_) leaves.push_back(p);
    const std::vector<bool> reached = autograd::reaches({output}, leaves);
    for (size_t k = 0; k < params_.size(); ++k) reached_[k] = reached_[k] || reached[k];
    std::weak_ptr<GradientReducer> self = weak_from_this();
    Tensor sink = output.detach();
    autograd::apply_function("DistributedDataParallelSink", {output}, {sink},
                             [self](const std::vector<Tensor>& grads) {
                               if (auto r = self.lock()) r->mark_unused_ready();
                               return grads;
                             });
    return sink;
  }

  // Before a forward: the previous backward must have reduced every bucket.
  void check_previous_iteration() {
    marked_unused_.assign(params_.size(), false);
    if (!started_) return;
    std::string unused;
    for (size_t k = 0; k < params_.size(); ++k) {
      if (!ready_[k]) unused += (unused.empty() ? "" : ", ") + params_[k].first;
    }
    reset();
    LOOM_CHECK(unused.empty(), "DistributedDataParallel",
               "the previous backward produced no gradient for parameter(s) ", unused,
               ", so their buckets were never reduced and the ranks' gradients differ; use every "
               "parameter in the loss, leave unused ones out of the module, or pass "
               "find_unused_parameters = true",
               options_.find_unused_parameters
                   ? " (it is set: was the backward from a tensor that the module's output "
                     "does not lead to?)"
                   : "");
  }

  std::vector<std::vector<std::string>> bucket_names() const {
    std::vector<std::vector<std::string>> out;
    for (const Bucket& b : buckets_) {
      out.emplace_back();
      for (size_t k : b.params) out.back().push_back(params_[k].first);
    }
    return out;
  }

 private:
  struct Bucket {
    std::vector<size_t> params;
    double bytes = 0;
    size_t pending = 0;
    Tensor flat;
    distributed::Work work;
  };

  void reset() {
    ready_.assign(params_.size(), false);
    used_.assign(params_.size(), false);
    reached_.assign(params_.size(), false);
    for (Bucket& b : buckets_) b.pending = b.params.size();
    next_launch_ = 0;
    started_ = false;
  }

  void grad_ready(size_t k) {
    used_[k] = true;
    if (!sync_) return;
    LOOM_CHECK(!marked_unused_[k], "DistributedDataParallel", "parameter ", params_[k].first,
               " got a gradient after backward passed the module's output, which does not lead "
               "to it, so it was reduced without it; compute the loss from the module's output");
    started_ = true;
    if (ready_[k]) return;  // accumulated twice in one backward (a shared parameter)
    mark_ready(k);
  }

  // The sink's backward: the parameters no forward since the last reduction reached are
  // ready as they are. Only the last of them can complete the reduction (and reset).
  void mark_unused_ready() {
    if (!sync_) return;
    started_ = true;
    std::vector<size_t> unused;
    for (size_t k = 0; k < params_.size(); ++k) {
      if (!reached_[k] && !ready_[k]) unused.push_back(k);
    }
    for (size_t k : unused) {
      marked_unused_[k] = true;
      mark_ready(k);
    }
  }

  void mark_ready(size_t k) {
    ready_[k] = true;
    Bucket& b = buckets_[bucket_of_[k]];
    if (--b.pending > 0) return;
    // Launch in order every bucket that is complete.
    while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0) {
      launch(buckets_[next_launch_++]);
    }
    if (next_launch_ == buckets_.size()) finish();
  }

  void launch(Bucket& b) {
    NoGradGuard no_grad;
    std::vector<Tensor> flats;
    for (size_t k : b.params) {
      const Tensor& p = params_[k].second;
      const Tensor g = p.grad();  // none for a parameter this forward did not use
      flats.push_back(
          g.defined()
              ? g.reshape({-1})
              : loom::zeros({p.numel()}, TensorOptions().dtype(p.dtype()).device(p.device())));
    }
    b.flat = loom::cat(flats, 0);
    if (options_.comm_hook == CommHook::FP16Compress) {
      b.flat = b.flat.to(ScalarType::Float16);
    } else if (options_.comm_hook == CommHook::BF16Compress) {
      b.flat = b.flat.to(ScalarType::BFloat16);
    }
    const bool compressed = options_.comm_hook != CommHook::AllReduce;
    b.work = distributed::all_reduce(
        b.flat, compressed ? distributed::ReduceOp::Sum : distributed::ReduceOp::Avg,
        options_.group, /*async_op=*/true);
  }

  // With find_unused_parameters: whether each parameter got a gradient on some rank since
  // the last reduction (one more all-reduce, after the buckets').
  std::vector<bool> used_on_some_rank() {
    if (!options_.find_unused_parameters) return std::vector<bool>(params_.size(), true);
    Tensor counts = loom::zeros({static_cast<int64_t>(params_.size())},
                                TensorOptions().dtype(ScalarType::Int32));
    auto* count = static_cast<int32_t*>(counts.data_ptr());
    for (size_t k = 0; k < params_.size(); ++k) count[k] = used_[k] ? 1 : 0;
    counts = counts.to(params_.front().second.device());  // nccl reduces device tensors only
    distributed::all_reduce(counts, distributed::ReduceOp::Sum, options_.group);
    counts = counts.to("cpu");
    count = static_cast<int32_t*>(counts.data_ptr());
    std::vector<bool> used(params_.size());
    for (size_t k = 0; k < params_.size(); ++k) used[k] = count[k] > 0;
    return used;
  }

  void finish() {
    NoGradGuard no_grad;
    const int n = distributed::get_world_size(options_.group);
    const std::vector<bool> used = used_on_some_rank();
    for (Bucket& b : buckets_) {
      b.work.wait();
      Tensor flat = b.flat;
      if (options_.comm_hook != CommHook::AllReduce) {
        flat = flat.to(params_[b.params.front()].second.dtype()).div_(static_cast<double>(n));
      }
      int64_t at = 0;
      for (size_t k : b.params) {
        const Tensor& p = params_[k].second;
        Tensor average = flat.narrow(0, at, p.numel()).view(p.sizes());
        at += p.numel();
        if (!used[k]) continue;  // no rank used it: its .grad stays as it was
        Tensor g = p.grad();
        if (g.defined()) {
          g.copy_(average);
        } else {
          p.set_grad(average.clone());
        }
      }
      b.flat = Tensor();
    }
    reset();
  }

  NamedTensors params_;
  DistributedDataParallelOptions options_;
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_;
  std::vector<bool> ready_;
  std::vector<bool> used_;           // got a gradient since the last reduction
  std::vector<bool> reached_;        // by a forward's output since (find_unused_parameters)
  std::vector<bool> marked_unused_;  // made ready by the sink, until the next forward
  size_t next_launch_ = 0;
  bool started_ = false;
  bool sync_ = true;
};

DistributedDataParallelImpl::DistributedDataParallelImpl(
    std::shared_ptr<Module> module, std::function<Tensor(const Tensor&)> forward,
    DistributedDataParallelOptions options)
    : Module("DistributedDataParallel"),
      module_(std::move(module)),
      forward_(std::move(forward)),
      options_(options) {
  LOOM_CHECK(module_ != nullptr, "DistributedDataParallel", "expected a module, found none");
  LOOM_CHECK(options.bucket_cap_mb > 0, "DistributedDataParallel",
             "bucket_cap_mb must be positive, found ", options.bucket_cap_mb);
  register_module("module", module_);
  // Every rank starts from rank 0's parameters and buffers.
  {
    NoGradGuard no_grad;
    for (Tensor& p : module_->parameters()) distributed::broadcast(p, 0, options.group);
    for (Tensor& b : module_->buffers()) distributed::broadcast(b, 0, options.group);
  }
  NamedTensors trainable;
  for (auto& [name, p] : module_->named_parameters()) {
    if (p.requires_grad()) trainable.emplace_back(name, p);
  }
  reducer_ = std::make_shared<GradientReducer>(std::move(trainable), options);
  reducer_->attach_hooks();
}

DistributedDataParallelImpl::~DistributedDataParallelImpl() = default;

Tensor DistributedDataParallelImpl::forward(const Tensor& input) {
  return forward_with(input, forward_);
}

Tensor DistributedDataParallelImpl::forward_with(
    const Tensor& input, const std::function<Tensor(const Tensor&)>& module_forward) {
  reducer_->check_previous_iteration();
  if (options_.broadcast_buffers && is_training()) {
    NoGradGuard no_grad;
    for (Tensor& b : module_->buffers()) distributed::broadcast(b, 0, options_.group);
  }
  Tensor output = module_forward(input);
  return autograd::is_enabled() ? reducer_->prepare_for_backward(output) : output;
}

std::vector<std::vector<std::string>> DistributedDataParallelImpl::buckets() const {
  return reducer_->bucket_names();
}

DistributedDataParallelImpl::NoSync::NoSync(GradientReducer& reducer) : reducer_(reducer) {
  reducer_.set_sync(false);
}
DistributedDataParallelImpl::NoSync::~NoSync() {
  reducer_.set_sync(true);
}

}  // namespace loom::nn
