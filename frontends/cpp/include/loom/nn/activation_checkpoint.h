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
  // true: the function runs without recording and one node recomputes and backpropagates
  // through it (Note [Activation checkpointing]); false: PyTorch's recommended kind, the
  // ordinary graph with its saved tensors recomputed on demand (Note [Non-reentrant
  // checkpoint]), which works with autograd::grad and backward(inputs=) too.
  bool use_reentrant = true;
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
//
// Note [Non-reentrant checkpoint]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// With use_reentrant = false the forward runs with grad on, so the graph is the ordinary
// one (each op's node, edges to the inputs and parameters: gradient hooks, DDP, grad() and
// create_graph behave as without checkpointing), under saved-tensor hooks
// (autograd::SavedTensorsHooks) whose pack keeps only the save's number and the tensor's
// shape and dtype. The first unpack in backward recomputes: the random streams and
// autocast regions restored, `fn` runs again on the inputs (detached, requiring grad as
// they did) under hooks that collect what its ops save, in the same order; each unpack then
// reads its tensor, which is dropped when the node that saved it frees its saved tensors
// (after its backward, or with a retained graph). A recomputation that saves another
// number of tensors, or one of
// another shape or dtype, fails naming the first difference. The inputs are kept as they
// are: writing them in place before backward changes the recomputation.
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
