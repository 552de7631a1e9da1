// The plugin host: every loader failure has its own clear error and leaves nothing
// registered; plugin info; kernel errors through the ABI; unload refusal and success;
// manifests with required and optional plugins; a fallback that redispatches via the ABI.
#include <gtest/gtest.h>

#include <filesystem>

#include "../dispatcher/dispatch_test_util.h"
#include "loom/core/device.h"
#include "loom/core/device_runtime.h"
#include "loom/dispatcher/boxing.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/local_dispatch_key_set.h"
#include "loom/dispatcher/plugin_host.h"
#include "loom/loom.h"
#include "loom/ops/standard_library.h"
#include "loom/runtime.h"

namespace loom::testing {
namespace {

using dispatch::Dispatcher;
using dispatch::PluginHost;

const std::string kDir = LOOM_TEST_PLUGIN_DIR;
// The test plugins register kernels for standard ops, as a runtime's plugins would.
const bool kStandardLibraryLoaded = (ops::load_standard_library(), true);
// The running core's ABI as the loader's messages write it ("1.5"), so these tests
// follow the header's version instead of naming one.
const std::string kCoreAbi =
    std::to_string(LOOM_ABI_VERSION_MAJOR) + "." + std::to_string(LOOM_ABI_VERSION_MINOR);
std::string plugin_file(const std::string& name) {
  return kDir + "/libloom_plugin_" + name + ".so";
}

TEST(PluginLoading, MissingFile) {
  expect_error([] { PluginHost::instance().load(kDir + "/libloom_plugin_nope.so"); }, "plugin-host",
               {"libloom_plugin_nope.so", "does not exist"});
}

TEST(PluginLoading, NotASharedLibrary) {
  expect_error([] { PluginHost::instance().load(plugin_file("test_not_elf")); }, "plugin-host",
               {"test_not_elf", "is not a shared library", "expected an ELF shared object"});
}

TEST(PluginLoading, MissingEntrySymbol) {
  expect_error([] { PluginHost::instance().load(plugin_file("test_no_entry")); }, "plugin-host",
               {"test_no_entry", "does not export the entry symbol 'loom_plugin_entry'"});
}

TEST(PluginLoading, AbiMajorMismatch) {
  expect_error([] { PluginHost::instance().load(plugin_file("test_abi_major")); }, "plugin-host",
               {"built for loom ABI 2.0", "provides ABI " + kCoreAbi, "major version must match"});
  EXPECT_FALSE(PluginHost::instance().is_loaded("test_abi_version"));
}

TEST(PluginLoading, AbiMinorTooOld) {
  expect_error([] { PluginHost::instance().load(plugin_file("test_abi_minor")); }, "plugin-host",
               {"needs loom ABI 1.99", "provides only " + kCoreAbi, "minor version too old"});
}

TEST(PluginLoading, ZeroStructSizeIsRejected) {
  expect_error([] { PluginHost::instance().load(plugin_file("test_bad_table")); }, "plugin-host",
               {"struct_size 0"});
}

TEST(PluginLoading, InitFailureCarriesThePluginMessageAndUndoesRegistrations) {
  expect_error([] { PluginHost::instance().load(plugin_file("test_init_fails")); }, "plugin-host",
               {"'test_init_fails'", "failed to initialise", "no device found"});
  EXPECT_FALSE(PluginHost::instance().is_loaded("test_init_fails"));
  auto op = Dispatcher::instance().find("test_init_fails::partial");
  EXPECT_TRUE(!op || !op->is_defined());
}

// A typed kernel whose parameters do not fit its op's schema fails the plugin's
// initialisation, naming the op, both counts and the schema.
TEST(PluginLoading, ATypedKernelOfTheWrongArityIsRefusedAtRegistration) {
  expect_error([] { PluginHost::instance().load(plugin_file("test_wrong_arity")); }, "plugin-host",
               {"'test_wrong_arity'", "failed to initialise",
                "[sdk] kernel for 'loom::add.out' takes 3 arguments and 1 returns but the schema "
                "has 4 and 1",
                "loom::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out)"});
  EXPECT_FALSE(PluginHost::instance().is_loaded("test_wrong_arity"));
}

TEST(PluginLoading, DuplicateOpDefinitionFailsInitAndUndoesRegistrations) {
  expect_error([] { PluginHost::instance().load(plugin_file("test_duplicate_op")); }, "plugin-host",
               {"failed to initialise", "'loom::add.Tensor' is already defined by core",
                "test_duplicate_op cannot define it again"});
  auto fine = Dispatcher::instance().find("test_duplicate_op::fine");
  EXPECT_TRUE(!fine || !fine->is_defined());
  EXPECT_EQ(
      Dispatcher::instance().defined_by(Dispatcher::instance().find_defined("loom::add.Tensor")),
      "core");
}

TEST(PluginLoading, PluginInfoReportsWhatThePluginRegistered) {
  dispatch::PluginInfo info = PluginHost::instance().load(plugin_file("test_ops"));
  EXPECT_EQ(info.name, "test_ops");
  EXPECT_EQ(info.version, "1.2.3");
  EXPECT_EQ(info.abi_major, 1u);
  EXPECT_EQ(info.ops_defined, 3);
  EXPECT_EQ(info.kernels, 3);
  EXPECT_EQ(info.fallbacks, 1);
  EXPECT_EQ(info.attributes.at("purpose"), "tests");
  EXPECT_EQ(std::filesystem::path(info.file).filename(), "libloom_plugin_test_ops.so");
  // Loading the same file again is a no-op returning the same plugin.
  EXPECT_EQ(PluginHost::instance().load(plugin_file("test_ops")).name, "test_ops");
  EXPECT_EQ(PluginHost::instance().plugins().size(), 1u);
  // With other options it is refused: the plugin read its options when it initialised.
  expect_error(
      [] {
        PluginHost::instance().load(plugin_file("test_ops"), {{"mode", "fast"}});
      },
      "plugin-host",
      {"plugin 'test_ops'", "is already loaded with options {}, not {mode: fast}",
       "unload it before loading it with other options"});
  EXPECT_EQ(PluginHost::instance().plugins().size(), 1u);
  // An optional manifest entry is not skipped over it either: the manifest is wrong.
  expect_error(
      [] {
        PluginHost::instance().load_manifest(dispatch::parse_manifest(
            "plugins { path: \"" + plugin_file("test_ops") +
                "\" optional: true options { key: \"mode\" value: \"fast\" } }\n",
            "<test>"));
      },
      "plugin-host", {"optional plugin", "is already loaded with options {}, not {mode: fast}"});
}

TEST(PluginLoading, KernelExceptionsAndErrorsBecomeLoomErrorsNamingTheOp) {
  PluginHost::instance().load(plugin_file("test_throwing"));
  Dispatcher& d = Dispatcher::instance();
  Tensor t = cpu_tensor({2});
  LoomValue args[] = {dispatch::box(t)};
  LoomValue ret[1];
  expect_error([&] { d.call(d.find_defined("test_throwing::throws"), args, 1, ret, 1); },
               "test_throwing::throws",
               {"boom from a C++ exception", "kernel for CPU from plugin 'test_throwing'"});
  expect_error([&] { d.call(d.find_defined("test_throwing::returns_error"), args, 1, ret, 1); },
               "test_throwing::returns_error",
               {"expected a positive value, found -1", "plugin 'test_throwing'"});
  expect_error([&] { d.call(d.find_defined("test_throwing::returns_nothing"), args, 1, ret, 1); },
               "test_throwing::returns_nothing", {"returned None for return 0", "Tensor"});
  // The process and the plugin keep working after errors.
  EXPECT_TRUE(PluginHost::instance().is_loaded("test_throwing"));
}

TEST(PluginLoading, FallbackInAPluginRedispatchesThroughTheAbi) {
  PluginHost::instance().load(plugin_file("test_ops"));
  Dispatcher& d = Dispatcher::instance();
  auto value = d.find_defined("test::value");
  auto counter = d.find_defined("test::tracer_calls");
  Tensor t = cpu_tensor({1});
  auto tracer_calls = [&] {
    LoomValue ret[1];
    d.call(counter, nullptr, 0, ret, 1);
    return ret[0].u.i;
  };
  int64_t before = tracer_calls();
  {
    dispatch::IncludeDispatchKeyGuard tracing(DispatchKey::Tracer);
    EXPECT_EQ(call_int(value, t), 1);
    EXPECT_EQ(call_int(value, t), 1);
  }
  EXPECT_EQ(tracer_calls(), before + 2);  // both traced calls went through the fallback
  EXPECT_EQ(call_int(value, t), 1);
  EXPECT_EQ(tracer_calls(), before + 2);
}

// loom::memory_stats through a device plugin's "loom.device_memory.<type>" table: the
// test device counts its allocations; the refusals name the device and the reason.
TEST(PluginLoading, MemoryStatsComeFromTheDevicePluginsTable) {
  PluginHost& host = PluginHost::instance();
  if (!host.is_loaded("test_device")) host.load(plugin_file("test_device"));
  const Device dev = parse_device("testdev:0");
  reset_peak_memory_stats(dev);
  const MemoryStats before = memory_stats(dev);
  {
    Tensor t = empty(std::vector<int64_t>{1000}, ScalarType::Float32, dev);
    const MemoryStats during = memory_stats(dev);
    EXPECT_EQ(during.allocated_bytes, before.allocated_bytes + 4000);
    EXPECT_EQ(during.allocations, before.allocations + 1);
    EXPECT_GE(during.peak_allocated_bytes, during.allocated_bytes);
  }
  const MemoryStats after = memory_stats(dev);
  EXPECT_EQ(after.allocated_bytes, before.allocated_bytes);
  EXPECT_EQ(after.peak_allocated_bytes, before.allocated_bytes + 4000);  // the peak stays
  reset_peak_memory_stats(dev);
  EXPECT_EQ(memory_stats(dev).peak_allocated_bytes, after.allocated_bytes);
  empty_cache(dev);
  expect_error([&] { memory_stats(Device{dev.type, 3}); }, "device", {"testdev:3"});
  expect_error([&] { memory_stats(parse_device("cpu")); }, "device",
               {"cpu has no caching allocator to report on"});
  host.unload("test_device");
}

// ABI 1.7's device side: a wait's INVALID_ARGUMENT "[op] ..." is raised as that op's error
// (bad input a kernel found after the op returned), and a copy to a device whose plugin
// releases the source on return is not waited for, while a copy to the host is.
TEST(PluginLoading, AWaitRaisesTheFindingOfAnEarlierKernelAsItsOpsError) {
  PluginHost& host = PluginHost::instance();
  if (!host.is_loaded("test_device")) host.load(plugin_file("test_device"));
  const Device dev = parse_device("testdev:0");
  {
    const DeviceRuntime* runtime = find_device_runtime(dev.type);
    ASSERT_NE(runtime, nullptr);
    Tensor t = empty(std::vector<int64_t>{4}, ScalarType::Float32, dev);
    auto fill = [&](double value) {
      LoomValue args[] = {dispatch::box(t), dispatch::box(value)};
      LoomValue ret[1];
      Dispatcher::instance().call(Dispatcher::instance().find_defined("loom::fill_.Scalar"), args,
                                  2, ret, 1);
      (void)dispatch::unbox_tensor(ret[0], "test");
    };
    fill(13.0);  // returns: the "kernel" flags its input for later
    const float source[4] = {1, 2, 3, 4};
    runtime->copy(CopyKind::HostToDevice, 0, t.data<float>(), source, sizeof(source));  // no wait
    EXPECT_EQ(t.data<float>()[3], 4.0f);
    float back[4] = {};
    expect_error([&] { runtime->copy(CopyKind::DeviceToHost, 0, back, t.data<float>(), 16); },
                 "loom::fill_", {"value 13 flagged by the kernel", "raised by the next wait"});
    EXPECT_EQ(back[3], 4.0f);  // the copy itself was done
    runtime->synchronize(0);   // reported once
    fill(13.0);
    expect_error([&] { synchronize(dev); }, "loom::fill_", {"value 13 flagged by the kernel"});
    fill(2.0);
    synchronize(dev);
  }
  host.unload("test_device");
}

TEST(PluginLoading, UnloadIsRefusedWhileItsTensorsLiveAndSucceedsAfter) {
  PluginHost& host = PluginHost::instance();
  host.load(plugin_file("test_device"));
  DeviceType type = DeviceTypeRegistry::instance().find("testdev");
  ASSERT_GE(type, 0);
  {
    Tensor t = empty(std::vector<int64_t>{4}, ScalarType::Float32, Device{type, 0});
    LoomValue args[] = {dispatch::box(t), dispatch::box(2.5)};
    LoomValue ret[1];
    Dispatcher::instance().call(Dispatcher::instance().find_defined("loom::fill_.Scalar"), args, 2,
                                ret, 1);
    Tensor same = dispatch::unbox_tensor(ret[0], "test");
    EXPECT_TRUE(same.is_alias_of(t));
    EXPECT_EQ(t.data<float>()[3], 2.5f);
    expect_error([&] { host.unload("test_device"); }, "plugin-host",
                 {"cannot unload plugin 'test_device'", "1 storage(s)", "still alive"});
    EXPECT_TRUE(host.is_loaded("test_device"));
  }
  host.unload("test_device");
  EXPECT_FALSE(host.is_loaded("test_device"));
  EXPECT_EQ(DeviceTypeRegistry::instance().find("testdev"), -1);
  expect_error([&] { host.unload("test_device"); }, "plugin-host", {"no plugin of that name"});
  // It can be loaded again after unloading.
  host.load(plugin_file("test_device"));
  EXPECT_GE(DeviceTypeRegistry::instance().find("testdev"), 0);
}

TEST(PluginLoading, ManifestRequiredFailureStopsOptionalFailureIsSkipped) {
  std::string text = "search_dirs: \"" + kDir +
                     "\"\n"
                     "plugins { name: \"test_ops\" }\n"
                     "plugins { name: \"test_init_fails\" optional: true }\n"
                     "plugins { path: \"" +
                     kDir + "/libloom_plugin_missing.so\" optional: true }\n";
  loom::Runtime runtime = loom::Runtime::load(dispatch::parse_manifest(text, "<test>"));
  EXPECT_EQ(runtime.report().loaded, std::vector<std::string>{"test_ops"});
  ASSERT_EQ(runtime.report().skipped.size(), 2u);
  EXPECT_EQ(runtime.report().skipped[0].first, "test_init_fails");
  EXPECT_NE(runtime.report().skipped[0].second.find("no device found"), std::string::npos);
  EXPECT_NE(runtime.report().skipped[1].second.find("does not exist"), std::string::npos);

  std::string required = "search_dirs: \"" + kDir + "\"\nplugins { name: \"test_abi_major\" }\n";
  expect_error(
      [&] { loom::Runtime::load(dispatch::parse_manifest(required, "deploy.textproto")); },
      "plugin-host",
      {"required plugin 'test_abi_major'", "deploy.textproto", "major version must match"});
}

TEST(PluginLoading, StrippedPluginsLoad) {
  dispatch::PluginInfo info =
      PluginHost::instance().load(kDir + "/stripped/libloom_plugin_test_ops.so");
  EXPECT_EQ(info.name, "test_ops");
  EXPECT_EQ(info.kernels, 3);
}

TEST(PluginLoading, LoadAndUnloadAreRefusedFromInsideAnOpCall) {
  Dispatcher& d = Dispatcher::instance();
  dispatch::Registration def = d.define("tt_host::loads_plugin(Tensor self) -> int");
  auto op = d.find_defined("tt_host::loads_plugin");
  KernelBody body = [](const LoomKernelCall* call) {
    PluginHost::instance().load(plugin_file("test_ops"));
  };
  dispatch::Registration k = d.register_kernel(op, DispatchKey::CPU, body_kernel(body));
  expect_error([&] { call_int(op, cpu_tensor({1})); }, "plugin-host", {"from inside an op call"});
  EXPECT_FALSE(PluginHost::instance().is_loaded("test_ops"));
  PluginHost::instance().load(plugin_file("test_ops"));
  KernelBody unload_body = [](const LoomKernelCall* call) {
    PluginHost::instance().unload("test_ops");
  };
  dispatch::Registration k2 = d.register_kernel(op, DispatchKey::CPU, body_kernel(unload_body));
  expect_error([&] { call_int(op, cpu_tensor({1})); }, "plugin-host", {"from inside an op call"});
  EXPECT_TRUE(PluginHost::instance().is_loaded("test_ops"));
}

TEST(PluginLoading, DefaultManifestLoadsTheCpuPluginThroughLoomPluginPath) {
  setenv("LOOM_PLUGIN_PATH", LOOM_PLUGIN_DIR, 1);
  loom::Runtime runtime = loom::Runtime::load_default();
  unsetenv("LOOM_PLUGIN_PATH");
  EXPECT_EQ(runtime.manifest().source, "<embedded default>");
  EXPECT_TRUE(PluginHost::instance().is_loaded("cpu"));
}

}  // namespace
}  // namespace loom::testing
