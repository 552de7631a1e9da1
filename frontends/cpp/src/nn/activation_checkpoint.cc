// Activation checkpointing (loom/nn/activation_checkpoint.h, Note [Activation
// checkpointing]).
#include "loom/nn/activation_checkpoint.h"

#include <algorithm>
#include <any>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "loom/autocast.h"
#include "loom/autograd.h"
#include "loom/core/device.h"
#include "loom/core/generator.h"
#include "loom/core/type_promotion.h"
#include "loom/factories.h"

namespace loom::nn {
namespace {

constexpr const char* kWhat = "nn::checkpoint";

// The random streams of the cpu and of the inputs' device types.
struct RngStates {
  std::vector<std::pair<DeviceType, PhiloxState>> states;
  static RngStates of(const std::vector<Tensor>& inputs) {
    std::set<DeviceType> types{kCPU};
    for (const Tensor& t : inputs) {
      if (t.defined()) types.insert(t.device().type);
    }
    RngStates r;
    for (DeviceType type : types) r.states.emplace_back(type, default_generator(type).state());
    return r;
  }
  void restore() const {
    for (const auto& [type, state] : states) default_generator(type).set_state(state);
  }
};

// The autocast regions in force for the inputs' device types (and the cpu).
struct AutocastState {
  std::vector<std::pair<std::string, ScalarType>> enabled;
  static AutocastState of(const std::vector<Tensor>& inputs) {
    AutocastState s;
    if (!autocast::is_available()) return s;
    std::set<std::string> names{"cpu"};
    for (const Tensor& t : inputs) {
      if (t.defined()) names.insert(DeviceTypeRegistry::instance().name(t.device().type));
    }
    for (const std::string& name : names) {
      if (autocast::is_enabled(name)) s.enabled.emplace_back(name, autocast::lower_dtype(name));
    }
    return s;
  }
};

// What the backward node keeps: the function, its inputs (not its activations) and the
// state the recomputation must see.
struct Saved {
  CheckpointFunction fn;
  std::vector<Tensor> inputs;
  std::vector<std::vector<int64_t>> output_shapes;
  std::optional<RngStates> rng;
  AutocastState autocast;
};

std::vector<Tensor> recompute_and_backpropagate(const Saved& saved,
                                                const std::vector<Tensor>& grads,
                                                size_t node_inputs) {
  std::optional<RngStates> now;
  if (saved.rng) {
    now = RngStates::of(saved.inputs);
    saved.rng->restore();
  }
  std::vector<Tensor> detached;
  std::vector<Tensor> result;
  try {
    autograd::EnableGradGuard grad_on;
    std::vector<std::unique_ptr<autocast::Guard>> regions;
    for (const auto& [name, dtype] : saved.autocast.enabled) {
      regions.push_back(std::make_unique<autocast::Guard>(name, dtype));
    }
    for (const Tensor& t : saved.inputs) {
      Tensor d = t.defined() ? t.detach() : t;
      if (t.defined() && t.requires_grad()) d.requires_grad_();
      detached.push_back(d);
    }
    const std::vector<Tensor> outputs = saved.fn(detached);
    regions.clear();
    LOOM_CHECK(outputs.size() == saved.output_shapes.size(), kWhat, "the recomputation returned ",
               outputs.size(), " tensors, the forward ", saved.output_shapes.size(),
               " (the function must compute the same both times)");
    std::vector<Tensor> roots, root_grads;
    for (size_t k = 0; k < outputs.size(); ++k) {
      LOOM_CHECK(std::ranges::equal(outputs[k].sizes(), saved.output_shapes[k]), kWhat,
                 "the recomputation's output ", k, " is ", shape_to_string(outputs[k].sizes()),
                 ", the forward's was ", shape_to_string(saved.output_shapes[k]),
                 " (the function must compute the same both times)");
      if (outputs[k].requires_grad() && k < grads.size() && grads[k].defined()) {
        roots.push_back(outputs[k]);
        root_grads.push_back(grads[k]);
      }
    }
    if (!roots.empty()) autograd::backward(roots, root_grads);
  } catch (...) {
    if (now) now->restore();
    throw;
  }
  if (now) now->restore();
  for (size_t i = 0; i < node_inputs; ++i) {
    const bool is_input = i < detached.size();
    result.push_back(is_input && detached[i].defined() && detached[i].requires_grad()
                         ? detached[i].grad()
                         : Tensor());
  }
  return result;
}

// A non-reentrant checkpoint's forward (Note [Non-reentrant checkpoint]): what the
// recomputation needs, the description of each saved tensor, and the recomputed ones not
// yet served.
class Frame {
 public:
  Frame(CheckpointFunction fn, const std::vector<Tensor>& inputs, const CheckpointOptions& options)
      : fn_(std::move(fn)), autocast_(AutocastState::of(inputs)) {
    if (options.preserve_rng_state) rng_ = RngStates::of(inputs);
    for (const Tensor& t : inputs) {
      inputs_.push_back(t.defined() ? t.detach() : t);
      requires_grad_.push_back(t.defined() && t.requires_grad());
    }
  }

