// `loom`: inspect a deployment from the command line, train, and check a backend.
//   loom [--manifest FILE] plugins | ops [--namespace NS] [--format list|markdown] |
//        dispatch OP | smoke | train | conform | run MODEL.pt2 | launch -- PROGRAM ARGS...;
//        loom COMMAND --help lists a command's flags
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "commands.h"
#include "conform_command.h"
#include "launch.h"
#include "loom/loom.h"
#include "quantize.h"
#include "run_model.h"
#include "train.h"

ABSL_FLAG(std::string, manifest, "",
          "deployment manifest (protobuf text format); default: the embedded manifest");
ABSL_FLAG(std::string, namespace, "", "for `ops`: only operators in this namespace");
ABSL_FLAG(std::string, format, "list",
          "for `ops`: list (every defined operator's schema) or markdown (a table of the "
          "standard ops: family, rule, variants, each backend's kernels, autograd, samples)");
ABSL_FLAG(std::string, data, "/usr/share/datasets/fashion-mnist",
          "for `train`: directory of the MNIST-format IDX files");
ABSL_FLAG(std::string, model, "cnn", "for `train`: cnn or mlp; for `quantize`: the checkpoint");
ABSL_FLAG(int64_t, epochs, 2, "for `train`: passes over the training set");
ABSL_FLAG(int64_t, batch_size, 64, "for `train`: examples per step");
ABSL_FLAG(double, lr, 1e-3, "for `train`: learning rate");
ABSL_FLAG(std::string, optimizer, "adam", "for `train`: adam, adamw, sgd, rmsprop or adafactor");
ABSL_FLAG(uint64_t, seed, 0,
          "for `train`: seeds initialisation and shuffling; for `run`: the random inputs");
ABSL_FLAG(int64_t, threads, 0, "compute threads (sets LOOM_NUM_THREADS; 0: the default)");
ABSL_FLAG(std::string, device, "cpu", "for `train` and `run`: the device to compute on");
ABSL_FLAG(int64_t, limit, 0, "for `train`: use the first N training examples only (0: all)");
ABSL_FLAG(std::string, save, "",
          "for `train`: write a checkpoint (safetensors) after each epoch; for `quantize`: "
          "write the quantized model's tensors");
ABSL_FLAG(std::string, resume, "", "for `train`: continue the run saved in this checkpoint");
ABSL_FLAG(bool, compile, false,
          "for `train`: compile the model's forward and backward and the optimizer's step "
          "(loom::compile; needs the compiler plugin and a C++ compiler)");
ABSL_FLAG(std::string, profile, "",
          "for `train`: write a Chrome trace of steps 4-7 to this file and print the top ops");
ABSL_FLAG(std::string, distributed, "",
          "for `train`: gloo, mpi or nccl, to train as one rank of a `loom launch` job with "
          "DistributedDataParallel (--batch-size is the global batch)");
ABSL_FLAG(std::string, arch, "cnn", "for `quantize`: the checkpoint's model, cnn or mlp");
ABSL_FLAG(std::string, method, "static",
          "for `quantize`: static (post-training, calibrated), qat (one epoch of fake-quantized "
          "fine-tuning), dynamic or weight-only (int4)");
ABSL_FLAG(int64_t, calibrate, 512, "for `quantize`: training images to calibrate with");
ABSL_FLAG(bool, json, false, "for `quantize`: print the results as one JSON object");
ABSL_FLAG(bool, qat, false,
          "for `train`: train through fake quantization (quantization-aware training) and "
          "report the int8 model's test accuracy too");
ABSL_FLAG(std::string, amp, "",
          "for `train`: mixed precision, bf16 or fp16 (the forward and the loss under "
          "autocast; fp16 with dynamic loss scaling; parameters, gradients and the optimizer "
          "stay float32)");
ABSL_FLAG(bool, checkpoint, false,
          "for `train`: activation checkpointing (the model in about sqrt(layers) segments, "
          "recomputed in backward instead of keeping their activations)");
ABSL_FLAG(std::string, backend, "",
          "for `conform`: the device type to check (cpu, npu_sim, ...), or quantized for the "
          "Quantized key");
ABSL_FLAG(std::string, ops, "", "for `conform`: only ops whose full name matches this regex");
ABSL_FLAG(std::string, dtypes, "", "for `conform`: only samples of these dtypes (comma-separated)");
ABSL_FLAG(std::string, report, "",
          "for `conform`: write report.json, coverage.md, report.html here");
