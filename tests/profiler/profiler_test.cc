// The profiler plugin through loom::profiler: nesting, shapes, memory accounting, the
// Chrome trace, threads, restarts, schedules, ranges, autograd's links and the device
// caching allocators' figures.
#include "loom/profiler.h"
#include "loom/dispatcher/dispatcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "../frontend/frontend_test_util.h"
#include "loom/dispatcher/local_dispatch_key_set.h"
#include "loom/dispatcher/plugin_host.h"
#include "loom/loom.h"

namespace loom {
namespace {

using profiler::Event;
using profiler::EventKind;
using profiler::Profiler;
using profiler::ProfilerOptions;

class ProfilerTest : public test::LoadedRuntimeTest {};

std::vector<const Event*> named(const std::vector<Event>& events, const std::string& name) {
  std::vector<const Event*> out;
  for (const Event& e : events) {
    if (e.name == name) out.push_back(&e);
  }
  return out;
}

const Event& only(const std::vector<Event>& events, const std::string& name) {
  std::vector<const Event*> found = named(events, name);
  EXPECT_EQ(found.size(), 1u) << name;
  if (found.empty()) throw std::runtime_error("no event named " + name);
  return *found[0];
}

const Event* by_id(const std::vector<Event>& events, uint64_t id) {
  for (const Event& e : events) {
    if (e.id == id) return &e;
  }
  return nullptr;
}

TEST_F(ProfilerTest, IsAvailableAndCostsNothingUntilStarted) {
  EXPECT_TRUE(Profiler::is_available());
  // Loaded but idle: the Profiler key is in no dispatch of any thread.
  EXPECT_EQ(dispatch::detail::g_process_included.load(), 0u);
  {
    Profiler p;
    EXPECT_TRUE(p.is_recording());
    EXPECT_NE(dispatch::detail::g_process_included.load(), 0u);
  }
  EXPECT_EQ(dispatch::detail::g_process_included.load(), 0u);
}

TEST_F(ProfilerTest, NestsDecompositionsUnderTheirOp) {
  Tensor x = ones({4, 3});
  Tensor w = ones({2, 3});
  Tensor b = ones({2});
  Profiler p;
  Tensor y = loom::linear(x, w, b);
  p.stop();
  EXPECT_FALSE(p.is_recording());
  const Event& linear = only(p.events(), "loom::linear");
  const Event& addmm = only(p.events(), "loom::addmm");
  EXPECT_EQ(linear.kind, EventKind::Op);
  EXPECT_EQ(linear.parent_id, 0u);
  EXPECT_EQ(addmm.parent_id, linear.id);
  EXPECT_LE(linear.start_ns, addmm.start_ns);
  EXPECT_GE(linear.end_ns, addmm.end_ns);
  EXPECT_EQ(addmm.dispatch_key, "CPU");
  EXPECT_EQ(linear.thread_id, addmm.thread_id);
}

TEST_F(ProfilerTest, RecordsInputShapesAndDtypes) {
  Tensor a = ones({2, 3});
  Tensor b = ones({3}, TensorOptions{}.dtype(ScalarType::Float64));
  Profiler p({.record_shapes = true});
  Tensor c = a + b;
  p.stop();
  const Event& add = only(p.events(), "loom::add");
  EXPECT_EQ(add.overload, "Tensor");
  EXPECT_EQ(add.qualified_name(), "loom::add.Tensor");
  EXPECT_EQ(add.input_shapes, "[[2, 3], [3], []]");
  EXPECT_EQ(add.input_dtypes, "[float32, float64, Scalar]");
  Profiler without;
  Tensor d = a + b;
  without.stop();
  EXPECT_EQ(only(without.events(), "loom::add").input_shapes, "");
}

TEST_F(ProfilerTest, MemoryAccountingEqualsTheAllocationsMade) {
  Tensor a = ones({256});
  Profiler p({.profile_memory = true});
  {
    Tensor b = a * 2.0;  // a float32 block of 256 elements (and the app's wrapped 2.0)
    Tensor c = b.sum();  // a 4-byte result
  }                      // all freed here, outside any op
  p.stop();
  // Each allocation inside an op counts towards exactly the ops open around it: the
  // top-level ops' bytes add up to the allocations recorded under them.
  int64_t inside_ops = 0, allocated = 0, freed = 0;
  for (const Event& e : p.events()) {
    if (e.kind != EventKind::Memory) continue;
    (e.bytes > 0 ? allocated : freed) += e.bytes;
    if (e.bytes > 0 && e.parent_id != 0) inside_ops += e.bytes;
  }
  int64_t top_level = 0;
  for (const Event& e : p.events()) {
    if (e.kind == EventKind::Op && e.parent_id == 0) top_level += e.bytes_allocated;
  }
  EXPECT_EQ(inside_ops, top_level);
  EXPECT_GE(only(p.events(), "loom::mul").bytes_allocated, 256 * 4);
  const Event& sum = *named(p.events(), "loom::sum").front();
  EXPECT_EQ(sum.bytes_allocated, 4);
  EXPECT_EQ(freed, -allocated);  // everything allocated was freed before stop
  std::string summary = p.memory_summary();
  EXPECT_NE(summary.find("cpu"), std::string::npos) << summary;
  EXPECT_NE(summary.find("in use at stop 0 B"), std::string::npos) << summary;
  EXPECT_NE(summary.find("loom::mul"), std::string::npos) << summary;
}

// A device plugin's allocator figures (its "loom.device_memory.<type>" table; the test
// device counts every allocation) sampled when recording starts, at each step and at
// the stop, summarised and drawn as a counter in the trace.
TEST_F(ProfilerTest, SamplesTheDeviceAllocatorsAtTheStartEachStepAndTheStop) {
  dispatch::PluginHost& host = dispatch::PluginHost::instance();
  if (!host.is_loaded("test_device")) {
    host.load(std::string(LOOM_TEST_PLUGIN_DIR) + "/libloom_plugin_test_device.so");
  }
  const Device dev = parse_device("testdev:0");
  EXPECT_EQ(devices_with_memory_stats(), std::vector<Device>{dev});  // cpu has no table
  const MemoryStats before = memory_stats(dev);
  {
    Profiler p({.profile_memory = true});
    Tensor kept = empty(std::vector<int64_t>{1000}, ScalarType::Float32, dev);
    p.step();
    { Tensor t = empty(std::vector<int64_t>{250}, ScalarType::Float32, dev); }
    p.stop();
    const std::vector<profiler::AllocatorSample>& samples = p.allocator_samples();
    ASSERT_EQ(samples.size(), 3u);  // start, the step, the stop
    for (const auto& s : samples) EXPECT_EQ(s.device, dev);
    EXPECT_LE(samples[0].time_ns, samples[1].time_ns);
    EXPECT_LE(samples[1].time_ns, samples[2].time_ns);
    EXPECT_EQ(samples[0].stats.allocated_bytes, before.allocated_bytes);
    EXPECT_EQ(samples[1].stats.allocated_bytes, before.allocated_bytes + 4000);
    EXPECT_EQ(samples[2].stats.allocated_bytes, before.allocated_bytes + 4000);
    EXPECT_EQ(samples[2].stats.allocations, before.allocations + 2);
    const std::string summary = p.allocator_summary();
    EXPECT_NE(summary.find("testdev:0: allocated "), std::string::npos) << summary;
    EXPECT_NE(summary.find("2 requests, 0 from the cache (0.0%), 2 driver allocations, 1 driver "
                           "frees"),
              std::string::npos)
        << summary;
    EXPECT_NE(p.memory_summary().find(summary), std::string::npos);

    std::filesystem::path path =
        std::filesystem::temp_directory_path() / "loom_allocator_trace.json";
    p.export_chrome_trace(path.string());
    nlohmann::json trace = nlohmann::json::parse(std::ifstream(path));
    std::vector<int64_t> reserved;
    for (const auto& e : trace["traceEvents"]) {
      if (e["ph"] == "C" && e["name"] == "Allocator testdev:0") {
        reserved.push_back(e["args"]["Total Reserved"].get<int64_t>());
        EXPECT_GE(e["ts"].get<double>(), 0.0);
      }
    }
    EXPECT_EQ(reserved, (std::vector<int64_t>{before.reserved_bytes, before.reserved_bytes + 4000,
                                              before.reserved_bytes + 4000}));
    std::filesystem::remove(path);
  }
  Profiler without_memory;  // samples only with profile_memory
  without_memory.stop();
  EXPECT_TRUE(without_memory.allocator_samples().empty());
  EXPECT_EQ(without_memory.allocator_summary(), "");
  host.unload("test_device");
}

TEST_F(ProfilerTest, UserRangesNestOpsAndNestInEachOther) {
  Tensor a = ones({3});
  Profiler p;
  {
    profiler::Range outer("data");
    {
      profiler::Range inner("decode");
      Tensor b = a.neg();
    }
    Tensor c = a.exp();
  }
  p.stop();
  const Event& outer = only(p.events(), "data");
  const Event& inner = only(p.events(), "decode");
  EXPECT_EQ(outer.kind, EventKind::UserRange);
  EXPECT_EQ(inner.parent_id, outer.id);
  EXPECT_EQ(only(p.events(), "loom::neg").parent_id, inner.id);
  EXPECT_EQ(only(p.events(), "loom::exp").parent_id, outer.id);
}

TEST_F(ProfilerTest, ARangeOpenWhenRecordingStopsEndsAtTheStop) {
  Profiler p;
  profiler::Range open("still running");
  Tensor b = ones({2}).neg();
  p.stop();
  const Event& range = only(p.events(), "still running");
  EXPECT_GE(range.end_ns, only(p.events(), "loom::neg").end_ns);
}

TEST_F(ProfilerTest, BackwardNodesRunUnderBackwardAndLinkToTheirForwardOp) {
  Tensor x = ones({3}).requires_grad_();
  Profiler p;
  Tensor y = (x * 3.0).sum();
  y.backward();
  p.stop();
  const Event& mul = *named(p.events(), "loom::mul").front();  // the forward's; backward's later
  EXPECT_EQ(mul.parent_id, 0u);
  ASSERT_TRUE(mul.sequence_nr.has_value());
  const Event* node = nullptr;
  for (const Event& e : p.events()) {
    if (e.kind == EventKind::BackwardNode && e.sequence_nr == mul.sequence_nr) node = &e;
  }
  ASSERT_NE(node, nullptr) << "no backward node for loom::mul's sequence number";
  EXPECT_NE(node->name.find("Mul"), std::string::npos) << node->name;
  const Event* parent = by_id(p.events(), node->parent_id);
  ASSERT_NE(parent, nullptr);
  EXPECT_EQ(parent->name, "autograd::backward");
  // The node's formula ran ops, which nest under it.
  bool child = false;
  for (const Event& e : p.events()) child = child || e.parent_id == node->id;
  EXPECT_TRUE(child);
}

TEST_F(ProfilerTest, ChromeTraceIsValidTraceEventJson) {
  Tensor x = ones({3}).requires_grad_();
  std::filesystem::path path = std::filesystem::temp_directory_path() / "loom_profiler_trace.json";
  {
    Profiler p({.record_shapes = true, .profile_memory = true});
    profiler::Range r("step");
    Tensor y = (x * 2.0).sum();
    y.backward();
    p.stop();
    p.export_chrome_trace(path.string());
  }
  std::ifstream in(path);
  nlohmann::json trace = nlohmann::json::parse(in);  // throws on malformed JSON
  ASSERT_TRUE(trace.contains("traceEvents"));
  std::set<std::string> phases, categories, metadata;
  std::map<uint64_t, int> flow_starts, flow_ends;
  for (const auto& e : trace["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph") && e.contains("name") && e.contains("pid")) << e.dump();
    const std::string ph = e["ph"];
    phases.insert(ph);
    if (ph == "M") {
      metadata.insert(e["name"].get<std::string>());
      continue;
    }
    ASSERT_TRUE(e.contains("ts") && e["ts"].is_number()) << e.dump();
    if (ph == "X") {
      ASSERT_TRUE(e.contains("dur") && e["dur"].is_number() && e.contains("tid")) << e.dump();
      EXPECT_GE(e["dur"].get<double>(), 0.0);
      categories.insert(e["cat"].get<std::string>());
    }
    if (ph == "s") ++flow_starts[e["id"].get<uint64_t>()];
    if (ph == "f") {
      EXPECT_EQ(e["bp"], "e");
      ++flow_ends[e["id"].get<uint64_t>()];
    }
    if (ph == "C") {
      EXPECT_TRUE(e["args"].contains("Total Allocated")) << e.dump();
    }
  }
  EXPECT_EQ(phases, (std::set<std::string>{"M", "X", "s", "f", "C"}));
  EXPECT_TRUE(categories.count("cpu_op") && categories.count("user_annotation") &&
              categories.count("backward_node"));
  EXPECT_TRUE(metadata.count("process_name") && metadata.count("thread_name"));
  EXPECT_FALSE(flow_starts.empty());
  EXPECT_EQ(flow_starts, flow_ends);  // every arrow has both ends
  std::filesystem::remove(path);
}

TEST_F(ProfilerTest, RecordsOpsOfEveryThread) {
  Tensor a = ones({4});
  Profiler p;
  auto work = [&] {
    for (int i = 0; i < 50; ++i) Tensor b = a.abs();
  };
  std::thread t1(work), t2(work);
  t1.join();
  t2.join();
  p.stop();
  std::map<uint64_t, int> per_thread;
  for (const Event* e : named(p.events(), "loom::abs")) ++per_thread[e->thread_id];
  ASSERT_EQ(per_thread.size(), 2u);
  for (const auto& [thread, count] : per_thread) EXPECT_EQ(count, 50);
}

TEST_F(ProfilerTest, StartsAndStopsTwiceAndRefusesTwoAtOnce) {
  Tensor a = ones({2});
  {
    Profiler first;
    Tensor b = a.neg();
    test::expect_error([] { Profiler second; }, "profiler", {"another Profiler is recording"});
    first.stop();
    first.stop();  // a no-op
    EXPECT_EQ(named(first.events(), "loom::neg").size(), 1u);
  }
  Profiler again;
  Tensor c = a.exp();
  again.stop();
  EXPECT_TRUE(named(again.events(), "loom::neg").empty());  // nothing of the first run
  EXPECT_EQ(named(again.events(), "loom::exp").size(), 1u);
}

TEST_F(ProfilerTest, ScheduleKeepsOnlyActiveSteps) {
  Tensor a = ones({2});
  std::vector<std::vector<int64_t>> ready;  // the steps each on_trace_ready saw
  ProfilerOptions options;
  options.schedule = profiler::Schedule{.wait = 1, .warmup = 1, .active = 2, .repeat = 2};
  options.on_trace_ready = [&](Profiler& p) {
    std::vector<int64_t> steps;
    for (const Event& e : p.events()) {
      if (e.name.rfind("ProfilerStep#", 0) == 0) steps.push_back(std::stoll(e.name.substr(13)));
    }
    std::sort(steps.begin(), steps.end());
    EXPECT_EQ(named(p.events(), "loom::neg").size(), steps.size());
    ready.push_back(steps);
  };
  Profiler p(options);
  EXPECT_FALSE(p.is_recording());  // step 0 waits
  for (int step = 0; step < 10; ++step) {
    Tensor b = a.neg();
    p.step();
  }
  p.stop();
  ASSERT_EQ(ready.size(), 2u);
  EXPECT_EQ(ready[0], (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(ready[1], (std::vector<int64_t>{6, 7}));
  EXPECT_FALSE(p.is_recording());  // after two cycles it stays off
}

TEST_F(ProfilerTest, TableAggregatesSelfAndTotalTime) {
  Tensor x = ones({4, 3});
  Tensor w = ones({2, 3});
  Tensor b = ones({2});
  Profiler p({.record_shapes = true});
  for (int i = 0; i < 3; ++i) Tensor y = loom::linear(x, w, b);
  p.stop();
  std::string table = p.table("total_time", 2);
  // linear's total includes t and addmm, so it sorts first by total time.
  size_t linear = table.find("loom::linear");
  ASSERT_NE(linear, std::string::npos) << table;
  EXPECT_EQ(table.find("loom::linear", linear + 1), std::string::npos);
  EXPECT_NE(table.find("(3 rows, 2 shown)"), std::string::npos) << table;
  std::string by_shape = p.table("calls", 0, /*group_by_input_shape=*/true);
  EXPECT_NE(by_shape.find("[[4, 3], [2, 3], [2]]"), std::string::npos) << by_shape;
  test::expect_error([&] { p.table("fastest"); }, "profiler", {"sort_by", "'fastest'"});
  test::expect_error([&] { p.memory_summary(); }, "profiler", {"profile_memory"});
}

TEST_F(ProfilerTest, WithStackNamesTheCaller) {
  Tensor a = ones({2});
  Profiler p({.with_stack = true});
  Tensor b = a.neg();
  p.stop();
  const Event& neg = only(p.events(), "loom::neg");
  EXPECT_NE(neg.stack.find("WithStackNamesTheCaller"), std::string::npos) << neg.stack;
}

TEST_F(ProfilerTest, BadSchedulesAndPathsAreRefused) {
  ProfilerOptions options;
  options.schedule = profiler::Schedule{.active = 0};
  test::expect_error([&] { Profiler p(options); }, "profiler", {"active must be >= 1", "found 0"});
  options.schedule = profiler::Schedule{.wait = -1};
  test::expect_error([&] { Profiler p(options); }, "profiler", {"wait=-1"});
  Profiler p;
  p.stop();
  test::expect_error([&] { p.export_chrome_trace("/nonexistent-dir/trace.json"); }, "profiler",
                     {"cannot open", "/nonexistent-dir/trace.json"});
}

}  // namespace
}  // namespace loom
