// A backend's autocast policy, published for the cpu device type as a vendor publishes one
// for its own (loom/autocast_api.h): float16 by default, softmax (every overload) kept as
// given, and mm computed in float32.
#include "loom/autocast_api.h"
#include "loom/sdk/extension.hpp"
#include "loom/sdk/plugin.hpp"

namespace {

const LoomAutocastOverride kOverrides[] = {
    {"loom::softmax", LOOM_AUTOCAST_KEEP},
    {"loom::mm", LOOM_AUTOCAST_FLOAT32},
};
const LoomAutocastPolicyTable kPolicy = {sizeof(LoomAutocastPolicyTable), LOOM_DTYPE_FLOAT16,
                                         kOverrides, 2};

void init(loom::sdk::Registrar&) {
  loom::sdk::publish_extension(LOOM_AUTOCAST_POLICY_EXTENSION_PREFIX "cpu", &kPolicy);
}

}  // namespace

LOOM_PLUGIN("test_autocast_policy", "0.1.0", init)