ABSL_FLAG(std::string, baseline, "", "for `conform`: fail on regressions against this report.json");
ABSL_FLAG(std::string, xfail, "", "for `conform`: the backend's expected failures (JSON)");
ABSL_FLAG(int64_t, jobs, 1, "for `conform`: ops checked in parallel (child processes)");
ABSL_FLAG(double, timeout, 60, "for `conform`: seconds one op may run before it is killed");
ABSL_FLAG(std::string, input, "",
          "for `run`: safetensors file of the inputs (by input name, or input_0, input_1, ...); "
          "default: random inputs of the exported shapes");
ABSL_FLAG(std::string, output, "",
          "for `run`: write the outputs (output_0, ...) to this safetensors file");
ABSL_FLAG(int64_t, bench, 0, "for `run`: time this many runs after warm-up and report the median");
ABSL_FLAG(
    bool, check, false,
    "for `run`: list how the device serves each node (kernel, decomposition, missing) and stop");
ABSL_FLAG(bool, print_graph, false, "for `run`: print the program as loom's graph text");
ABSL_FLAG(int64_t, nproc, 1, "for `launch`: processes (ranks) to start on this node");
ABSL_FLAG(int64_t, nnodes, 1, "for `launch`: nodes of the job");
ABSL_FLAG(int64_t, node_rank, 0, "for `launch`: this node's place among the nodes");
ABSL_FLAG(std::string, master_addr, "127.0.0.1",
          "for `launch`: the address of rank 0's node (LOOM_MASTER_ADDR)");
ABSL_FLAG(int64_t, master_port, 29500, "for `launch`: the port of rank 0's store");
ABSL_FLAG(std::string, iface, "",
          "for `launch`: the network interface the ranks use (LOOM_SOCKET_IFNAME)");

