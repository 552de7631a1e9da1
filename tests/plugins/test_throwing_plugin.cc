// Kernels that fail: one throws a C++ exception (the SDK turns it into an error at the
// edge), one returns a LoomError directly, one returns the wrong type.
#include <stdexcept>

#include "loom/sdk/plugin.hpp"

namespace {

loom::sdk::Tensor throws_exception(const loom::sdk::Tensor&) {
  throw std::runtime_error("boom from a C++ exception");
}

LoomError* returns_error(void*, const LoomKernelCall*) {
  return loom::sdk::make_error(
      LOOM_STATUS_INVALID_ARGUMENT,
      "[test_throwing::returns_error] expected a positive value, found -1");
}

LoomError* returns_nothing(void*, const LoomKernelCall*) {
  return nullptr;
}

void init(loom::sdk::Registrar& r) {
  r.def("test_throwing::throws(Tensor self) -> Tensor");
  r.def("test_throwing::returns_error(Tensor self) -> Tensor");
  r.def("test_throwing::returns_nothing(Tensor self) -> Tensor");
  r.impl<&throws_exception>("test_throwing::throws", LOOM_KEY_CPU);
  r.impl("test_throwing::returns_error", LOOM_KEY_CPU, &returns_error);
  r.impl("test_throwing::returns_nothing", LOOM_KEY_CPU, &returns_nothing);
}

}  // namespace

LOOM_PLUGIN("test_throwing", "0.0.1", init)
