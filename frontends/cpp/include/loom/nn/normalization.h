// Normalization layers: BatchNorm1d/2d (running statistics), LayerNorm, GroupNorm, as
// torch.nn's.
#pragma once

#include <optional>
#include <vector>

#include "loom/nn/module.h"
#include "loom/nn/options.h"

namespace loom::nn {

struct BatchNormOptions {
  BatchNormOptions(int64_t num_features) : num_features_(num_features) {}  // NOLINT
  LOOM_OPTION(int64_t, num_features);
  LOOM_OPTION(double, eps) = 1e-5;
  // Weight of the new batch in the running statistics; nullopt: a cumulative average
  // (1 / num_batches_tracked), as PyTorch's momentum=None.
  LOOM_OPTION(std::optional<double>, momentum) = 0.1;
  LOOM_OPTION(bool, affine) = true;
  LOOM_OPTION(bool, track_running_stats) = true;
};

// Shared by BatchNorm1d and BatchNorm2d; they differ in the input ranks they accept.
class BatchNormImplBase : public Module {
 public:
  BatchNormImplBase(const char* type_name, const BatchNormOptions& options);
  Tensor forward(const Tensor& input);
  void reset_running_stats();
  void reset_parameters();

  BatchNormOptions options;
  Tensor& weight;               // [C], ones (affine only)
  Tensor& bias;                 // [C], zeros (affine only)
  Tensor& running_mean;         // [C], zeros (track_running_stats only)
  Tensor& running_var;          // [C], ones
  Tensor& num_batches_tracked;  // int64 scalar

 protected:
  virtual void check_input(const Tensor& input) const = 0;
  std::string extra_repr() const override;
};

// Input [N, C] or [N, C, L].
class BatchNorm1dImpl : public BatchNormImplBase {
 public:
  explicit BatchNorm1dImpl(const BatchNormOptions& options)
      : BatchNormImplBase("BatchNorm1d", options) {}

 protected:
  void check_input(const Tensor& input) const override;
};
LOOM_MODULE(BatchNorm1d);

// Input [N, C, H, W].
class BatchNorm2dImpl : public BatchNormImplBase {
 public:
  explicit BatchNorm2dImpl(const BatchNormOptions& options)
      : BatchNormImplBase("BatchNorm2d", options) {}

 protected:
  void check_input(const Tensor& input) const override;
};
LOOM_MODULE(BatchNorm2d);

struct LayerNormOptions {
  LayerNormOptions(std::vector<int64_t> normalized_shape)  // NOLINT: implicit, as libtorch's
      : normalized_shape_(std::move(normalized_shape)) {}
  LOOM_OPTION(std::vector<int64_t>, normalized_shape);
  LOOM_OPTION(double, eps) = 1e-5;
  LOOM_OPTION(bool, elementwise_affine) = true;
  LOOM_OPTION(bool, bias) = true;
};

class LayerNormImpl : public Module {
 public:
  explicit LayerNormImpl(const LayerNormOptions& options);
  Tensor forward(const Tensor& input) const;
  LayerNormOptions options;
  Tensor& weight;  // normalized_shape, ones
  Tensor& bias;    // normalized_shape, zeros

 protected:
  std::string extra_repr() const override;
};
LOOM_MODULE(LayerNorm);

struct GroupNormOptions {
  GroupNormOptions(int64_t num_groups, int64_t num_channels)
      : num_groups_(num_groups), num_channels_(num_channels) {}
  LOOM_OPTION(int64_t, num_groups);
  LOOM_OPTION(int64_t, num_channels);
  LOOM_OPTION(double, eps) = 1e-5;
  LOOM_OPTION(bool, affine) = true;
};

class GroupNormImpl : public Module {
 public:
  GroupNormImpl(int64_t num_groups, int64_t num_channels)
      : GroupNormImpl(GroupNormOptions(num_groups, num_channels)) {}
  explicit GroupNormImpl(const GroupNormOptions& options);
  Tensor forward(const Tensor& input) const;
  GroupNormOptions options;
  Tensor& weight;  // [C], ones
  Tensor& bias;    // [C], zeros

 protected:
  std::string extra_repr() const override;
};
LOOM_MODULE(GroupNorm);

}  // namespace loom::nn
