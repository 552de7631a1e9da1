// Dispatch overhead: a boxed call from C++ to a no-op kernel in a loaded plugin, and a
// 1-element add in the example vendor plugin and the CPU plugin (which includes
// allocating the result through the plugin's allocator and releasing it).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>

#include "loom/loom.h"

namespace {

using loom::dispatch::Dispatcher;
using loom::dispatch::PluginHost;

bool load(const std::string& file) {
  if (!std::filesystem::exists(file)) return false;
  PluginHost::instance().load(file);
  return true;
}

// The floor: an indirect call through a function pointer the compiler cannot see.
LoomError* (*volatile g_noop_fn)(void*, const LoomKernelCall*) =
    [](void*, const LoomKernelCall*) -> LoomError* { return nullptr; };

void BM_IndirectCallFloor(benchmark::State& state) {
  LoomKernelCall call{};
  for (auto _ : state) benchmark::DoNotOptimize(g_noop_fn(nullptr, &call));
}
BENCHMARK(BM_IndirectCallFloor);

void BM_NoopDispatchToPlugin(benchmark::State& state) {
  if (!load(std::string(LOOM_TEST_PLUGIN_DIR) + "/libloom_plugin_test_ops.so")) {
    state.SkipWithError("test_ops plugin not built");
    return;
  }
  Dispatcher& d = Dispatcher::instance();
  loom::dispatch::OperatorHandle op = d.find_defined("test::noop");
  loom::Tensor t = loom::empty(std::vector<int64_t>{1}, loom::ScalarType::Float32);
  LoomValue args[] = {loom::dispatch::box(t)};
  for (auto _ : state) {
    d.call(op, args, 1, nullptr, 0);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_NoopDispatchToPlugin);

void add_one_element(benchmark::State& state, const std::string& plugin_file, const char* device) {
  if (!load(plugin_file)) {
    state.SkipWithError(("plugin not built: " + plugin_file).c_str());
    return;
  }
  Dispatcher& d = Dispatcher::instance();
  loom::dispatch::OperatorHandle op = d.find_defined("loom::add.Tensor");
  loom::Device dev = loom::parse_device(device);
  loom::Tensor a = loom::empty(std::vector<int64_t>{1}, loom::ScalarType::Float32, dev);
  loom::Tensor b = loom::empty(std::vector<int64_t>{1}, loom::ScalarType::Float32, dev);
  LoomValue args[] = {loom::dispatch::box(a), loom::dispatch::box(b),
                      loom::dispatch::box(int64_t{1})};
  LoomValue ret[1];
  for (auto _ : state) {
    d.call(op, args, 3, ret, 1);
    loom::dispatch::release_value(ret[0]);
  }
}

void BM_AddOneElementExamplePlugin(benchmark::State& state) {
  add_one_element(state, std::string(LOOM_EXAMPLE_PLUGIN_DIR) + "/libloom_plugin_npu_sim.so",
                  "npu_sim:0");
}
BENCHMARK(BM_AddOneElementExamplePlugin);

void BM_AddOneElementCpuPlugin(benchmark::State& state) {
  add_one_element(state, std::string(LOOM_PLUGIN_DIR) + "/libloom_plugin_cpu.so", "cpu");
}
BENCHMARK(BM_AddOneElementCpuPlugin);

}  // namespace

BENCHMARK_MAIN();
