// Loss modules: CrossEntropyLoss (class weights, ignore_index, label smoothing), NLLLoss,
// MSELoss, L1Loss, BCEWithLogitsLoss, as torch.nn's. forward(input, target).
#pragma once

#include <optional>

#include "loom/nn/module.h"
#include "loom/nn/options.h"

namespace loom::nn {

// How per-element losses are combined (the values of PyTorch's at::Reduction).
enum class Reduction : int64_t { None = 0, Mean = 1, Sum = 2 };

struct CrossEntropyLossOptions {
  LOOM_OPTION(std::optional<Tensor>, weight);  // [C] class weights
  LOOM_OPTION(int64_t, ignore_index) = -100;
  LOOM_OPTION(Reduction, reduction) = Reduction::Mean;
  LOOM_OPTION(double, label_smoothing) = 0.0;
};

// input [N, C] (or [N, C, d...]) logits; target [N] class indices (int64) or [N, C]
// probabilities.
class CrossEntropyLossImpl : public Module {
 public:
  explicit CrossEntropyLossImpl(const CrossEntropyLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target) const;
  CrossEntropyLossOptions options;
};
LOOM_MODULE(CrossEntropyLoss);

struct NLLLossOptions {
  LOOM_OPTION(std::optional<Tensor>, weight);
  LOOM_OPTION(int64_t, ignore_index) = -100;
  LOOM_OPTION(Reduction, reduction) = Reduction::Mean;
};

// input [N, C] log-probabilities; target [N] class indices.
class NLLLossImpl : public Module {
 public:
  explicit NLLLossImpl(const NLLLossOptions& options = {}) : Module("NLLLoss"), options(options) {}
  Tensor forward(const Tensor& input, const Tensor& target) const;
  NLLLossOptions options;
};
LOOM_MODULE(NLLLoss);

class MSELossImpl : public Module {
 public:
  explicit MSELossImpl(Reduction reduction = Reduction::Mean)
      : Module("MSELoss"), reduction(reduction) {}
  Tensor forward(const Tensor& input, const Tensor& target) const;
  Reduction reduction;
};
LOOM_MODULE(MSELoss);

class L1LossImpl : public Module {
 public:
  explicit L1LossImpl(Reduction reduction = Reduction::Mean)
      : Module("L1Loss"), reduction(reduction) {}
  Tensor forward(const Tensor& input, const Tensor& target) const;
  Reduction reduction;
};
LOOM_MODULE(L1Loss);

struct BCEWithLogitsLossOptions {
  LOOM_OPTION(std::optional<Tensor>, weight);      // broadcast to the input
  LOOM_OPTION(std::optional<Tensor>, pos_weight);  // [C], weight of the positive class
  LOOM_OPTION(Reduction, reduction) = Reduction::Mean;
};

class BCEWithLogitsLossImpl : public Module {
 public:
  explicit BCEWithLogitsLossImpl(const BCEWithLogitsLossOptions& options = {})
      : Module("BCEWithLogitsLoss"), options(options) {}
  Tensor forward(const Tensor& input, const Tensor& target) const;
  BCEWithLogitsLossOptions options;
};
LOOM_MODULE(BCEWithLogitsLoss);

}  // namespace loom::nn
