// Activation checkpointing, as torch.utils.checkpoint: a function's activations are not kept
// for backward but computed again when backward reaches it, trading compute for memory.
//
//   Tensor y = nn::checkpoint([&](const Tensor& x) { return block(x); }, x);
//   Tensor out = nn::checkpoint_sequential(net, /*segments=*/4, x);
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "loom/nn/container.h"

namespace loom::nn {

struct CheckpointOptions {
  // Restore the random streams (every device type of the inputs, and the cpu) for the
  // recomputation, so dropout drops the same elements as in the forward.
  bool preserve_rng_state = true;
};

using CheckpointFunction = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// Note [Activation checkpointing]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The forward runs `fn` under no-grad, so none of its activations are saved, and gives its
// outputs one backward node (autograd::apply_function). That node's backward restores the
// random streams and the autocast regions of the forward, runs `fn` again on detached
// copies of the inputs with grad on, and backpropagates the incoming gradients through
// that recomputation (a backward inside backward): the parameters `fn` uses accumulate
// their gradients there, and the inputs' gradients are the node's. Unlike PyTorch's
// reentrant checkpoint, the node exists even when no input requires grad (an anchor leaf
// joins its inputs), so a checkpointed first layer still trains its parameters. Without
// grad mode (NoGradGuard, InferenceMode, or no autograd plugin) `fn` simply runs. The
// recomputation must return as many tensors of the same shapes as the forward did, or the
// backward fails naming the difference.
std::vector<Tensor> checkpoint(const CheckpointFunction& fn, const std::vector<Tensor>& inputs,
                               CheckpointOptions options = {});
Tensor checkpoint(const std::function<Tensor(const Tensor&)>& fn, const Tensor& input,
                  CheckpointOptions options = {});

// `seq` in `segments` consecutive runs of layers (the last run takes the remainder), each
// checkpointed but the last, which keeps its activations (its backward comes first anyway),
// as torch.utils.checkpoint.checkpoint_sequential.
Tensor checkpoint_sequential(const Sequential& seq, int64_t segments, const Tensor& input,
                             CheckpointOptions options = {});

}  // namespace loom::nn
