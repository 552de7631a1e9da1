// libFuzzer target for the plugin file inspector (LOOM_BUILD_FUZZERS=ON, clang): the
// bytes become an in-memory file (memfd) that the inspector reads like a plugin on disk.
// It must give a verdict without crashing, and a reason whenever it refuses the file.
// Seed it with real plugins: `fuzz_plugin_inspector CORPUS build-asan/lib/loom/plugins`.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "loom/dispatcher/elf_inspection.h"
#include "loom/plugin.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const int fd = memfd_create("loom-fuzz-plugin", 0);
  if (fd < 0) std::abort();
  // Rewrite the one file in place: no file system churn at thousands of runs a second.
  if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) {
    std::abort();
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  const loom::dispatch::ElfInspection result =
      loom::dispatch::inspect_shared_object(path, LOOM_PLUGIN_ENTRY_SYMBOL);
  if (!result.readable) std::abort();  // the memfd is always readable
  if (result.exports_symbol && !result.is_64bit_shared) std::abort();
  if (!result.is_64bit_shared && result.problem.empty()) std::abort();
  return 0;
}
