// A small app on the installed loom: loads the default plugins (found beside the loom
// libraries, wherever this executable lives), computes, and prints the result.
#include <loom/loom.h>

#include <iostream>

int main() {
  try {
    loom::Runtime runtime = loom::Runtime::load_default();
    loom::Tensor x = loom::arange(6, loom::TensorOptions().dtype(loom::ScalarType::Float32));
    loom::Tensor y = (x.view({2, 3}) * 2.0).sum();
    std::cout << "sum = " << y.item<float>() << "\n";  // 2 * (0 + 1 + ... + 5) = 30
    return y.item<float>() == 30.0f ? 0 : 1;
  } catch (const loom::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
