/* The plugin-shaped seed for fuzz_plugin_inspector: a small shared object exporting the
 * entry symbol beside a few others, built without sanitizers so that most of its bytes
 * are the ELF structures the inspector reads. */
#include <stddef.h>

const void* loom_plugin_entry(const void* host) {
  return NULL;
}
int loom_fuzz_seed_value(int x) {
  return x + 1;
}
const char loom_fuzz_seed_name[] = "seed";