  // The forward's pack: the save's number.
  size_t pack(const Tensor& t) {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    saved_.push_back({std::vector<int64_t>(t.sizes().begin(), t.sizes().end()), t.dtype()});
    released_.push_back(false);
    return saved_.size() - 1;
  }

  // Backward's unpack of save `index` (a formula may read it more than once): recomputes
  // when it is not at hand.
  Tensor take(size_t index) {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    auto it = recomputed_.find(index);
    if (it == recomputed_.end()) {
      recompute();
      it = recomputed_.find(index);
    }
    return it->second;
  }

  // The node that kept save `index` freed it (after its backward ran, or with its graph).
  void release(size_t index) {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    released_[index] = true;
    recomputed_.erase(index);
  }

 private:
  struct Description {
    std::vector<int64_t> sizes;
    ScalarType dtype;
  };

  void recompute() {
    std::vector<Tensor> collected;
    std::optional<RngStates> now;
    if (rng_) {
      now = RngStates::of(inputs_);
      rng_->restore();
    }
    try {
      autograd::EnableGradGuard grad_on;
      std::vector<std::unique_ptr<autocast::Guard>> regions;
      for (const auto& [name, dtype] : autocast_.enabled) {
        regions.push_back(std::make_unique<autocast::Guard>(name, dtype));
      }
      std::vector<Tensor> inputs;
      for (size_t i = 0; i < inputs_.size(); ++i) {
        Tensor d = inputs_[i].defined() ? inputs_[i].detach() : inputs_[i];
        if (requires_grad_[i]) d.requires_grad_();
        inputs.push_back(d);
      }
      autograd::SavedTensorsHooks collect(
          [&collected](const Tensor& t) {
            collected.push_back(t);
            return std::any();
          },
          [](const std::any&) -> Tensor {
            fail(kWhat,
                 "a backward through a checkpoint's recomputation (its graph only collects "
                 "saved tensors)");
          });
      fn_(inputs);
    } catch (...) {
      if (now) now->restore();
      throw;
    }
    if (now) now->restore();
    LOOM_CHECK(collected.size() == saved_.size(), kWhat, "the recomputation saved ",
               collected.size(), " tensors for backward, the forward ", saved_.size(),
               " (the function must compute the same both times)");
    for (size_t k = 0; k < collected.size(); ++k) {
      const Description& d = saved_[k];
      LOOM_CHECK(
          std::ranges::equal(collected[k].sizes(), d.sizes) && collected[k].dtype() == d.dtype,
          kWhat, "saved tensor ", k, " is ", scalar_type_name(collected[k].dtype()), " ",
          shape_to_string(collected[k].sizes()), " in the recomputation, ",
          scalar_type_name(d.dtype), " ", shape_to_string(d.sizes),
          " in the forward (the function must compute the same both times)");
      if (!released_[k]) recomputed_[k] = std::move(collected[k]);
    }
  }

