// A plugin whose initialisation registers something and then fails, as a driver-less
// device plugin would; the host must undo the registration and report the message.
#include "loom/sdk/plugin.hpp"

namespace {

void init(loom::sdk::Registrar& r) {
  r.def("test_init_fails::partial(Tensor self) -> Tensor");
  throw loom::sdk::Error("no device found: the simulated driver is not installed",
                         LOOM_STATUS_FAILED_PRECONDITION);
}

}  // namespace

LOOM_PLUGIN("test_init_fails", "0.0.1", init)
