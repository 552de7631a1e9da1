// A plugin whose typed kernel takes fewer arguments than its op's schema: registration
// must refuse it, so the plugin fails to initialise instead of failing the op's first
// call (Registrar::impl<Fn> checks the arity, loom/sdk/kernel.hpp).
#include "loom/sdk/plugin.hpp"

namespace {

// loom::add.out has four arguments (self, other, alpha, out); this kernel forgets alpha.
loom::sdk::Tensor add_out(const loom::sdk::Tensor&, const loom::sdk::Tensor&,
                          const loom::sdk::Tensor& out) {
  return out;
}

void init(loom::sdk::Registrar& r) {
  r.impl<&add_out>("loom::add.out", LOOM_KEY_CPU, loom::sdk::dtypes::floating);
}

}  // namespace

LOOM_PLUGIN("test_wrong_arity", "0.0.1", init)
