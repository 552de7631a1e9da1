// A plugin that defines an op the core already defines (loom::add.Tensor).
#include "loom/sdk/plugin.hpp"

namespace {

void init(loom::sdk::Registrar& r) {
  r.def("test_duplicate_op::fine(Tensor self) -> Tensor");
  r.def("loom::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
}

}  // namespace

LOOM_PLUGIN("test_duplicate_op", "0.0.1", init)
