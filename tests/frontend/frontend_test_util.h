// Shared by the frontend tests: a fixture that loads the default runtime once per suite,
// a runtime of chosen plugins, a tensor's values in row-major order, and a check that a call throws
// a loom::Error with the given prefix and message parts.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/manifest.h"
#include "loom/loom.h"

namespace loom::test {

// A runtime of the build's plugins `names` (in order), then the plugin files `files`.
inline Runtime load_plugins(const std::vector<std::string>& names,
                            const std::vector<std::string>& files = {}) {
  std::string manifest = std::string("search_dirs: \"") + LOOM_PLUGIN_DIR + "\"\n";
  for (const std::string& name : names) manifest += "plugins { name: \"" + name + "\" }\n";
  for (const std::string& file : files) manifest += "plugins { path: \"" + file + "\" }\n";
  return Runtime::load(dispatch::parse_manifest(manifest, "<test>"));
}

// Unloads plugin `name` when it is loaded with options other than those of the manifest
// entry `entry` ("path: \"...\" options { ... }"): the host refuses to change a loaded
// plugin's options, so a test that needs others starts it again.
inline void unload_if_other_options(const std::string& name, const std::string& entry) {
  const dispatch::DeploymentManifest parsed =
      dispatch::parse_manifest("plugins { " + entry + " }\n", "<test>");
  dispatch::PluginHost& host = dispatch::PluginHost::instance();
  for (const dispatch::PluginInfo& p : host.plugins()) {
    if (p.name == name && p.options != parsed.plugins[0].options) host.unload(name);
  }
}

class LoadedRuntimeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    setenv("LOOM_PLUGIN_PATH", LOOM_PLUGIN_DIR, 1);
    Runtime::load_default();
  }
};

inline std::vector<double> values(const Tensor& t) {
  Tensor flat = t.contiguous().view({-1});
  std::vector<double> out;
  for (int64_t i = 0; i < flat.numel(); ++i) out.push_back(flat.select(0, i).item<double>());
  return out;
}

inline void expect_error(const std::function<void()>& f, const std::string& prefix,
                         const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "expected loom::Error [" << prefix << "]";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_EQ(m.rfind("[" + prefix + "] ", 0), 0u) << m;
    for (const std::string& part : parts) EXPECT_NE(m.find(part), std::string::npos) << m;
  }
}

inline void expect_error(const std::function<void()>& f, const std::string& prefix,
                         const char* part) {
  expect_error(f, prefix, std::vector<std::string>{part});
}

}  // namespace loom::test
