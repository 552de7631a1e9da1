// loom::Runtime: what an app creates first. It loads the deployment's plugins from a
// manifest (or the embedded default) and reports what was loaded and skipped.
#pragma once

#include <string>
#include <vector>

#include "loom/dispatcher/manifest.h"
#include "loom/dispatcher/plugin_host.h"

namespace loom {

class Runtime {
 public:
  // The embedded default manifest (plus LOOM_PLUGIN_PATH directories).
  static Runtime load_default();
  // A manifest file in protobuf text format; throws loom::Error("manifest") with line
  // and column when it is malformed.
  static Runtime load_file(const std::string& manifest_path);
  static Runtime load(const dispatch::DeploymentManifest& manifest);

  const dispatch::DeploymentManifest& manifest() const { return manifest_; }
  // Plugins loaded, and optional ones skipped with the reason.
  const dispatch::LoadReport& report() const { return report_; }
  std::vector<dispatch::PluginInfo> plugins() const;

 private:
  Runtime(dispatch::DeploymentManifest manifest, dispatch::LoadReport report)
      : manifest_(std::move(manifest)), report_(std::move(report)) {}
  dispatch::DeploymentManifest manifest_;
  dispatch::LoadReport report_;
};

}  // namespace loom
