// Checkpoints over safetensors, the module state dict and the optimizer state.
#include "loom/checkpoint.h"

#include "loom/core/error.h"
#include "loom/safetensors.h"

namespace loom {
namespace {

constexpr const char* kModel = "model.";
constexpr const char* kOptimizer = "optimizer.";

bool starts_with(const std::string& s, const char* prefix) {
  return s.rfind(prefix, 0) == 0;
}

}  // namespace

void save_checkpoint(const std::string& path, const nn::Module& model,
                     const optim::Optimizer* optimizer,
                     const std::map<std::string, std::string>& metadata) {
  NamedTensorList entries;
  for (auto& [key, t] : model.state_dict()) entries.emplace_back(kModel + key, t);
  if (optimizer != nullptr) {
    for (auto& [key, t] : optimizer->state_dict()) entries.emplace_back(kOptimizer + key, t);
  }
  save_safetensors(path, entries, metadata);
}

std::map<std::string, std::string> load_checkpoint(const std::string& path, nn::Module& model,
                                                   optim::Optimizer* optimizer, bool strict) {
  SafetensorsFile file = load_safetensors(path);
  nn::NamedTensors model_state, optimizer_state;
  for (auto& [key, t] : file.tensors) {
    if (starts_with(key, kModel)) {
      model_state.emplace_back(key.substr(6), t);
    } else if (starts_with(key, kOptimizer)) {
      optimizer_state.emplace_back(key.substr(10), t);
    } else {
      LOOM_CHECK(!strict, "load_checkpoint", "'", path, "': unexpected key '", key,
                 "' (expected model.* or optimizer.*)");
    }
  }
  if (optimizer != nullptr) {
    LOOM_CHECK(!optimizer_state.empty(), "load_checkpoint", "'", path,
               "' holds no optimizer state (it was saved without an optimizer)");
    optimizer->check_state_dict(optimizer_state);  // before the model changes
  }
  model.load_state_dict(model_state, strict);
  if (optimizer != nullptr) optimizer->load_state_dict(optimizer_state);
  return file.metadata;
}

}  // namespace loom
