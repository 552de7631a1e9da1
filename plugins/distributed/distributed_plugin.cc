// The distributed plugin: process groups on real engines (gloo today, through its engine
// module, Note [Engine modules] in world.cc), the kernels of the distributed op family
// for CPU tensors, and the table "loom.distributed" (loom/distributed_api.h) that
// loom/distributed.h drives. Built like a vendor's plugin: the SDK alone.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "loom/distributed_api.h"
#include "loom/sdk/plugin.hpp"
#include "world.h"

namespace loom::distributed {

void register_distributed_kernels(sdk::Registrar& r);

namespace {

// Runs body at the ABI edge: the plugin's std::runtime_errors already start with
// "[distributed] ".
template <typename F>
LoomError* guarded(F&& body) {
  return sdk::catch_all([&] {
    try {
      body();
    } catch (const sdk::Error&) {
      throw;
    } catch (const std::runtime_error& e) {
      throw sdk::Error(e.what(), LOOM_STATUS_INTERNAL);
    }
  });
}

LoomError* init_process_group(const LoomDistributedInitArgs* args) {
  return guarded([&] {
    if (args == nullptr) throw sdk::Error("[distributed] init_process_group: the args are null");
    init_world(*args);
  });
}

LoomError* destroy_process_group() {
  return guarded([] { destroy_world(); });
}

LoomError* is_initialized(int32_t* out) {
  return guarded([&] { *out = world_initialized() ? 1 : 0; });
}

LoomError* get_group_info(int64_t group, LoomDistributedGroupInfo* out) {
  return guarded([&] {
    if (out == nullptr) throw sdk::Error("[distributed] group_info: out is null");
    *out = group_info(group);
  });
}

LoomError* make_group(const int64_t* ranks, size_t num_ranks, int64_t timeout_ms,
                      int64_t* out_group) {
  return guarded([&] {
    *out_group = new_group(std::vector<int64_t>(ranks, ranks + num_ranks),
                           std::chrono::milliseconds(timeout_ms));
  });
}

LoomError* work_wait(int64_t work, int64_t timeout_ms) {
  return guarded([&] { wait_work(work, timeout_ms); });
}

LoomError* work_is_completed(int64_t work, int32_t* out) {
  return guarded([&] { *out = work_completed(work) ? 1 : 0; });
}

LoomError* backends(void* ctx, LoomDistributedTextFn write) {
  return guarded([&] {
    for (const std::string& b : describe_backends()) write(ctx, b.c_str());
  });
}

LoomError* get_flight_record(int64_t group, void* ctx, LoomDistributedTextFn write) {
  return guarded([&] { write(ctx, flight_record(group).c_str()); });
}

LoomError* get_group_ranks(int64_t group, int64_t* out_ranks, size_t* num_ranks) {
  return guarded([&] {
    if (num_ranks == nullptr) throw sdk::Error("[distributed] group_ranks: num_ranks is null");
    const std::vector<int64_t> ranks = group_ranks(group);
    if (out_ranks != nullptr) {
      if (*num_ranks < ranks.size()) {
        throw sdk::Error("[distributed] group_ranks: room for " + std::to_string(*num_ranks) +
                         " ranks, the group has " + std::to_string(ranks.size()));
      }
      std::copy(ranks.begin(), ranks.end(), out_ranks);
    }
    *num_ranks = ranks.size();
  });
}

const LoomDistributedApi kApi = {
    sizeof(LoomDistributedApi),
    &init_process_group,
    &destroy_process_group,
    &is_initialized,
    &get_group_info,
    &make_group,
    &work_wait,
    &work_is_completed,
    &backends,
    &get_flight_record,
    &get_group_ranks,
};

void init(sdk::Registrar& r) {
  register_distributed_kernels(r);
  sdk::publish_extension(LOOM_DISTRIBUTED_EXTENSION_NAME, &kApi);
}

}  // namespace
}  // namespace loom::distributed

LOOM_PLUGIN("distributed", "0.1.0", loom::distributed::init)
