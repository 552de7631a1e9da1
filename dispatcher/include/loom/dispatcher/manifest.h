// Deployment manifests: which backend plugins a loom deployment loads, and how a plugin
// request is turned into a shared-library file on disk. The manifest schema lives in
// dispatcher/proto/manifest.proto; manifests are written in Protocol Buffers text format.
// Protobuf stays an implementation detail: this header only exposes plain structs.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace loom::dispatch {

// Note [Manifest resolution]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// A deployment manifest lists plugins by `name` or by `path` (exactly one of the two).
//
// * Relative entries. When a manifest is read from a file, relative `search_dirs` entries
//   and relative plugin `path`s are made relative to the directory holding the manifest
//   (not the process's working directory) at parse time. Manifests parsed from a string
//   (source "<string>") or the embedded default keep relative entries as written, i.e.
//   relative to the working directory. Entries starting with "$ORIGIN" are never rebased.
//
// * "$ORIGIN". An entry that is exactly "$ORIGIN" or starts with "$ORIGIN/" stands for the
//   directory holding the running executable (read from /proc/self/exe), like the
//   dynamic linker's rpath token. It is expanded late, by plugin_search_dirs() for
//   directories and by resolve_plugin_file() for explicit paths, so a manifest stays
//   relocatable together with the binary. "$LIBDIR" likewise stands for the directory
//   holding the loom libraries (libloom_dispatcher, found with dladdr), so an app built
//   anywhere against an installed loom finds that installation's plugins.
//
// * Search order for a plugin given by name, first hit wins:
//     1. each entry of the LOOM_PLUGIN_PATH environment variable, left to right
//        (colon-separated; empty entries are ignored),
//     2. each of the manifest's search_dirs, in order.
//   In each directory the file looked for is libloom_plugin_<name>.so. Putting the
//   environment first lets a developer or a test override an installed plugin without
//   editing the deployment's manifest.
//
// * A plugin given by path is used as is (after "$ORIGIN" expansion); the search path is
//   not consulted.
//
// The embedded default manifest searches "$ORIGIN/../lib/loom/plugins" (the install
// layout: bin/ next to lib/loom/plugins/), then "$LIBDIR/loom/plugins", requires the "cpu"
// and "autograd" plugins and loads "profiler", "compiler", "distributed", "quantization"
// and "autocast" when they are there.

// One plugin the deployment asks for. Exactly one of `name` and `path` is non-empty.
struct PluginRequest {
  // Plugin name ([a-z0-9_]+), resolved to libloom_plugin_<name>.so on the search path.
  std::string name;
  // Explicit library path; already rebased onto the manifest's directory when relative.
  std::string path;
  // false: the plugin may be skipped when it cannot be found or loaded.
  bool required = true;
  // Options handed to the plugin, sorted by key (keys are unique).
  std::vector<std::pair<std::string, std::string>> options;

  bool operator==(const PluginRequest&) const = default;
};

// A parsed and validated manifest.
struct DeploymentManifest {
  // Where it came from: a file path, "<embedded default>" or "<string>". Used to prefix
  // error messages.
  std::string source;
  // Directories to search for named plugins (after LOOM_PLUGIN_PATH); "$ORIGIN" unexpanded.
  std::vector<std::string> search_dirs;
  // Plugins in load order.
  std::vector<PluginRequest> plugins;

  bool operator==(const DeploymentManifest&) const = default;
};

// Parses and validates a text-format manifest. `source_name` names the input in error
// messages; a name of the form "<...>" (e.g. "<string>") is not a file, anything else is
// taken as the manifest's file path and used to rebase relative entries (an empty name
// means "<string>"). Throws loom::Error with component "manifest" on syntax errors
// ("<source>:<line>:<column>: <message>", both 1-based, column counted in bytes) and on
// semantic errors (a plugin with neither or both of name/path, an invalid name, a
// duplicate name, an empty search_dirs entry), naming the source and the plugin index.
DeploymentManifest parse_manifest(std::string_view text, std::string_view source_name);

// Reads and parses the manifest file at `path`. Throws loom::Error("manifest", ...) when
// the file cannot be read, or as parse_manifest does.
DeploymentManifest load_manifest_file(const std::string& path);

// The manifest compiled into the library, used when a deployment provides none (above:
// the install layout's plugin directories, cpu and autograd required, the rest optional).
// Its source is "<embedded default>".
const DeploymentManifest& default_manifest();

// The directories to search for named plugins, in order: LOOM_PLUGIN_PATH entries, then
// m.search_dirs, with a leading "$ORIGIN" expanded. See Note [Manifest resolution].
// Throws loom::Error("plugin-host", ...) if "$ORIGIN" is used and the executable's
// location cannot be determined.
std::vector<std::string> plugin_search_dirs(const DeploymentManifest& m);

// The file to load for `request`: its path (after "$ORIGIN" expansion) if it exists, or
// the first existing <dir>/libloom_plugin_<name>.so in `search_dirs`. Throws
// loom::Error("plugin-host", ...) naming the plugin, and for a name the directories
// searched, when there is no such file.
std::string resolve_plugin_file(const PluginRequest& request,
                                const std::vector<std::string>& search_dirs);

}  // namespace loom::dispatch
