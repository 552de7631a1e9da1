// The plugin host: loads plugin shared libraries (Boost.DLL), checks and runs the ABI
// handshake, initialises them with the host services, reports them, and unloads them
// when nothing they created is alive.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "loom/dispatcher/manifest.h"

namespace loom::dispatch {

struct PluginInfo {
  std::string name;
  std::string version;
  std::string file;
  uint32_t abi_major = 0;
  uint32_t abi_minor = 0;
  std::vector<std::string> device_types;  // registered by the plugin
  std::vector<int32_t> device_counts;     // devices of each type (-1: the plugin cannot tell)
  std::vector<std::string> backends;      // backend slots it registered
  int ops_defined = 0;
  int kernels = 0;
  int fallbacks = 0;
  int64_t live_objects = 0;  // storages from its allocators still alive
  std::vector<std::pair<std::string, std::string>> options;  // it was initialised with, sorted
  std::map<std::string, std::string> attributes;
  // op name -> (dispatch key name -> dtype mask) it declared
  std::map<std::string, std::map<std::string, uint64_t>> capabilities;
};

// What loading a manifest did: plugins loaded, optional ones skipped and why.
struct LoadReport {
  std::vector<std::string> loaded;
  std::vector<std::pair<std::string, std::string>> skipped;  // (plugin, error message)
};

class PluginHost {
 public:
  static PluginHost& instance();

  // Loads, handshakes and initialises the plugin in `file`. Loading the same file
  // twice with the same options returns the already loaded plugin (with other options it
  // throws: unload it first). Throws loom::Error("plugin-host", ...)
  // naming the file and what was expected versus found; on any failure nothing of the
  // plugin stays registered.
  PluginInfo load(const std::string& file,
                  const std::vector<std::pair<std::string, std::string>>& options = {});
  // Loads every plugin of a manifest in order. A failing required plugin throws (the
  // plugins loaded before it stay loaded); a failing optional one is reported in the
  // returned LoadReport and skipped.
  LoadReport load_manifest(const DeploymentManifest& manifest);

  // Shuts the plugin down and unloads it. Throws when the plugin is unknown or when
  // objects it created (tensors in its memory) are still alive.
  void unload(const std::string& name);

  std::vector<PluginInfo> plugins() const;
  bool is_loaded(const std::string& name) const;

  struct Impl;

 private:
  PluginHost();
  Impl* impl_;
};

}  // namespace loom::dispatch
