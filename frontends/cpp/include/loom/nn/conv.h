// Conv2d, as torch.nn.Conv2d (zero padding; groups and dilation).
#pragma once

#include "loom/nn/module.h"
#include "loom/nn/options.h"

namespace loom::nn {

struct Conv2dOptions {
  Conv2dOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<2> kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  LOOM_OPTION(int64_t, in_channels);
  LOOM_OPTION(int64_t, out_channels);
  LOOM_OPTION(ExpandingArray<2>, kernel_size);
  LOOM_OPTION(ExpandingArray<2>, stride) = 1;
  LOOM_OPTION(ExpandingArray<2>, padding) = 0;
  LOOM_OPTION(ExpandingArray<2>, dilation) = 1;
  LOOM_OPTION(int64_t, groups) = 1;
  LOOM_OPTION(bool, bias) = true;
};

// weight [out, in / groups, kh, kw] and bias [out], both U(-1/sqrt(fan_in),
// 1/sqrt(fan_in)) with fan_in = in / groups * kh * kw, as PyTorch's.
class Conv2dImpl : public Module {
 public:
  Conv2dImpl(int64_t in_channels, int64_t out_channels, ExpandingArray<2> kernel_size)
      : Conv2dImpl(Conv2dOptions(in_channels, out_channels, kernel_size)) {}
  explicit Conv2dImpl(const Conv2dOptions& options);
  Tensor forward(const Tensor& input) const;
  void reset_parameters();

  Conv2dOptions options;
  Tensor& weight;
  Tensor& bias;  // undefined without bias

 protected:
  std::string extra_repr() const override;
};
LOOM_MODULE(Conv2d);

}  // namespace loom::nn
