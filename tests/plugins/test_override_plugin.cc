// Overrides test::value on CPU with a kernel returning 2; the stress test loads and
// unloads it while other threads call the op.
#include "loom/sdk/plugin.hpp"

namespace {

int64_t value(const loom::sdk::Tensor&) {
  return 2;
}

void init(loom::sdk::Registrar& r) {
  r.impl<&value>("test::value", LOOM_KEY_CPU);
}

}  // namespace

LOOM_PLUGIN("test_override", "0.0.1", init)
