// The README's training example: a small network fitted to a synthetic problem (is a
// point inside the unit circle?) with the nn, optim and data APIs, then checkpointed and
// restored. The `cpp_training_example` test runs it.
#include <loom/checkpoint.h>
#include <loom/data.h>
#include <loom/loom.h>
#include <loom/nn.h>
#include <loom/optim.h>

#include <iostream>

int main() {
  try {
    loom::Runtime::load_default();  // cpu + autograd
    loom::manual_seed(0);
    loom::Tensor points = loom::rand({2048, 2}) * 4.0 - 2.0;
    loom::Tensor inside = loom::to((points * points).sum(1) < 1.0, loom::ScalarType::Int64);

    loom::data::DataLoaderOptions batches;
    batches.batch_size = 64;
    loom::data::DataLoader loader(loom::data::TensorDataset(points, inside), batches);

    loom::nn::Sequential net(loom::nn::Linear(2, 32), loom::nn::ReLU(), loom::nn::Linear(32, 2));
    loom::optim::Adam optimizer(net->parameters(), loom::optim::AdamOptions(1e-2));
    loom::nn::CrossEntropyLoss criterion;
    for (int epoch = 0; epoch < 20; ++epoch) {
      for (const loom::data::Example& batch : loader) {
        optimizer.zero_grad();
        loom::Tensor loss = criterion(net(batch.data), batch.target);
        loss.backward();
        optimizer.step();
      }
    }
    loom::save_checkpoint("circle.safetensors", *net, &optimizer, {{"epoch", "20"}});

    loom::load_checkpoint("circle.safetensors", *net, &optimizer);  // resumes exactly
    std::cout << *net << "\n";
    loom::NoGradGuard no_grad;
    loom::Tensor predicted = loom::argmax(net(points), 1);
    double accuracy =
        loom::mean(loom::to(loom::eq(predicted, inside), loom::ScalarType::Float32)).item<double>();
    std::cout << "accuracy " << accuracy << "\n";
    return accuracy > 0.95 ? 0 : 1;
  } catch (const loom::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
