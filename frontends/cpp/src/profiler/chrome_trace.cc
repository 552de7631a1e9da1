// Profiler::export_chrome_trace: the Trace Event format that Perfetto and chrome://tracing
// open.
//
// Note [Chrome trace layout]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// One JSON object {"traceEvents": [...], "displayTimeUnit": "ms", "baseTimeNanoseconds"}.
// Ops, user ranges and backward nodes are complete events ("ph": "X", categories
// "cpu_op", "user_annotation", "backward_node") on the process of the app, one track per
// thread (named by "thread_name" metadata); "ts" and "dur" are microseconds since the
// first record (baseTimeNanoseconds is that record's steady-clock time). Their "args"
// hold the overload, "Input Dims" and "Input type" (record_shapes), the dispatch key,
// "Sequence number", bytes allocated/freed (profile_memory) and the call stack. Each op
// that created an autograd node starts a flow ("ph": "s", "cat": "fwdbwd") that finishes
// ("ph": "f", "bp": "e") at the backward node with the same sequence number: the arrow
// from a forward op to its backward. Device activities are complete events on a process
// per device ("device <name>"), a track per stream, with a flow ("ac2g") from the op
// that launched them. Memory is a counter ("ph": "C") per device: bytes allocated since
// recording began; a device with a caching allocator has a second counter, "Allocator
// <device>", with its "Total Allocated" and "Total Reserved" bytes at each sample (the
// start, each step, the stop).
#include <unistd.h>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "loom/core/error.h"
#include "loom/profiler.h"

