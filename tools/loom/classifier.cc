// The classifiers shared by `loom train` and `loom quantize` (classifier.h).
#include "classifier.h"

#include "loom/autograd.h"
#include "loom/core/error.h"
#include "loom/ops/generated/ops.h"
#include "loom/tensor_io.h"

namespace loom::cli {

nn::Sequential make_classifier(const std::string& arch, const char* what) {
  if (arch == "cnn") {
    return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 32, 3).padding(1)), nn::ReLU(),
                          nn::MaxPool2d(2), nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)),
                          nn::ReLU(), nn::MaxPool2d(2), nn::Flatten(), nn::Linear(3136, 128),
                          nn::ReLU(), nn::Linear(128, 10));
  }
  LOOM_CHECK(arch == "mlp", what, "expected the model cnn or mlp, found '", arch, "'");
  return nn::Sequential(nn::Flatten(), nn::Linear(784, 256), nn::ReLU(), nn::Linear(256, 10));
}

double accuracy_of(const std::function<Tensor(const Tensor&)>& model, data::DataLoader& loader,
                   const std::string& device) {
  NoGradGuard no_grad;
  int64_t correct = 0, seen = 0;
  for (const data::Example& batch : loader) {
    Tensor logits = model(batch.data.to(device));
    Tensor predicted = loom::argmax(logits.to("cpu"), 1);
    correct += static_cast<int64_t>(loom::sum(loom::eq(predicted, batch.target)).item<double>());
    seen += batch.target.size(0);
  }
  return seen == 0 ? 0.0 : static_cast<double>(correct) / static_cast<double>(seen);
}

}  // namespace loom::cli
