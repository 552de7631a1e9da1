// `loom run`: loads a PyTorch exported program (.pt2) and runs it on a device, with
// inputs from a safetensors file or random ones; --check lists how the loaded backends
// serve each node before running, --bench times the run.
#pragma once

#include <cstdint>
#include <string>

namespace loom::cli {

struct RunOptions {
  std::string model;  // the .pt2 archive
  std::string device = "cpu";
  std::string input;   // safetensors: the user inputs by name, or input_0, input_1, ...
  std::string output;  // safetensors written with output_0, output_1, ...
  int64_t bench = 0;   // timed runs after warm-up (0: run once)
  bool check = false;  // list each node's kernel, decomposition or missing, then stop
  bool print_graph = false;
  uint64_t seed = 0;  // for random inputs
};

int run_model(const RunOptions& options);

}  // namespace loom::cli
