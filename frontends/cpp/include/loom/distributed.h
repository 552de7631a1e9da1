// loom/distributed.h: training past one process, shaped like torch.distributed. A job's
// ranks are separate processes (started by `loom launch`, which sets LOOM_RANK,
// LOOM_WORLD_SIZE, LOOM_MASTER_ADDR and LOOM_MASTER_PORT); each calls
// init_process_group, then the collectives, which are ops of the standard op set's
// distributed family run by the distributed plugin.
//
//   loom::distributed::init_process_group({.backend = "gloo"});
//   loom::Tensor grad = ...;
//   loom::distributed::all_reduce(grad, loom::distributed::ReduceOp::Avg);
//   auto work = loom::distributed::all_reduce(other, ReduceOp::Sum, {}, /*async_op=*/true);
//   ...  // overlapped work
//   work.wait();
//   loom::distributed::destroy_process_group();
//
// Every rank of a group must call its collectives in the same order with matching
// arguments; a mismatch is refused on every rank naming both calls, and a rank that
// never arrives ends in a loom::Error after the group's timeout naming it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loom/ops/generated/ops.h"

namespace loom::distributed {

enum class ReduceOp { Sum, Product, Min, Max, Avg };

struct InitOptions {
  std::string backend = "gloo";               // "gloo", "mpi" (CPU tensors); "nccl" (CUDA)
  std::string init_method = "env://";         // or "tcp://HOST:PORT", "file:///PATH"
  std::chrono::milliseconds timeout{300000};  // of the rendezvous and of each collective
  int rank = -1;                              // -1: LOOM_RANK
  int world_size = -1;                        // -1: LOOM_WORLD_SIZE
};

// A process group: the world (id 0, the default) or one from new_group.
struct Group {
  int64_t id = 0;
};

// An asynchronous collective (async_op = true); a completed one otherwise.
class Work {
 public:
  Work() = default;
  explicit Work(int64_t id) : id_(id) {}
  // Waits (up to `timeout`, default the group's) and raises the collective's error.
  void wait(std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  bool is_completed();

 private:
  int64_t id_ = 0;  // 0: nothing to wait for
};

void init_process_group(const InitOptions& options = {});
void destroy_process_group();
bool is_initialized();
// This process's rank in the group, or -1 when it is not a member.
int get_rank(const Group& group = {});
int get_world_size(const Group& group = {});
// A group of some world ranks (increasing); every rank of the world must call it.
Group new_group(const std::vector<int>& ranks,
                std::optional<std::chrono::milliseconds> timeout = std::nullopt);
// The world ranks of the group, in group-rank order.
std::vector<int> get_process_group_ranks(const Group& group = {});
// "gloo", or "mpi: <why it is unavailable>", for each backend.
std::vector<std::string> available_backends();
// This rank's last collectives in the group, as JSON.
std::string flight_record(const Group& group = {});

Work all_reduce(Tensor& tensor, ReduceOp op = ReduceOp::Sum, const Group& group = {},
                bool async_op = false);
Work broadcast(Tensor& tensor, int src, const Group& group = {}, bool async_op = false);
Work reduce(Tensor& tensor, int dst, ReduceOp op = ReduceOp::Sum, const Group& group = {},
            bool async_op = false);
Work all_gather(std::vector<Tensor>& outputs, const Tensor& input, const Group& group = {},
                bool async_op = false);
Work all_gather_into_tensor(Tensor& output, const Tensor& input, const Group& group = {},
                            bool async_op = false);
Work reduce_scatter(Tensor& output, const std::vector<Tensor>& inputs, ReduceOp op = ReduceOp::Sum,
                    const Group& group = {}, bool async_op = false);
Work reduce_scatter_tensor(Tensor& output, const Tensor& input, ReduceOp op = ReduceOp::Sum,
                           const Group& group = {}, bool async_op = false);
Work all_to_all(std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                const Group& group = {}, bool async_op = false);
Work all_to_all_single(Tensor& output, const Tensor& input,
                       const std::vector<int64_t>& output_split_sizes = {},
                       const std::vector<int64_t>& input_split_sizes = {}, const Group& group = {},
                       bool async_op = false);
Work barrier(const Group& group = {}, bool async_op = false);
Work send(const Tensor& tensor, int dst, const Group& group = {}, int tag = 0);
Work recv(Tensor& tensor, int src, const Group& group = {}, int tag = 0);
Work isend(const Tensor& tensor, int dst, const Group& group = {}, int tag = 0);
Work irecv(Tensor& tensor, int src, const Group& group = {}, int tag = 0);

const char* reduce_op_name(ReduceOp op);  // "sum", "product", "min", "max", "avg"

}  // namespace loom::distributed
