// `loom launch`: runs N copies of a program as the ranks of one job, as torchrun does
// (Note [The launcher] in launch.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace loom::cli {

struct LaunchOptions {
  int64_t nproc = 1;      // processes on this node
  int64_t nnodes = 1;     // nodes of the job
  int64_t node_rank = 0;  // this node's place among them
  std::string master_addr = "127.0.0.1";
  int64_t master_port = 29500;
  std::string iface;          // the network interface the ranks use (LOOM_SOCKET_IFNAME), or ""
  double grace_seconds = 10;  // after a rank fails: how long the others get to exit
  std::vector<std::string> program;  // the program and its arguments
};

// Starts the ranks and waits for them; returns 0 when every rank exits with 0, else 1
// (after stopping the others), or 2 for bad options.
int run_launch(const LaunchOptions& options);

}  // namespace loom::cli