  CheckpointFunction fn_;
  std::vector<Tensor> inputs_;  // detached
  std::vector<bool> requires_grad_;
  std::optional<RngStates> rng_;
  AutocastState autocast_;
  std::recursive_mutex mutex_;
  std::vector<Description> saved_;
  std::vector<bool> released_;
  std::map<size_t, Tensor> recomputed_;  // until released
};

// One save of the forward, kept by its node in place of the tensor; frees the recomputed
// tensor when the node lets it go.
struct SavedSlot {
  SavedSlot(std::shared_ptr<Frame> f, size_t i) : frame(std::move(f)), index(i) {}
  ~SavedSlot() { frame->release(index); }
  SavedSlot(const SavedSlot&) = delete;
  SavedSlot& operator=(const SavedSlot&) = delete;
  std::shared_ptr<Frame> frame;
  size_t index;
};

std::vector<Tensor> checkpoint_without_reentrant(const CheckpointFunction& fn,
                                                 const std::vector<Tensor>& inputs,
                                                 const CheckpointOptions& options) {
  auto frame = std::make_shared<Frame>(fn, inputs, options);
  autograd::SavedTensorsHooks hooks(
      [frame](const Tensor& t) {
        return std::any(std::make_shared<SavedSlot>(frame, frame->pack(t)));
      },
      [](const std::any& packed) {
        const auto& slot = std::any_cast<const std::shared_ptr<SavedSlot>&>(packed);
        return slot->frame->take(slot->index);
      });
  return fn(inputs);
}

}  // namespace

std::vector<Tensor> checkpoint(const CheckpointFunction& fn, const std::vector<Tensor>& inputs,
                               CheckpointOptions options) {
  LOOM_CHECK(static_cast<bool>(fn), kWhat, "expected a function, found none");
  if (!autograd::is_enabled()) return fn(inputs);
  if (!options.use_reentrant) return checkpoint_without_reentrant(fn, inputs, options);
  auto saved = std::make_shared<Saved>();
  saved->fn = fn;
  saved->inputs = inputs;
  if (options.preserve_rng_state) saved->rng = RngStates::of(inputs);
  saved->autocast = AutocastState::of(inputs);
  std::vector<Tensor> outputs;
  {
    NoGradGuard no_grad;
    outputs = fn(inputs);
  }
  LOOM_CHECK(!outputs.empty(), kWhat, "expected the function to return tensors, found none");
  for (Tensor& out : outputs) {
    LOOM_CHECK(out.defined(), kWhat, "expected the function's outputs to be defined tensors");
    // An output that is an input passed through must still be a new tensor of the node.
    for (const Tensor& in : inputs) {
      if (in.defined() && in.impl() == out.impl()) {
        NoGradGuard no_grad;
        out = out.clone();
      }
    }
    saved->output_shapes.emplace_back(out.sizes().begin(), out.sizes().end());
  }
  // The node's inputs: the function's, then an anchor leaf that makes the node exist even
  // when no input requires grad (the parameters inside still need their gradients).
  std::vector<Tensor> node_inputs = inputs;
  Tensor anchor = zeros({});
  anchor.requires_grad_();
  node_inputs.push_back(anchor);
  const size_t count = node_inputs.size();
  return autograd::apply_function("CheckpointFunctionBackward", node_inputs, outputs,
                                  [saved, count](const std::vector<Tensor>& grads) {
                                    return recompute_and_backpropagate(*saved, grads, count);
                                  });
}

Tensor checkpoint(const std::function<Tensor(const Tensor&)>& fn, const Tensor& input,
                  CheckpointOptions options) {
  LOOM_CHECK(static_cast<bool>(fn), kWhat, "expected a function, found none");
  return checkpoint([fn](const std::vector<Tensor>& in) { return std::vector<Tensor>{fn(in[0])}; },
                    {input}, options)[0];
}

Tensor checkpoint_sequential(const Sequential& seq, int64_t segments, const Tensor& input,
                             CheckpointOptions options) {
  const int64_t layers = static_cast<int64_t>(seq->size());
  LOOM_CHECK(segments >= 1 && segments <= std::max<int64_t>(layers, 1), "nn::checkpoint_sequential",
             "expected between 1 and ", std::max<int64_t>(layers, 1),
             " segments (the Sequential's layers), found ", segments);
  const int64_t per_segment = layers / segments;
  Tensor x = input;
  int64_t start = 0;
  for (int64_t s = 0; s < segments; ++s) {
    const int64_t end = s + 1 == segments ? layers : start + per_segment;
    auto run = [&seq, start, end](const Tensor& in) {
      Tensor y = in;
      for (int64_t i = start; i < end; ++i) y = seq->forward_of(static_cast<size_t>(i))(y);
      return y;
    };
    x = s + 1 == segments ? run(x) : checkpoint(run, x, options);
    start = end;
  }
  return x;
}

}  // namespace loom::nn
