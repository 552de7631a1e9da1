/* test_no_copy: a device type ("no_copy") whose interface has no copy and whose plugin
 * registers no copy_ kernel: tensors can be made on it but never moved to or from it,
 * and the host must say what the plugin lacks. */
#include <stdlib.h>

#include "loom/plugin.h"

static const LoomHostApi* g_host = NULL;

static LoomError* allocate(void* ctx, int32_t index, size_t nbytes, void** out) {
  (void)ctx;
  (void)index;
  *out = malloc(nbytes == 0 ? 1 : nbytes);
  return *out == NULL
             ? g_host->error_create(LOOM_STATUS_RESOURCE_EXHAUSTED, "[no_copy] out of memory")
             : NULL;
}

static void deallocate(void* ctx, int32_t index, void* ptr, size_t nbytes) {
  (void)ctx;
  (void)index;
  (void)nbytes;
  free(ptr);
}

static LoomDeviceInterface g_interface = {sizeof(LoomDeviceInterface)};

static LoomError* initialize(LoomPluginContext* plugin, const LoomKeyValue* options,
                             size_t num_options) {
  (void)options;
  (void)num_options;
  uint32_t key = 0;
  int16_t type = -1;
  g_interface.allocate = allocate;
  g_interface.deallocate = deallocate;
  LoomError* err = g_host->register_backend(plugin, "no_copy", &key);
  if (err != NULL) return err;
  return g_host->register_device_type(plugin, "no_copy", key, &g_interface, &type);
}

static LoomError* shutdown(void) {
  return NULL;
}

static const LoomPluginApi kApi = {sizeof(LoomPluginApi),
                                   LOOM_ABI_VERSION_MAJOR,
                                   LOOM_ABI_VERSION_MINOR,
                                   "test_no_copy",
                                   "0.0.1",
                                   initialize,
                                   shutdown};

LOOM_PLUGIN_EXPORT LoomError* loom_plugin_entry(const LoomHostApi* host,
                                                const LoomPluginApi** out_api) {
  g_host = host;
  *out_api = &kApi;
  return NULL;
}
