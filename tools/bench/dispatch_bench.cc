// Dispatch overhead: a boxed call from C++ to a no-op kernel in a loaded plugin, a
// 1-element add in the example vendor plugin and the CPU plugin (which includes
// allocating the result through the plugin's allocator and releasing it), and a 1-element
// copy from the host to the example plugin's device. Bandwidth: a
// 16M-element float32 add in the CPU plugin, into a new tensor (from the host pool's
// cache, and freshly mapped with and without huge pages) and into a reused out= (3 x 64
// MiB moved per op; threads: LOOM_NUM_THREADS).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>

#include "loom/dispatcher/boxing.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/loom.h"
#include "loom/ops/standard_library.h"

namespace {

using loom::dispatch::Dispatcher;
using loom::dispatch::PluginHost;

bool load(const std::string& file) {
  if (!std::filesystem::exists(file)) return false;
  loom::ops::load_standard_library();  // what a Runtime does before loading plugins
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

void add_one_element(benchmark::State& state, const std::string& plugin_file, const char* device,
                     const char* op_name = "loom::add.Tensor") {
  if (!load(plugin_file)) {
    state.SkipWithError(("plugin not built: " + plugin_file).c_str());
    return;
  }
  Dispatcher& d = Dispatcher::instance();
  loom::dispatch::OperatorHandle op = d.find_defined(op_name);
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

// The same add as an app writes it: `a + b` through the typed API (the operator's
// cached handle, boxing of the arguments and the result's Tensor handle included).
void BM_AddOneElementOperator(benchmark::State& state) {
  if (!load(std::string(LOOM_PLUGIN_DIR) + "/libloom_plugin_cpu.so")) {
    state.SkipWithError("cpu plugin not built");
    return;
  }
  loom::Tensor a = loom::ones({1});
  loom::Tensor b = loom::ones({1});
  for (auto _ : state) {
    loom::Tensor c = a + b;
    benchmark::DoNotOptimize(c.impl());
  }
}
BENCHMARK(BM_AddOneElementOperator);

void BM_AddOneElementExamplePlugin(benchmark::State& state) {
  add_one_element(state, std::string(LOOM_EXAMPLE_PLUGIN_DIR) + "/libloom_plugin_npu_sim.so",
                  "npu_sim:0");
}
BENCHMARK(BM_AddOneElementExamplePlugin);

// copy_ of 1 element from the host into the example plugin's device: the op library's
// path between devices (Note [Copies between devices]), through the device interface's
// copy (the plugin's own queue runs it at once on the default stream).
void BM_CopyOneElementToExamplePlugin(benchmark::State& state) {
  if (!load(std::string(LOOM_EXAMPLE_PLUGIN_DIR) + "/libloom_plugin_npu_sim.so")) {
    state.SkipWithError("example plugin not built");
    return;
  }
  loom::Tensor host = loom::empty(std::vector<int64_t>{1}, loom::ScalarType::Float32);
  loom::Tensor device = loom::empty(std::vector<int64_t>{1}, loom::ScalarType::Float32,
                                    loom::parse_device("npu_sim:0"));
  for (auto _ : state) device.copy_(host);
}
BENCHMARK(BM_CopyOneElementToExamplePlugin);

void BM_AddOneElementCpuPlugin(benchmark::State& state) {
  add_one_element(state, std::string(LOOM_PLUGIN_DIR) + "/libloom_plugin_cpu.so", "cpu");
}
BENCHMARK(BM_AddOneElementCpuPlugin);

// add_ in place on 1 element: the path that pays the dispatcher's overlap checks of the
// written tensor (Note [Overlapping writes]) and its version-counter bump.
void BM_AddInPlaceOneElementCpuPlugin(benchmark::State& state) {
  add_one_element(state, std::string(LOOM_PLUGIN_DIR) + "/libloom_plugin_cpu.so", "cpu",
                  "loom::add_.Tensor");
}
BENCHMARK(BM_AddInPlaceOneElementCpuPlugin);

// A view op through the dispatcher (loom::Tensor::transpose, Note [View ops]) against the
// direct metadata call it replaced (TensorBase::transpose); both make and release one
// tensor handle per call.
void BM_TransposeDirect(benchmark::State& state) {
  if (!load(std::string(LOOM_PLUGIN_DIR) + "/libloom_plugin_cpu.so")) return;
  loom::Tensor x = loom::ones({4, 5});
  for (auto _ : state) {
    loom::TensorBase t = x.TensorBase::transpose(0, 1);
    benchmark::DoNotOptimize(t.impl());
  }
}
BENCHMARK(BM_TransposeDirect);

void BM_TransposeDispatched(benchmark::State& state) {
  if (!load(std::string(LOOM_PLUGIN_DIR) + "/libloom_plugin_cpu.so")) return;
  loom::Tensor x = loom::ones({4, 5});
  for (auto _ : state) {
    loom::Tensor t = x.transpose(0, 1);
    benchmark::DoNotOptimize(t.impl());
  }
}
BENCHMARK(BM_TransposeDispatched);

// 16M float32 elements: 64 MiB per operand.
constexpr int64_t kLargeNumel = int64_t{1} << 24;

bool load_cpu_plugin(benchmark::State& state) {
  if (load(std::string(LOOM_PLUGIN_DIR) + "/libloom_plugin_cpu.so")) return true;
  state.SkipWithError("cpu plugin not built");
  return false;
}

// loom::add(a, b) returning a new tensor, as apps call it: the 64 MiB result comes from
// the host pool's cache after the first call (Note [Large host blocks]).
void BM_AddLargeCpuPlugin(benchmark::State& state) {
  if (!load_cpu_plugin(state)) return;
  loom::Tensor a = loom::ones({kLargeNumel});
  loom::Tensor b = loom::ones({kLargeNumel});
  for (auto _ : state) benchmark::DoNotOptimize(loom::add(a, b));
  state.SetBytesProcessed(state.iterations() * 3 * kLargeNumel * int64_t{sizeof(float)});
}
BENCHMARK(BM_AddLargeCpuPlugin)->UseRealTime()->Unit(benchmark::kMillisecond);

// The same with the pool's cache off, so every result is freshly mapped and faulted in:
// with 2 MiB transparent huge pages (argument 1) or 4 KiB pages (argument 0).
void BM_AddLargeFreshPagesCpuPlugin(benchmark::State& state) {
  if (!load_cpu_plugin(state)) return;
  loom::Tensor a = loom::ones({kLargeNumel});
  loom::Tensor b = loom::ones({kLargeNumel});
  const size_t limit = loom::host_memory_stats().cache_limit_bytes;
  loom::set_host_cache_limit(0);
  loom::set_host_huge_pages(state.range(0) != 0);
  for (auto _ : state) benchmark::DoNotOptimize(loom::add(a, b));
  loom::set_host_huge_pages(true);
  loom::set_host_cache_limit(limit);
  state.SetBytesProcessed(state.iterations() * 3 * kLargeNumel * int64_t{sizeof(float)});
}
BENCHMARK(BM_AddLargeFreshPagesCpuPlugin)
    ->Arg(1)
    ->Arg(0)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// loom::add_out into the same output every time: the kernel's bandwidth alone.
void BM_AddLargeOutCpuPlugin(benchmark::State& state) {
  if (!load_cpu_plugin(state)) return;
  loom::Tensor a = loom::ones({kLargeNumel});
  loom::Tensor b = loom::ones({kLargeNumel});
  loom::Tensor out = loom::empty({kLargeNumel});
  for (auto _ : state) loom::add_out(out, a, b);
  state.SetBytesProcessed(state.iterations() * 3 * kLargeNumel * int64_t{sizeof(float)});
}
BENCHMARK(BM_AddLargeOutCpuPlugin)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
