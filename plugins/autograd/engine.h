// The backward engine: runs a graph's nodes in dependency order on the calling thread.
#pragma once

#include <vector>

#include "graph.h"

namespace loom::autograd {

struct BackwardRequest {
  std::vector<Edge> roots;
  std::vector<Tensor> root_grads;  // one per root
  bool keep_graph = false;
  bool create_graph = false;
  // Non-empty: only these are computed. With accumulate, leaves among them get .grad
  // (backward(inputs=...)); without, their gradients are returned (autograd::grad).
  std::vector<Edge> inputs;
  bool accumulate = true;
};

// Runs backward; returns one gradient per request input (undefined where none flowed).
std::vector<Tensor> run_backward(const BackwardRequest& request);

// Whether the backward running on this thread builds a graph (create_graph).
bool current_create_graph();

}  // namespace loom::autograd
