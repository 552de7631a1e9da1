/* A plain-C plugin that reports the ABI version given at compile time (TEST_ABI_MAJOR,
 * TEST_ABI_MINOR), or a zero struct_size with TEST_ZERO_SIZE, to test the host's checks. */
#include <stddef.h>

#include "loom/plugin.h"

static LoomError* initialize(LoomPluginContext* plugin, const LoomKeyValue* options,
                             size_t num_options) {
  (void)plugin;
  (void)options;
  (void)num_options;
  return NULL;
}

static LoomError* shutdown(void) {
  return NULL;
}

static const LoomPluginApi kApi = {
#ifdef TEST_ZERO_SIZE
    0,
#else
    sizeof(LoomPluginApi),
#endif
    TEST_ABI_MAJOR,
    TEST_ABI_MINOR,
    "test_abi_version",
    "0.0.1",
    initialize,
    shutdown};

LOOM_PLUGIN_EXPORT LoomError* loom_plugin_entry(const LoomHostApi* host,
                                                const LoomPluginApi** out_api) {
  (void)host;
  *out_api = &kApi;
  return NULL;
}