namespace {

// Note [Subcommand help]
// ~~~~~~~~~~~~~~~~~~~~~~
// Abseil's own --help lists every flag of the program and exits 1. `loom COMMAND --help`
// (or -h, or `loom help COMMAND`) prints that command's synopsis and flags instead, each
// flag's help and default read from its Abseil definition, and exits 0; `loom --help`
// prints the command list. Every command accepts the global flags; a flag that belongs to
// another command is refused, naming the command's own flags.
struct Flag {
  const char* name;   // as Abseil spells it: batch_size
  const char* value;  // how help shows its value: N, FILE
};
struct Command {
  const char* name;
  const char* operands;  // after the name: "OP", ""
  const char* summary;
  std::vector<Flag> flags;  // besides the global ones
};

const std::vector<Flag> kGlobalFlags = {{"manifest", "FILE"}, {"threads", "N"}};

const std::vector<Command>& commands() {
  static const std::vector<Command> list = {
      {"plugins", "", "loaded plugins: versions, devices, op and kernel counts", {}},
      {"ops", "", "operator schemas", {{"namespace", "NS"}, {"format", "list|markdown"}}},
      {"dispatch", "OP", "the dispatch table of OP: each key's kernel and its source", {}},
      {"smoke", "", "runs a small computation through the loaded plugins", {}},
      {"train",
       "",
       "trains a classifier on Fashion-MNIST and reports its test accuracy",
       {{"model", "cnn|mlp"},
        {"epochs", "N"},
        {"batch_size", "N"},
        {"lr", "X"},
        {"optimizer", "NAME"},
        {"seed", "N"},
        {"device", "DEVICE"},
        {"data", "DIR"},
        {"limit", "N"},
        {"save", "FILE"},
        {"resume", "FILE"},
        {"profile", "TRACE.json"},
        {"compile", ""},
        {"distributed", "gloo"},
        {"qat", ""},
        {"amp", "bf16|fp16"},
        {"checkpoint", ""}}},
      {"quantize",
       "",
       "quantizes a `loom train` checkpoint and compares it with the float model",
       {{"model", "FILE"},
        {"arch", "cnn|mlp"},
        {"method", "static|dynamic|qat|weight-only"},
        {"calibrate", "N"},
        {"save", "FILE"},
        {"json", ""},
        {"data", "DIR"},
        {"seed", "N"}}},
      {"conform",
       "",
       "checks a backend's ops against the cpu and writes a coverage report",
       {{"backend", "TYPE"},
        {"ops", "REGEX"},
        {"dtypes", "LIST"},
        {"report", "DIR"},
        {"baseline", "FILE"},
        {"xfail", "FILE"},
        {"jobs", "N"},
        {"timeout", "SECONDS"}}},
      {"run",
       "MODEL.pt2",
       "runs a PyTorch exported program (torch.export.save) on a device",
       {{"device", "DEVICE"},
        {"input", "FILE"},
        {"output", "FILE"},
        {"bench", "N"},
        {"check", ""},
        {"print_graph", ""},
        {"seed", "N"}}},
      {"launch",
       "-- PROGRAM ARGS...",
       "runs PROGRAM as the ranks of a job (torchrun's environment, with LOOM_ names)",
       {{"nproc", "N"},
        {"nnodes", "M"},
        {"node_rank", "R"},
        {"master_addr", "ADDR"},
        {"master_port", "PORT"},
        {"iface", "NAME"}}},
  };
  return list;
}

const Command* find_command(std::string_view name) {
  for (const Command& c : commands()) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

std::string usage() {
  std::string text = "loom [--manifest FILE] [--threads N] COMMAND [flags]\ncommands:\n";
  for (const Command& c : commands()) {
    std::string head = std::string(c.name) + (*c.operands ? std::string(" ") + c.operands : "");
    head.resize(std::max<size_t>(head.size() + 1, 21), ' ');
    text += "  " + head + c.summary + "\n";
  }
  return text + "`loom COMMAND --help` lists a command's flags.";
}

// "--batch-size N      examples per step (default: 64)", from the flag's definition.
std::string flag_line(const Flag& f) {
  const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(f.name);
  std::string help = flag == nullptr ? "" : flag->Help();
  const size_t prefix = help.find("`: ");
  if (help.rfind("for `", 0) == 0 && prefix != std::string::npos) help = help.substr(prefix + 3);
  std::string spelled = std::string("--") + f.name;
  std::replace(spelled.begin(), spelled.end(), '_', '-');
  if (*f.value) spelled += std::string(" ") + f.value;
  spelled.resize(std::max<size_t>(spelled.size() + 2, 24), ' ');
  const std::string fallback = flag == nullptr ? "" : flag->DefaultValue();
  return "  " + spelled + help + (fallback.empty() ? "" : " (default: " + fallback + ")") + "\n";
}

void print_help(const Command* command) {
  if (command == nullptr) {
    std::printf("usage: %s\n", usage().c_str());
    return;
  }
  std::printf("usage: loom [global flags] %s%s%s%s\n%s\n", command->name,
              *command->operands ? " " : "", command->operands,
              command->flags.empty() ? "" : " [flags]", command->summary);
  if (!command->flags.empty()) {
    std::printf("\nflags:\n");
    for (const Flag& f : command->flags) std::printf("%s", flag_line(f).c_str());
  }
  std::printf("\nglobal flags:\n");
  for (const Flag& f : kGlobalFlags) std::printf("%s", flag_line(f).c_str());
}

// Flags that take no value: `--check` alone means true.
bool is_switch(const std::string& flag) {
  return flag == "check" || flag == "print_graph";
}

// Looks at the raw arguments (flags spelled with underscores) before Abseil parses them:
// returns the exit code of a help request or of a flag given to the wrong command, or -1
// to go on.
int check_arguments(const std::vector<char*>& argv) {
  bool help = false;
  const Command* command = nullptr;
  std::string command_word;
  std::vector<std::string> flags;
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h" || arg == "--helpfull" || arg == "--helpshort") {
      help = true;
    } else if (arg == "--") {
      break;
    } else if (arg.rfind("--", 0) == 0) {
      const size_t eq = arg.find('=');
      flags.push_back(arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2));
      // Every loom flag takes a value (--name VALUE) but the switches (--check).
      if (eq == std::string::npos && !is_switch(flags.back())) ++i;
    } else if (command_word.empty()) {
      command_word = arg;
      if (command_word == "help") {
        help = true;
        command_word.clear();
        if (i + 1 < argv.size()) command_word = argv[++i];
      }
      command = find_command(command_word);
    }
  }
  if (help) {
    if (!command_word.empty() && command == nullptr) {
      std::fprintf(stderr, "[loom] unknown command '%s'\nusage: %s\n", command_word.c_str(),
                   usage().c_str());
      return 2;
    }
    print_help(command);
    return 0;
  }
  if (command == nullptr) return -1;  // run() says what is wrong
  for (const std::string& flag : flags) {
    auto is = [&](const Flag& f) { return flag == f.name; };
    if (std::any_of(kGlobalFlags.begin(), kGlobalFlags.end(), is) ||
        std::any_of(command->flags.begin(), command->flags.end(), is) ||
        absl::FindCommandLineFlag(flag) == nullptr) {  // Abseil refuses unknown flags itself
      continue;
    }
    std::string own;
    for (const Flag& f : command->flags)
      own += std::string(own.empty() ? "" : ", ") + "--" + f.name;
    std::replace(own.begin(), own.end(), '_', '-');
    std::string spelled = flag;
    std::replace(spelled.begin(), spelled.end(), '_', '-');
    std::fprintf(
        stderr,
        "[loom %s] --%s is not a flag of `%s` (its flags: %s; global: --manifest, --threads)\n",
        command->name, spelled.c_str(), command->name, own.empty() ? "none" : own.c_str());
    return 2;
  }
  return -1;
}

