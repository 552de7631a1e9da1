// `loom`: inspect a deployment from the command line.
//   loom [--manifest FILE] plugins | ops [--namespace NS] | dispatch OP | smoke
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "commands.h"
#include "loom/loom.h"

ABSL_FLAG(std::string, manifest, "",
          "deployment manifest (protobuf text format); default: the embedded manifest");
ABSL_FLAG(std::string, namespace, "", "for `ops`: only operators in this namespace");

namespace {

constexpr char kUsage[] =
    "loom [--manifest FILE] COMMAND\n"
    "commands:\n"
    "  plugins              loaded plugins: versions, devices, op and kernel counts\n"
    "  ops [--namespace NS] operator schemas\n"
    "  dispatch OP          the dispatch table of OP: each key's kernel and its source\n"
    "  smoke                runs a small computation through the loaded plugins";

int run(const std::vector<char*>& args) {
  if (args.size() < 2) {
    std::fprintf(stderr, "[loom] expected a command\nusage: %s\n", kUsage);
    return 2;
  }
  std::string command = args[1];
  std::string manifest = absl::GetFlag(FLAGS_manifest);
  loom::Runtime runtime =
      manifest.empty() ? loom::Runtime::load_default() : loom::Runtime::load_file(manifest);
  for (const auto& [plugin, why] : runtime.report().skipped) {
    std::fprintf(stderr, "note: optional plugin '%s' skipped: %s\n", plugin.c_str(), why.c_str());
  }
  if (command == "plugins" && args.size() == 2) return loom::cli::list_plugins();
  if (command == "ops" && args.size() == 2) {
    return loom::cli::list_ops(absl::GetFlag(FLAGS_namespace));
  }
  if (command == "dispatch" && args.size() == 3) return loom::cli::show_dispatch(args[2]);
  if (command == "smoke" && args.size() == 2) return loom::cli::run_smoke();
  std::fprintf(stderr, "[loom] unknown command or wrong arguments: '%s'\nusage: %s\n",
               command.c_str(), kUsage);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(kUsage);
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  try {
    return run(args);
  } catch (const loom::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
