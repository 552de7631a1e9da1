// The loom runtime of the benchmarks: the default plugins from the build tree, loaded once
// (LOOM_PLUGIN_DIR is the build's plugin folder, set by tools/bench/CMakeLists.txt).
#pragma once

#include <cstdlib>

#include "loom/loom.h"

namespace loom::bench {

inline void load_runtime() {
  static const bool loaded = [] {
    setenv("LOOM_PLUGIN_PATH", LOOM_PLUGIN_DIR, 1);
    loom::Runtime::load_default();
    return true;
  }();
  (void)loaded;
}

}  // namespace loom::bench
