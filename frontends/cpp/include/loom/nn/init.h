// nn::init: the parameter initialisations of torch.nn.init, drawn from the default
// generator (seed it with loom::manual_seed). Each fills its tensor in place without
// recording history and returns it.
#pragma once

#include <optional>
#include <string_view>
#include <utility>

#include "loom/ops/tensor.h"

namespace loom::nn::init {

// fan_in = size(1) * receptive field, fan_out = size(0) * receptive field, where the
// receptive field is the product of the sizes after the first two (a [out, in, kh, kw]
// convolution weight); needs at least 2 dimensions.
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t);
// The recommended gain for a nonlinearity: linear/conv*/sigmoid 1, tanh 5/3, relu
// sqrt(2), leaky_relu sqrt(2 / (1 + slope^2)) (slope default 0.01), selu 3/4.
double calculate_gain(std::string_view nonlinearity, std::optional<double> param = std::nullopt);

Tensor uniform_(const Tensor& t, double a = 0.0, double b = 1.0);
Tensor normal_(const Tensor& t, double mean = 0.0, double std = 1.0);
Tensor constant_(const Tensor& t, double value);
Tensor zeros_(const Tensor& t);
Tensor ones_(const Tensor& t);
// U(-b, b) with b = gain * sqrt(6 / (fan_in + fan_out)).
Tensor xavier_uniform_(const Tensor& t, double gain = 1.0);
// N(0, gain * sqrt(2 / (fan_in + fan_out))).
Tensor xavier_normal_(const Tensor& t, double gain = 1.0);
// U(-b, b) with b = gain(nonlinearity, a) * sqrt(3 / fan); mode "fan_in" or "fan_out".
// Linear and Conv use kaiming_uniform_(w, sqrt(5)), as PyTorch's reset_parameters.
Tensor kaiming_uniform_(const Tensor& t, double a = 0.0, std::string_view mode = "fan_in",
                        std::string_view nonlinearity = "leaky_relu");
// N(0, gain(nonlinearity, a) / sqrt(fan)).
Tensor kaiming_normal_(const Tensor& t, double a = 0.0, std::string_view mode = "fan_in",
                       std::string_view nonlinearity = "leaky_relu");

}  // namespace loom::nn::init
