// Conv2d.
#include "loom/nn/conv.h"

#include <cmath>

#include "loom/core/error.h"
#include "loom/core/type_promotion.h"
#include "loom/factories.h"
#include "loom/nn/init.h"
#include "loom/ops/generated/ops.h"

namespace loom::nn {
namespace {

const Conv2dOptions& checked(const Conv2dOptions& o) {
  const char* what = "nn::Conv2d";
  LOOM_CHECK(o.groups() > 0, what, "expected groups > 0, found ", o.groups());
  LOOM_CHECK(o.in_channels() > 0 && o.in_channels() % o.groups() == 0, what,
             "expected in_channels divisible by groups ", o.groups(), ", found ", o.in_channels());
  LOOM_CHECK(o.out_channels() > 0 && o.out_channels() % o.groups() == 0, what,
             "expected out_channels divisible by groups ", o.groups(), ", found ",
             o.out_channels());
  for (size_t i = 0; i < 2; ++i) {
    LOOM_CHECK(
        o.kernel_size()[i] > 0 && o.stride()[i] > 0 && o.dilation()[i] > 0 && o.padding()[i] >= 0,
        what, "expected positive kernel_size, stride and dilation and non-negative ",
        "padding, found kernel_size=", o.kernel_size().to_string(),
        " stride=", o.stride().to_string(), " dilation=", o.dilation().to_string(),
        " padding=", o.padding().to_string());
  }
  return o;
}

}  // namespace

Conv2dImpl::Conv2dImpl(const Conv2dOptions& o)
    : Module("Conv2d"),
      options(checked(o)),
      weight(
          register_parameter("weight", loom::empty({o.out_channels(), o.in_channels() / o.groups(),
                                                    o.kernel_size()[0], o.kernel_size()[1]}))),
      bias(register_parameter("bias", o.bias() ? loom::empty({o.out_channels()}) : Tensor())) {
  reset_parameters();
}

void Conv2dImpl::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    auto [fan_in, fan_out] = init::calculate_fan_in_and_fan_out(weight);
    double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
    init::uniform_(bias, -bound, bound);
  }
}

Tensor Conv2dImpl::forward(const Tensor& input) const {
  LOOM_CHECK((input.dim() == 3 || input.dim() == 4) &&
                 input.sizes()[input.dim() - 3] == options.in_channels(),
             "nn::Conv2d", "expected an input [N, ", options.in_channels(), ", H, W] or [",
             options.in_channels(), ", H, W], found shape ", shape_to_string(input.sizes()));
  return loom::conv2d(input, weight, bias.defined() ? std::optional<Tensor>(bias) : std::nullopt,
                      options.stride().values(), options.padding().values(),
                      options.dilation().values(), options.groups());
}

std::string Conv2dImpl::extra_repr() const {
  std::string s = str_cat(options.in_channels(), ", ", options.out_channels(),
                          ", kernel_size=", options.kernel_size().to_string(),
                          ", stride=", options.stride().to_string());
  if (options.padding()[0] != 0 || options.padding()[1] != 0) {
    s += ", padding=" + options.padding().to_string();
  }
  if (options.dilation()[0] != 1 || options.dilation()[1] != 1) {
    s += ", dilation=" + options.dilation().to_string();
  }
  if (options.groups() != 1) s += str_cat(", groups=", options.groups());
  if (!options.bias()) s += ", bias=false";
  return s;
}

}  // namespace loom::nn
