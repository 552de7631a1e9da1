// The autograd plugin's "loom.autograd" extension table (loom/autograd_api.h) and the
// list of ops it records, which the table reports to frontends.
#pragma once

#include <string>
#include <vector>

namespace loom::autograd {

// An op whose Autograd kernel is the plugin's: with a backward formula, or with outputs
// marked not differentiable.
struct RecordedOp {
  std::string name;  // "loom::mul.Tensor"
  bool differentiable;
};

// Filled by the plugin's init, in registration order.
std::vector<RecordedOp>& recorded_ops();

// Publishes the table; the host removes it when the plugin unloads.
void publish_api_table();

}  // namespace loom::autograd