int run(const std::vector<char*>& args) {
  if (args.size() < 2) {
    std::fprintf(stderr, "[loom] expected a command\nusage: %s\n", usage().c_str());
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
  const std::string format = absl::GetFlag(FLAGS_format);
  if (format != "list" && format != "markdown") {
    std::fprintf(stderr, "[loom ops] --format: expected list or markdown, found '%s'\n",
                 format.c_str());
    return 2;
  }
  // launch loads no plugin: its ranks do (Note [The launcher]).
  if (command == "launch") {
    loom::cli::LaunchOptions options;
    options.nproc = absl::GetFlag(FLAGS_nproc);
    options.nnodes = absl::GetFlag(FLAGS_nnodes);
    options.node_rank = absl::GetFlag(FLAGS_node_rank);
    options.master_addr = absl::GetFlag(FLAGS_master_addr);
    options.master_port = absl::GetFlag(FLAGS_master_port);
    options.iface = absl::GetFlag(FLAGS_iface);
    options.program.assign(args.begin() + 2, args.end());
    return loom::cli::run_launch(options);
  }
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
    if (format == "markdown") return loom::cli::ops_table();
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
    options.compile = absl::GetFlag(FLAGS_compile);
    options.distributed = absl::GetFlag(FLAGS_distributed);
    options.qat = absl::GetFlag(FLAGS_qat);
    options.amp = absl::GetFlag(FLAGS_amp);
    options.checkpoint = absl::GetFlag(FLAGS_checkpoint);
    return loom::cli::run_train(options);
  }
  if (command == "quantize" && args.size() == 2) {
    loom::cli::QuantizeOptions options;
    options.model_file = absl::GetFlag(FLAGS_model);
    options.arch = absl::GetFlag(FLAGS_arch);
    options.method = absl::GetFlag(FLAGS_method);
    options.calibrate = absl::GetFlag(FLAGS_calibrate);
    options.save = absl::GetFlag(FLAGS_save);
    options.json = absl::GetFlag(FLAGS_json);
    options.data_dir = absl::GetFlag(FLAGS_data);
    options.seed = absl::GetFlag(FLAGS_seed);
    return loom::cli::run_quantize(options);
  }
  if (command == "run" && args.size() == 3) {
    loom::cli::RunOptions options;
    options.model = args[2];
    options.device = absl::GetFlag(FLAGS_device);
    options.input = absl::GetFlag(FLAGS_input);
    options.output = absl::GetFlag(FLAGS_output);
    options.bench = absl::GetFlag(FLAGS_bench);
    options.check = absl::GetFlag(FLAGS_check);
    options.print_graph = absl::GetFlag(FLAGS_print_graph);
    options.seed = absl::GetFlag(FLAGS_seed);
    return loom::cli::run_model(options);
  }
  std::fprintf(stderr, "[loom] unknown command or wrong arguments: '%s'\nusage: %s\n",
               command.c_str(), usage().c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(usage());
  // Flags are spelled with dashes (--batch-size) as well as Abseil's underscores.
  std::vector<std::string> spelled(argv, argv + argc);
  std::vector<char*> argv_underscored;
  bool program_arguments = false;  // after `--`: another program's (loom launch)
  for (std::string& arg : spelled) {
    program_arguments = program_arguments || arg == "--";
    if (!program_arguments && arg.rfind("--", 0) == 0) {
      const size_t end = std::min(arg.find('='), arg.size());
      std::replace(arg.begin() + 2, arg.begin() + static_cast<std::ptrdiff_t>(end), '-', '_');
    }
    argv_underscored.push_back(arg.data());
  }
  if (const int code = check_arguments(argv_underscored); code >= 0) return code;
  std::vector<char*> args = absl::ParseCommandLine(argc, argv_underscored.data());
  try {
    return run(args);
  } catch (const loom::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
