// Loading a deployment for an app.
#include "loom/runtime.h"

#include "loom/ops/standard_library.h"

namespace loom {

Runtime Runtime::load(const dispatch::DeploymentManifest& manifest) {
  ops::load_standard_library();  // before the plugins, whose kernels are for these ops
  dispatch::LoadReport report = dispatch::PluginHost::instance().load_manifest(manifest);
  return Runtime(manifest, std::move(report));
}

Runtime Runtime::load_default() {
  return load(dispatch::default_manifest());
}

Runtime Runtime::load_file(const std::string& manifest_path) {
  return load(dispatch::load_manifest_file(manifest_path));
}

std::vector<dispatch::PluginInfo> Runtime::plugins() const {
  return dispatch::PluginHost::instance().plugins();
}

}  // namespace loom
