/* A plain-C plugin compiled against a frozen copy of an older plugin.h (frozen_abi/1.0,
 * frozen_abi/1.1): the host must keep loading plugins built against every earlier minor.
 * It defines frozen_1_<minor>::answer() -> int (42) and asks for the minor it was built
 * with. */
#include <stddef.h>

#include "loom/plugin.h"

#define STR_(x) #x
#define STR(x) STR_(x)
#define FROZEN_NAME "frozen_abi_1_" STR(LOOM_ABI_VERSION_MINOR)
#define FROZEN_OP "frozen_1_" STR(LOOM_ABI_VERSION_MINOR) "::answer() -> int"

static const LoomHostApi* g_host = NULL;

static LoomError* answer(void* ctx, const LoomKernelCall* call) {
  (void)ctx;
  call->returns[0].tag = LOOM_VALUE_INT;
  call->returns[0].u.i = 42;
  return NULL;
}

static LoomError* initialize(LoomPluginContext* plugin, const LoomKeyValue* options,
                             size_t num_options) {
  (void)options;
  (void)num_options;
  const LoomOperator* op = NULL;
  LoomError* err = g_host->define_op(plugin, FROZEN_OP, &op);
  if (err != NULL) return err;
  return g_host->register_kernel(plugin, op, LOOM_KEY_CPU, answer, NULL, NULL);
}

static LoomError* shutdown(void) {
  return NULL;
}

static const LoomPluginApi kApi = {sizeof(LoomPluginApi),
                                   LOOM_ABI_VERSION_MAJOR,
                                   LOOM_ABI_VERSION_MINOR,
                                   FROZEN_NAME,
                                   "0.0.1",
                                   initialize,
                                   shutdown};

LOOM_PLUGIN_EXPORT LoomError* loom_plugin_entry(const LoomHostApi* host,
                                                const LoomPluginApi** out_api) {
  g_host = host;
  *out_api = &kApi;
  return NULL;
}
