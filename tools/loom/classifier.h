// The Fashion-MNIST classifiers of `loom train` and `loom quantize`: the two models, the
// data normalisation, and test accuracy of any function of a batch.
#pragma once

#include <functional>
#include <string>

#include "loom/data.h"
#include "loom/nn.h"

namespace loom::cli {

// Fashion-MNIST's pixel mean and standard deviation over the training set (of x / 255).
inline constexpr double kMean = 0.2860, kStd = 0.3530;

// "cnn": conv 1->32 3x3, relu, maxpool 2; conv 32->64 3x3, relu, maxpool 2; fc 3136->128,
// relu; fc 128->10 (the convolutions pad by 1 so 28 -> 14 -> 7, 64 * 7 * 7 = 3136).
// "mlp": 784 -> 256 -> 10. Anything else is an error naming `what`'s flag.
nn::Sequential make_classifier(const std::string& arch, const char* what = "loom train");

// The fraction of `loader`'s examples whose argmax of model(batch) is their label
// (under no_grad).
double accuracy_of(const std::function<Tensor(const Tensor&)>& model, data::DataLoader& loader,
                   const std::string& device = "cpu");

}  // namespace loom::cli
