// Pooling layers: MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, as torch.nn's.
#pragma once

#include <optional>

#include "loom/nn/module.h"
#include "loom/nn/options.h"

namespace loom::nn {

struct MaxPool2dOptions {
  MaxPool2dOptions(ExpandingArray<2> kernel_size)  // NOLINT: implicit, as libtorch's
      : kernel_size_(kernel_size), stride_(kernel_size) {}
  LOOM_OPTION(ExpandingArray<2>, kernel_size);
  LOOM_OPTION(ExpandingArray<2>, stride);  // default: kernel_size
  LOOM_OPTION(ExpandingArray<2>, padding) = 0;
  LOOM_OPTION(ExpandingArray<2>, dilation) = 1;
  LOOM_OPTION(bool, ceil_mode) = false;
};

class MaxPool2dImpl : public Module {
 public:
  explicit MaxPool2dImpl(ExpandingArray<2> kernel_size)
      : MaxPool2dImpl(MaxPool2dOptions(kernel_size)) {}
  explicit MaxPool2dImpl(const MaxPool2dOptions& options) : Module("MaxPool2d"), options(options) {}
  Tensor forward(const Tensor& input) const;
  MaxPool2dOptions options;

 protected:
  std::string extra_repr() const override;
};
LOOM_MODULE(MaxPool2d);

struct AvgPool2dOptions {
  AvgPool2dOptions(ExpandingArray<2> kernel_size)  // NOLINT: implicit, as libtorch's
      : kernel_size_(kernel_size), stride_(kernel_size) {}
  LOOM_OPTION(ExpandingArray<2>, kernel_size);
  LOOM_OPTION(ExpandingArray<2>, stride);  // default: kernel_size
  LOOM_OPTION(ExpandingArray<2>, padding) = 0;
  LOOM_OPTION(bool, ceil_mode) = false;
  LOOM_OPTION(bool, count_include_pad) = true;
  LOOM_OPTION(std::optional<int64_t>, divisor_override);
};

class AvgPool2dImpl : public Module {
 public:
  explicit AvgPool2dImpl(ExpandingArray<2> kernel_size)
      : AvgPool2dImpl(AvgPool2dOptions(kernel_size)) {}
  explicit AvgPool2dImpl(const AvgPool2dOptions& options) : Module("AvgPool2d"), options(options) {}
  Tensor forward(const Tensor& input) const;
  AvgPool2dOptions options;

 protected:
  std::string extra_repr() const override;
};
LOOM_MODULE(AvgPool2d);

class AdaptiveAvgPool2dImpl : public Module {
 public:
  explicit AdaptiveAvgPool2dImpl(ExpandingArray<2> output_size)
      : Module("AdaptiveAvgPool2d"), output_size(output_size) {}
  Tensor forward(const Tensor& input) const;
  ExpandingArray<2> output_size;

 protected:
  std::string extra_repr() const override;
};
LOOM_MODULE(AdaptiveAvgPool2d);

}  // namespace loom::nn