namespace loom::profiler {
namespace {

using nlohmann::json;

double micros(int64_t ns) {
  return static_cast<double>(ns) / 1000.0;
}

const char* category_of(EventKind kind) {
  switch (kind) {
    case EventKind::Op:
      return "cpu_op";
    case EventKind::UserRange:
      return "user_annotation";
    case EventKind::BackwardNode:
      return "backward_node";
    case EventKind::DeviceKernel:
      return "kernel";
    case EventKind::DeviceCopy:
      return "memcpy";
    case EventKind::DeviceOther:
      return "device";
    case EventKind::Memory:
      return "memory";
  }
  return "other";
}

bool is_device(EventKind kind) {
  return kind == EventKind::DeviceKernel || kind == EventKind::DeviceCopy ||
         kind == EventKind::DeviceOther;
}

// Flow ids: forward-backward links even, launch links odd, so the two never collide.
uint64_t fwdbwd_flow_id(uint64_t sequence_nr) {
  return sequence_nr * 2;
}
uint64_t launch_flow_id(uint64_t correlation_id) {
  return correlation_id * 2 + 1;
}

// An arrow from (pid, tid) at `from_ns` to the slice enclosing `to_ns` on another track.
struct FlowEnd {
  int64_t pid;
  int64_t tid;
  double ts;
};
void add_flow(json& trace, const char* category, const char* name, uint64_t id, FlowEnd from,
              FlowEnd to) {
  trace.push_back({{"ph", "s"},
                   {"cat", category},
                   {"name", name},
                   {"id", id},
                   {"pid", from.pid},
                   {"tid", from.tid},
                   {"ts", from.ts}});
  trace.push_back({{"ph", "f"},
                   {"bp", "e"},
                   {"cat", category},
                   {"name", name},
                   {"id", id},
                   {"pid", to.pid},
                   {"tid", to.tid},
                   {"ts", to.ts}});
}

}  // namespace

void Profiler::export_chrome_trace(const std::string& path) const {
  const int64_t pid = static_cast<int64_t>(getpid());
  int64_t t0 = 0;
  bool first = true;
  for (const Event& e : events_) {
    if (first || e.start_ns < t0) t0 = e.start_ns;
    first = false;
  }
  for (const AllocatorSample& a : allocator_samples_) {
    if (first || a.time_ns < t0) t0 = a.time_ns;
    first = false;
  }
  auto ts = [&](int64_t ns) { return micros(ns - t0); };

  json trace = json::array();
  trace.push_back({{"ph", "M"},
                   {"name", "process_name"},
                   {"pid", pid},
                   {"tid", 0},
                   {"args", {{"name", "loom"}}}});
  trace.push_back({{"ph", "M"},
                   {"name", "process_sort_index"},
                   {"pid", pid},
                   {"tid", 0},
                   {"args", {{"sort_index", 0}}}});
  std::set<uint64_t> threads;
  std::map<std::pair<int16_t, int16_t>, int64_t> device_pids;
  std::map<uint64_t, const Event*> by_id;
  std::map<uint64_t, const Event*> forward_of;  // sequence number -> the op that created it
  for (const Event& e : events_) {
    by_id[e.id] = &e;
    if (e.kind == EventKind::Op && e.sequence_nr) forward_of[*e.sequence_nr] = &e;
  }
  auto device_pid = [&](const Event& e) {
    auto key = std::make_pair(e.device.type, e.device.index);
    auto it = device_pids.find(key);
    if (it != device_pids.end()) return it->second;
    int64_t id = pid + 1 + static_cast<int64_t>(device_pids.size());
    device_pids[key] = id;
    trace.push_back({{"ph", "M"},
                     {"name", "process_name"},
                     {"pid", id},
                     {"tid", 0},
                     {"args", {{"name", "device " + e.device_name()}}}});
    trace.push_back({{"ph", "M"},
                     {"name", "process_sort_index"},
                     {"pid", id},
                     {"tid", 0},
                     {"args", {{"sort_index", 1 + device_pids.size()}}}});
    return id;
  };

  for (const AllocatorSample& a : allocator_samples_) {
    Event probe;  // names a device whose plugin has unloaded since
    probe.device = a.device;
    trace.push_back({{"ph", "C"},
                     {"name", "Allocator " + probe.device_name()},
                     {"pid", pid},
                     {"ts", ts(a.time_ns)},
                     {"args",
                      {{"Total Allocated", a.stats.allocated_bytes},
                       {"Total Reserved", a.stats.reserved_bytes}}}});
  }
  std::map<std::pair<int16_t, int16_t>, int64_t> in_use;
  for (const Event& e : events_) {
    const int64_t tid = static_cast<int64_t>(e.thread_id);
    if (e.kind == EventKind::Memory) {
      auto key = std::make_pair(e.device.type, e.device.index);
      int64_t& total = in_use[key];
      total += e.bytes;
      trace.push_back({{"ph", "C"},
                       {"name", "Memory " + e.device_name()},
                       {"pid", pid},
                       {"ts", ts(e.start_ns)},
                       {"args", {{"Total Allocated", total}}}});
      continue;
    }
    if (is_device(e.kind)) {
      const int64_t dpid = device_pid(e);
      json args = {{"stream", e.stream}, {"correlation", e.correlation_id}};
      if (e.kind == EventKind::DeviceCopy) args["bytes"] = e.bytes;
      trace.push_back({{"ph", "X"},
                       {"cat", category_of(e.kind)},
                       {"name", e.name},
                       {"pid", dpid},
                       {"tid", static_cast<int64_t>(e.stream)},
                       {"ts", ts(e.start_ns)},
                       {"dur", micros(e.duration_ns())},
                       {"args", args}});
      auto launcher = by_id.find(e.correlation_id);
      if (e.correlation_id != 0 && launcher != by_id.end()) {
        const Event& op = *launcher->second;
        add_flow(trace, "ac2g", "launch", launch_flow_id(e.correlation_id),
                 {pid, static_cast<int64_t>(op.thread_id), ts(op.start_ns)},
                 {dpid, static_cast<int64_t>(e.stream), ts(e.start_ns)});
      }
      continue;
    }
    threads.insert(e.thread_id);
    json args = json::object();
    if (!e.overload.empty()) args["overload"] = e.overload;
    if (!e.dispatch_key.empty()) args["dispatch key"] = e.dispatch_key;
    if (!e.input_shapes.empty()) {
      args["Input Dims"] = e.input_shapes;
      args["Input type"] = e.input_dtypes;
    }
    if (e.sequence_nr) args["Sequence number"] = *e.sequence_nr;
    if (e.kind == EventKind::Op && e.bytes > 0) args["bytes"] = e.bytes;  // a collective's
    if (options_.profile_memory) {
      args["bytes allocated"] = e.bytes_allocated;
      args["bytes freed"] = e.bytes_freed;
    }
    if (!e.stack.empty()) args["Call stack"] = e.stack;
    trace.push_back({{"ph", "X"},
                     {"cat", category_of(e.kind)},
                     {"name", e.name},
                     {"pid", pid},
                     {"tid", tid},
                     {"ts", ts(e.start_ns)},
                     {"dur", micros(e.duration_ns())},
                     {"args", args}});
    if (e.kind == EventKind::BackwardNode && e.sequence_nr) {
      auto forward = forward_of.find(*e.sequence_nr);
      if (forward != forward_of.end()) {
        const Event& op = *forward->second;
        add_flow(trace, "fwdbwd", "fwdbwd", fwdbwd_flow_id(*e.sequence_nr),
                 {pid, static_cast<int64_t>(op.thread_id), ts(op.start_ns)},
                 {pid, tid, ts(e.start_ns)});
      }
    }
  }
  for (uint64_t thread : threads) {
    const int64_t tid = static_cast<int64_t>(thread);
    trace.push_back(
        {{"ph", "M"},
         {"name", "thread_name"},
         {"pid", pid},
         {"tid", tid},
         {"args", {{"name", tid == pid ? std::string("main thread") : str_cat("thread ", tid)}}}});
  }
  json document = {
      {"traceEvents", std::move(trace)}, {"displayTimeUnit", "ms"}, {"baseTimeNanoseconds", t0}};
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  LOOM_CHECK(out.good(), "profiler", "export_chrome_trace: cannot open '", path, "' for writing");
  out << document.dump();
  out.close();
  LOOM_CHECK(!out.fail(), "profiler", "export_chrome_trace: writing '", path, "' failed");
}

}  // namespace loom::profiler
