// The device timeline seam: the example vendor backend (npu_sim, built out of tree against
// the SDK) reports each kernel it runs on a stream through the host's trace service, and
// the profiler puts it on the device's track, linked to the op that queued it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "../frontend/frontend_test_util.h"
#include "loom/loom.h"

namespace loom {
namespace {

using profiler::Event;
using profiler::EventKind;

TEST(ProfilerOnVendorBackend, KernelsOnStreamsJoinTheTrace) {
  Runtime runtime = test::load_plugins(
      {"cpu", "profiler"}, {std::string(LOOM_EXAMPLE_PLUGIN_DIR) + "/libloom_plugin_npu_sim.so"});
  ASSERT_EQ(runtime.report().loaded.size(), 3u);
  const Device npu = parse_device("npu_sim:1");
  Tensor x = tensor({1.0, -2.0, 3.0}).to(npu);
  Stream stream = Stream::create(npu);
  profiler::Profiler p;
  Tensor y;
  {
    StreamGuard guard(stream);
    y = (x * 2.0).neg();
  }
  stream.synchronize();  // the kernels ran (and reported) before the profiler stops
  p.stop();
  std::vector<const Event*> kernels;
  for (const Event& e : p.events()) {
    if (e.kind == EventKind::DeviceKernel) kernels.push_back(&e);
  }
  ASSERT_EQ(kernels.size(), 2u);
  for (const Event* k : kernels) {
    EXPECT_EQ(k->device, npu);
    EXPECT_NE(k->stream, 0u);  // a worker stream, not the default one
    EXPECT_LE(k->start_ns, k->end_ns);
    // Correlated with the op that queued it, which ran on the npu_sim backend.
    const Event* launcher = nullptr;
    for (const Event& e : p.events()) {
      if (e.id == k->correlation_id) launcher = &e;
    }
    ASSERT_NE(launcher, nullptr) << k->name;
    EXPECT_EQ(launcher->kind, EventKind::Op);
    EXPECT_EQ(launcher->dispatch_key, "npu_sim");
    // The kernel is the out= form of the functional op that was called.
    EXPECT_EQ(k->name, launcher->name + ".out");
  }
  std::filesystem::path path = std::filesystem::temp_directory_path() / "loom_npu_trace.json";
  p.export_chrome_trace(path.string());
  nlohmann::json trace = nlohmann::json::parse(std::ifstream(path));
  int device_slices = 0, launch_flows = 0;
  bool device_process = false;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["cat"] == "kernel") ++device_slices;
    if (e["ph"] == "f" && e["cat"] == "ac2g") ++launch_flows;
    if (e["ph"] == "M" && e["name"] == "process_name" && e["args"]["name"] == "device npu_sim:1") {
      device_process = true;
    }
  }
  EXPECT_EQ(device_slices, 2);
  EXPECT_EQ(launch_flows, 2);
  EXPECT_TRUE(device_process);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace loom
