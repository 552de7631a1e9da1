// Pooling layers over the pool ops (which check their arguments).
#include "loom/nn/pooling.h"

#include "loom/ops/generated/ops.h"

namespace loom::nn {
Tensor MaxPool2dImpl::forward(const Tensor& input) const {
  return loom::max_pool2d(input, options.kernel_size().values(), options.stride().values(),
                          options.padding().values(), options.dilation().values(),
                          options.ceil_mode());
}

std::string MaxPool2dImpl::extra_repr() const {
  return str_cat(
      "kernel_size=", options.kernel_size().to_string(), ", stride=", options.stride().to_string(),
      ", padding=", options.padding().to_string(), ", dilation=", options.dilation().to_string(),
      ", ceil_mode=", options.ceil_mode() ? "true" : "false");
}

Tensor AvgPool2dImpl::forward(const Tensor& input) const {
  return loom::avg_pool2d(input, options.kernel_size().values(), options.stride().values(),
                          options.padding().values(), options.ceil_mode(),
                          options.count_include_pad(), options.divisor_override());
}

std::string AvgPool2dImpl::extra_repr() const {
  return str_cat("kernel_size=", options.kernel_size().to_string(),
                 ", stride=", options.stride().to_string(),
                 ", padding=", options.padding().to_string());
}

Tensor AdaptiveAvgPool2dImpl::forward(const Tensor& input) const {
  return loom::adaptive_avg_pool2d(input, output_size.values());
}

std::string AdaptiveAvgPool2dImpl::extra_repr() const {
  return "output_size=" + output_size.to_string();
}

}  // namespace loom::nn
