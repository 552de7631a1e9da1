// my_backend: elementwise multiplication on the CPU key, for every dtype with a C++ type.
#include "loom/sdk/loop.hpp"
#include "loom/sdk/plugin.hpp"

using loom::sdk::Tensor;

// The out= variant of a structured op: the core has already broadcast self and other to
// out's shape (a stride may be 0, an input may be transposed) and cast them to out's
// dtype; only the math is left, and elementwise() walks any strides.
static Tensor mul_out(const Tensor& a, const Tensor& b, const Tensor& out) {
  loom::sdk::for_each_dtype(out.dtype(), [&]<typename T>() {
    loom::sdk::elementwise<T>(
        out, [](T x, T y) { return static_cast<T>(x * y); }, a, b);
  });
  return out;
}

static void init(loom::sdk::Registrar& r) {
  // mul, mul_ and * come from the core. Calls in other dtypes (float16, bfloat16) are
  // refused before reaching the kernel: "backend CPU does not support dtype float16".
  r.impl<&mul_out>("loom::mul.out", LOOM_KEY_CPU, loom::sdk::dtypes::standard);
}

LOOM_PLUGIN("my_backend", "0.1.0", init)
