// libFuzzer target for the deployment manifest parser (LOOM_BUILD_FUZZERS=ON, clang):
// any text either parses into a validated manifest or throws loom::Error; parsing is a
// pure function of the text.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "loom/core/error.h"
#include "loom/dispatcher/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  loom::dispatch::DeploymentManifest manifest;
  try {
    manifest = loom::dispatch::parse_manifest(text, "<fuzz>");
  } catch (const loom::Error&) {
    return 0;
  }
  // What validation promises (manifest.h): every plugin names exactly one of name/path,
  // and no search directory is empty.
  for (const auto& plugin : manifest.plugins) {
    if (plugin.name.empty() == plugin.path.empty()) std::abort();
  }
  for (const auto& dir : manifest.search_dirs) {
    if (dir.empty()) std::abort();
  }
  return 0;
}
