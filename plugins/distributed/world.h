// The distributed plugin's process-wide state: the store, the process groups (0 is the
// world), the engine modules and the async work ids (Note [Engine modules]).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loom/distributed_api.h"
#include "process_group.h"

namespace loom::distributed {

void init_world(const LoomDistributedInitArgs& args);
void destroy_world();
bool world_initialized();
LoomDistributedGroupInfo group_info(int64_t group);
int64_t new_group(const std::vector<int64_t>& ranks, std::chrono::milliseconds timeout);
std::vector<int64_t> group_ranks(int64_t group);

// The group a collective runs on; throws "[OP] ..." when there is no process group or
// this process is not a member of `group`.
std::shared_ptr<ProcessGroup> group_for_op(int64_t group, const char* op);

int64_t remember_work(std::shared_ptr<ProcessGroup> group, std::shared_ptr<WorkState> work);
void wait_work(int64_t work, int64_t timeout_ms);
bool work_completed(int64_t work);

// "gloo", or "gloo: <why it cannot load>", for each engine the plugin knows.
std::vector<std::string> describe_backends();
std::string flight_record(int64_t group);

}  // namespace loom::distributed
