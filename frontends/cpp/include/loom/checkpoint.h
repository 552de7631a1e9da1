// Training checkpoints: a model's state dict (and an optimizer's state) in one
// safetensors file, model entries under "model.", optimizer entries under "optimizer.",
// plus string metadata (the epoch, the run's options).
#pragma once

#include <map>
#include <string>

#include "loom/nn/module.h"
#include "loom/optim/optimizer.h"

namespace loom {

// Writes atomically (save_safetensors).
void save_checkpoint(const std::string& path, const nn::Module& model,
                     const optim::Optimizer* optimizer = nullptr,
                     const std::map<std::string, std::string>& metadata = {});

// Reads `path` and restores the model (strict: exactly its keys) and, when given, the
// optimizer; returns the metadata. Every check runs before anything changes: a
// truncated, corrupt or mismatched file is an error naming the key and the expected
// versus found shape or dtype, and the model and optimizer stay as they were.
std::map<std::string, std::string> load_checkpoint(const std::string& path, nn::Module& model,
                                                   optim::Optimizer* optimizer = nullptr,
                                                   bool strict = true);

}  // namespace loom
