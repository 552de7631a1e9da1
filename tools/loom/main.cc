// `loom`: inspect a deployment from the command line, train, and check a backend.
//   loom [--manifest FILE] plugins | ops [--namespace NS] | dispatch OP | smoke | train |
//        conform
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "commands.h"
#include "conform_command.h"
#include "loom/loom.h"
#include "train.h"

ABSL_FLAG(std::string, manifest, "",
          "deployment manifest (protobuf text format); default: the embedded manifest");
ABSL_FLAG(std::string, namespace, "", "for `ops`: only operators in this namespace");
ABSL_FLAG(std::string, data, "/usr/share/datasets/fashion-mnist",
          "for `train`: directory of the MNIST-format IDX files");
ABSL_FLAG(std::string, model, "cnn", "for `train`: cnn or mlp");
ABSL_FLAG(int64_t, epochs, 2, "for `train`: passes over the training set");
ABSL_FLAG(int64_t, batch_size, 64, "for `train`: examples per step");
ABSL_FLAG(double, lr, 1e-3, "for `train`: learning rate");
ABSL_FLAG(std::string, optimizer, "adam", "for `train`: adam, adamw, sgd, rmsprop or adafactor");
ABSL_FLAG(uint64_t, seed, 0, "for `train`: seeds initialisation and shuffling");
ABSL_FLAG(int64_t, threads, 0, "compute threads (sets LOOM_NUM_THREADS; 0: the default)");
ABSL_FLAG(std::string, device, "cpu", "for `train`: the device to train on");
ABSL_FLAG(int64_t, limit, 0, "for `train`: use the first N training examples only (0: all)");
ABSL_FLAG(std::string, save, "", "for `train`: write a checkpoint (safetensors) after each epoch");
ABSL_FLAG(std::string, resume, "", "for `train`: continue the run saved in this checkpoint");
ABSL_FLAG(std::string, profile, "",
          "for `train`: write a Chrome trace of steps 4-7 to this file and print the top ops");
ABSL_FLAG(std::string, backend, "", "for `conform`: the device type to check (cpu, npu_sim, ...)");
ABSL_FLAG(std::string, ops, "", "for `conform`: only ops whose full name matches this regex");
ABSL_FLAG(std::string, dtypes, "", "for `conform`: only samples of these dtypes (comma-separated)");
ABSL_FLAG(std::string, report, "",
          "for `conform`: write report.json, coverage.md, report.html here");
ABSL_FLAG(std::string, baseline, "", "for `conform`: fail on regressions against this report.json");
ABSL_FLAG(std::string, xfail, "", "for `conform`: the backend's expected failures (JSON)");
ABSL_FLAG(int64_t, jobs, 1, "for `conform`: ops checked in parallel (child processes)");
ABSL_FLAG(double, timeout, 60, "for `conform`: seconds one op may run before it is killed");

namespace {

constexpr char kUsage[] =
    "loom [--manifest FILE] COMMAND\n"
    "commands:\n"
    "  plugins              loaded plugins: versions, devices, op and kernel counts\n"
    "  ops [--namespace NS] operator schemas\n"
    "  dispatch OP          the dispatch table of OP: each key's kernel and its source\n"
    "  smoke                runs a small computation through the loaded plugins\n"
    "  train                trains a classifier on Fashion-MNIST: --model cnn|mlp --epochs N\n"
    "                       --batch-size N --lr X --seed N --threads N --device D\n"
    "                       --optimizer adam|adamw|sgd|rmsprop|adafactor\n"
    "                       --data DIR --limit N --save FILE\n"
    "                       --resume FILE --profile TRACE.json\n"
    "  conform              checks a backend's ops against the cpu: --backend B --ops REGEX\n"
    "                       --dtypes LIST --report DIR --baseline FILE --xfail FILE --jobs N\n"
    "                       --timeout SECONDS";

int run(const std::vector<char*>& args) {
  if (args.size() < 2) {
    std::fprintf(stderr, "[loom] expected a command\nusage: %s\n", kUsage);
    return 2;
  }
  std::string command = args[1];
  std::string manifest = absl::GetFlag(FLAGS_manifest);
  const int64_t threads = absl::GetFlag(FLAGS_threads);
  if (threads < 0) {
    std::fprintf(stderr, "[loom] --threads: expected a non-negative count, found %lld\n",
                 static_cast<long long>(threads));
    return 2;
  }
  if (threads > 0) setenv("LOOM_NUM_THREADS", std::to_string(threads).c_str(), 1);
  // conform loads plugins only in its children (Note [Conformance isolation]).
  if (command == "conform" && args.size() == 2) {
    loom::conform::ConformOptions options;
    options.manifest = manifest;
    options.backend = absl::GetFlag(FLAGS_backend);
    options.ops = absl::GetFlag(FLAGS_ops);
    options.dtypes = absl::GetFlag(FLAGS_dtypes);
    options.report_dir = absl::GetFlag(FLAGS_report);
    options.baseline = absl::GetFlag(FLAGS_baseline);
    options.xfail = absl::GetFlag(FLAGS_xfail);
    options.jobs = static_cast<int>(absl::GetFlag(FLAGS_jobs));
    options.timeout_seconds = absl::GetFlag(FLAGS_timeout);
    return loom::conform::run_conform(options);
  }
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
  if (command == "train" && args.size() == 2) {
    loom::cli::TrainOptions options;
    options.data_dir = absl::GetFlag(FLAGS_data);
    options.model = absl::GetFlag(FLAGS_model);
    options.epochs = absl::GetFlag(FLAGS_epochs);
    options.batch_size = absl::GetFlag(FLAGS_batch_size);
    options.lr = absl::GetFlag(FLAGS_lr);
    options.optimizer = absl::GetFlag(FLAGS_optimizer);
    options.seed = absl::GetFlag(FLAGS_seed);
    options.device = absl::GetFlag(FLAGS_device);
    options.limit = absl::GetFlag(FLAGS_limit);
    options.save = absl::GetFlag(FLAGS_save);
    options.resume = absl::GetFlag(FLAGS_resume);
    options.profile = absl::GetFlag(FLAGS_profile);
    return loom::cli::run_train(options);
  }
  std::fprintf(stderr, "[loom] unknown command or wrong arguments: '%s'\nusage: %s\n",
               command.c_str(), kUsage);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(kUsage);
  // Flags are spelled with dashes (--batch-size) as well as Abseil's underscores.
  std::vector<std::string> spelled(argv, argv + argc);
  std::vector<char*> argv_underscored;
  for (std::string& arg : spelled) {
    if (arg.rfind("--", 0) == 0) {
      const size_t end = std::min(arg.find('='), arg.size());
      std::replace(arg.begin() + 2, arg.begin() + static_cast<std::ptrdiff_t>(end), '-', '_');
    }
    argv_underscored.push_back(arg.data());
  }
  std::vector<char*> args = absl::ParseCommandLine(argc, argv_underscored.data());
  try {
    return run(args);
  } catch (const loom::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
