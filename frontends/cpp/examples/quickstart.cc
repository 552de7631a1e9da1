// The README's C++ quick start, built and run by the test suite so it stays true.
#include <iostream>

#include "loom/loom.h"

int main() {
  try {
    loom::Runtime runtime = loom::Runtime::load_default();  // or load_file("deploy.textproto")
    loom::Tensor a =
        loom::tensor({1.0, 2.0, 3.0}, loom::TensorOptions().dtype(loom::ScalarType::Float32));
    loom::Tensor b = loom::ones({2, 3});
    loom::Tensor c = (a * 2 + b).exp();  // broadcasting, C++ numbers, methods
    loom::Tensor mask = c > 10.0;        // bool tensor
    c.add_(a, /*alpha=*/0.5);            // in place
    std::cout << c << "\n" << c.sum().item<float>() << "\n" << mask << "\n";
    DLManagedTensor* shared = loom::to_dlpack(c);  // zero-copy to another framework
    shared->deleter(shared);
    return 0;
  } catch (const loom::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
