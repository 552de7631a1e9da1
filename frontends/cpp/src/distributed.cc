// loom::distributed (loom/distributed.h): the process-group calls over the distributed
// plugin's table (loom/distributed_api.h) and the collectives over the distributed op
// family's typed ops.
#include "loom/distributed.h"

#include "loom/core/error.h"
#include "loom/core/read_section.h"
#include "loom/dispatcher/extensions.h"
#include "loom/distributed_api.h"

namespace loom::distributed {
namespace {

const LoomDistributedApi& api(const char* what) {
  const auto* table = static_cast<const LoomDistributedApi*>(
      dispatch::find_extension(LOOM_DISTRIBUTED_EXTENSION_NAME));
  LOOM_CHECK(table != nullptr, "distributed", what,
             ": the distributed plugin is not loaded (expected `plugins { name: \"distributed\" }` "
             "in the deployment manifest, found no table named '",
             LOOM_DISTRIBUTED_EXTENSION_NAME, "')");
  return *table;
}

void check(LoomError* err, const char* what) {
  dispatch::check_table_error(err, "distributed", what);
}

LoomDistributedGroupInfo info(const Group& group) {
  ReadSection section;
  LoomDistributedGroupInfo out{sizeof(LoomDistributedGroupInfo), -1, 0, 0};
  check(api("get_rank").group_info(group.id, &out), "group_info");
  return out;
}

void collect_text(void* ctx, const char* text) {
  static_cast<std::vector<std::string>*>(ctx)->push_back(text);
}

Work work(int64_t id) {
  return Work(id);
}

}  // namespace

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return "sum";
    case ReduceOp::Product:
      return "product";
    case ReduceOp::Min:
      return "min";
    case ReduceOp::Max:
      return "max";
    case ReduceOp::Avg:
      return "avg";
  }
  return "unknown";
}

void Work::wait(std::optional<std::chrono::milliseconds> timeout) {
  if (id_ == 0) return;
  const int64_t id = std::exchange(id_, 0);
  ReadSection section;
  check(api("Work::wait").work_wait(id, timeout ? timeout->count() : 0), "Work::wait");
}

bool Work::is_completed() {
  if (id_ == 0) return true;
  ReadSection section;
  int32_t done = 0;
  check(api("Work::is_completed").work_is_completed(id_, &done), "Work::is_completed");
  return done != 0;
}

void init_process_group(const InitOptions& options) {
  LoomDistributedInitArgs args{};
  args.struct_size = sizeof args;
  args.backend = options.backend.c_str();
  args.init_method = options.init_method.c_str();
  args.rank = options.rank;
  args.world_size = options.world_size;
  args.timeout_ms = options.timeout.count();
  ReadSection section;
  check(api("init_process_group").init_process_group(&args), "init_process_group");
}

void destroy_process_group() {
  ReadSection section;
  check(api("destroy_process_group").destroy_process_group(), "destroy_process_group");
}

bool is_initialized() {
  ReadSection section;
  const auto* table = static_cast<const LoomDistributedApi*>(
      dispatch::find_extension(LOOM_DISTRIBUTED_EXTENSION_NAME));
  if (table == nullptr) return false;
  int32_t out = 0;
  check(table->is_initialized(&out), "is_initialized");
  return out != 0;
}

int get_rank(const Group& group) {
  return static_cast<int>(info(group).rank);
}
int get_world_size(const Group& group) {
  return static_cast<int>(info(group).size);
}

Group new_group(const std::vector<int>& ranks, std::optional<std::chrono::milliseconds> timeout) {
  std::vector<int64_t> r(ranks.begin(), ranks.end());
  int64_t id = 0;
  ReadSection section;
  check(api("new_group").new_group(r.data(), r.size(), timeout ? timeout->count() : 0, &id),
        "new_group");
  return Group{id};
}

std::vector<int> get_process_group_ranks(const Group& group) {
  ReadSection section;
  const LoomDistributedApi& table = api("get_process_group_ranks");
  size_t n = 0;
  check(table.group_ranks(group.id, nullptr, &n), "get_process_group_ranks");
  std::vector<int64_t> ranks(n);
  check(table.group_ranks(group.id, ranks.data(), &n), "get_process_group_ranks");
  return std::vector<int>(ranks.begin(), ranks.end());
}

std::vector<std::string> available_backends() {
  std::vector<std::string> out;
  ReadSection section;
  check(api("available_backends").backends(&out, &collect_text), "available_backends");
  return out;
}

std::string flight_record(const Group& group) {
  std::vector<std::string> out;
  ReadSection section;
  check(api("flight_record").flight_record(group.id, &out, &collect_text), "flight_record");
  return out.empty() ? "" : out.front();
}

Work all_reduce(Tensor& tensor, ReduceOp op, const Group& group, bool async_op) {
  return work(loom::all_reduce_(tensor, reduce_op_name(op), group.id, async_op));
}
Work broadcast(Tensor& tensor, int src, const Group& group, bool async_op) {
  return work(loom::broadcast_(tensor, src, group.id, async_op));
}
Work reduce(Tensor& tensor, int dst, ReduceOp op, const Group& group, bool async_op) {
  return work(loom::reduce_(tensor, dst, reduce_op_name(op), group.id, async_op));
}
Work all_gather(std::vector<Tensor>& outputs, const Tensor& input, const Group& group,
                bool async_op) {
  return work(loom::all_gather_(outputs, input, group.id, async_op));
}
Work all_gather_into_tensor(Tensor& output, const Tensor& input, const Group& group,
                            bool async_op) {
  return work(loom::all_gather_into_tensor_(output, input, group.id, async_op));
}
Work reduce_scatter(Tensor& output, const std::vector<Tensor>& inputs, ReduceOp op,
                    const Group& group, bool async_op) {
  return work(loom::reduce_scatter_(output, inputs, reduce_op_name(op), group.id, async_op));
}
Work reduce_scatter_tensor(Tensor& output, const Tensor& input, ReduceOp op, const Group& group,
                           bool async_op) {
  return work(loom::reduce_scatter_tensor_(output, input, reduce_op_name(op), group.id, async_op));
}
Work all_to_all(std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs, const Group& group,
                bool async_op) {
  return work(loom::all_to_all_(outputs, inputs, group.id, async_op));
}
Work all_to_all_single(Tensor& output, const Tensor& input,
                       const std::vector<int64_t>& output_split_sizes,
                       const std::vector<int64_t>& input_split_sizes, const Group& group,
                       bool async_op) {
  return work(loom::all_to_all_single_(output, input, output_split_sizes, input_split_sizes,
                                       group.id, async_op));
}
Work barrier(const Group& group, bool async_op) {
  return work(loom::barrier(group.id, async_op));
}
Work send(const Tensor& tensor, int dst, const Group& group, int tag) {
  return work(loom::send(tensor, dst, group.id, tag, false));
}
Work recv(Tensor& tensor, int src, const Group& group, int tag) {
  return work(loom::recv_(tensor, src, group.id, tag, false));
}
Work isend(const Tensor& tensor, int dst, const Group& group, int tag) {
  return work(loom::send(tensor, dst, group.id, tag, true));
}
Work irecv(Tensor& tensor, int src, const Group& group, int tag) {
  return work(loom::recv_(tensor, src, group.id, tag, true));
}

}  // namespace loom::distributed
