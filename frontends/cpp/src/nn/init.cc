// nn::init over the random and fill ops, without recording history.
#include "loom/nn/init.h"

#include <cmath>
#include <string>

#include "loom/autograd.h"
#include "loom/core/error.h"
#include "loom/ops/generated/ops.h"

namespace loom::nn::init {
namespace {

constexpr const char* kWhat = "nn::init";

int64_t fan(const Tensor& t, std::string_view mode) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  if (mode == "fan_in") return fan_in;
  if (mode == "fan_out") return fan_out;
  fail(kWhat, "expected mode 'fan_in' or 'fan_out', found '", std::string(mode), "'");
}

}  // namespace

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t) {
  LOOM_CHECK(t.dim() >= 2, kWhat,
             "fan in and fan out need a tensor of at least 2 dimensions, found ", t.dim());
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.sizes()[d];
  return {t.sizes()[1] * receptive, t.sizes()[0] * receptive};
}

double calculate_gain(std::string_view nonlinearity, std::optional<double> param) {
  if (nonlinearity == "linear" || nonlinearity == "sigmoid" || nonlinearity == "identity" ||
      nonlinearity.substr(0, 4) == "conv") {
    return 1.0;
  }
  if (nonlinearity == "tanh") return 5.0 / 3.0;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") {
    double slope = param.value_or(0.01);
    return std::sqrt(2.0 / (1.0 + slope * slope));
  }
  if (nonlinearity == "selu") return 3.0 / 4.0;
  fail(kWhat, "unknown nonlinearity '", std::string(nonlinearity),
       "' (expected linear, conv1d/2d/3d, sigmoid, tanh, relu, leaky_relu or selu)");
}

Tensor uniform_(const Tensor& t, double a, double b) {
  NoGradGuard no_grad;
  return loom::uniform_(t, a, b);
}

Tensor normal_(const Tensor& t, double mean, double std) {
  NoGradGuard no_grad;
  return loom::normal_(t, mean, std);
}

Tensor constant_(const Tensor& t, double value) {
  NoGradGuard no_grad;
  return loom::fill_(t, value);
}

Tensor zeros_(const Tensor& t) {
  return constant_(t, 0.0);
}
Tensor ones_(const Tensor& t) {
  return constant_(t, 1.0);
}

Tensor xavier_uniform_(const Tensor& t, double gain) {
  if (t.numel() == 0) return t;  // nothing to draw (PyTorch warns and returns)
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  double bound = gain * std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  return init::uniform_(t, -bound, bound);
}

Tensor xavier_normal_(const Tensor& t, double gain) {
  if (t.numel() == 0) return t;  // nothing to draw (PyTorch warns and returns)
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  return init::normal_(t, 0.0, gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out)));
}

Tensor kaiming_uniform_(const Tensor& t, double a, std::string_view mode,
                        std::string_view nonlinearity) {
  if (t.numel() == 0) return t;  // nothing to draw (PyTorch warns and returns)
  double std = calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan(t, mode)));
  double bound = std::sqrt(3.0) * std;
  return init::uniform_(t, -bound, bound);
}

Tensor kaiming_normal_(const Tensor& t, double a, std::string_view mode,
                       std::string_view nonlinearity) {
  if (t.numel() == 0) return t;  // nothing to draw (PyTorch warns and returns)
  double std = calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan(t, mode)));
  return init::normal_(t, 0.0, std);
}

}  // namespace loom::nn::init
