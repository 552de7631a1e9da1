// The flattened, fused layers of an nn::Sequential with the names of the original model
// (a fused Conv2d + ReLU keeps the Conv2d's name): what the flows and the debugger walk
// (Note [Quantizing Sequential models] in flows.cc).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loom/quantization.h"

namespace loom::quantization::detail {

struct Layer {
  std::string name;  // dotted path in the original model
  std::shared_ptr<nn::Module> module;
  std::function<Tensor(const Tensor&)> forward;
};

std::vector<Layer> fused_layers(const nn::Sequential& model);

}  // namespace loom::quantization::detail
