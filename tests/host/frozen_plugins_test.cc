// Device backends built for earlier ABI minors, whose binaries must keep working: each
// frozen plugin moves tensors, computes as the CPU does and gets clear errors on today's
// host.
//
// Note [Frozen plugins]
// ~~~~~~~~~~~~~~~~~~~~~
// tests/plugins/frozen_abi/<minor>/ holds, for each released ABI minor, the headers that
// minor shipped (loom/plugin.h and the C++ helpers of that release) and acme_plugin.c or
// .cc, a device backend ("acme_1_<minor>") written the way that minor's plugin guide
// taught: 1.0 in plain C and 1.1 on the C++ helpers, both moving tensors in their own
// copy_ kernel with no copy in their device interface; 1.8 on the SDK's host-memory
// device, whose interface copies. Their sources and headers are never edited: a change
// that breaks one breaks a vendor's binary. Each is checked here (values against the CPU,
// strided inputs and outputs, in-place, out=, C++ numbers, promotion where its copy_
// converts dtypes, copies between its devices) and by `loom conform` against the report
// committed beside it (ctest conform_frozen_abi_<minor>). A new minor adds its own: copy
// the released sdk/include/loom/plugin.h and every helper its plugin includes, directly
// or through another helper, into frozen_abi/<minor>/loom/ (a helper left out is taken
// from today's SDK, as 1.8's plugin.hpp was until today's needed a newer kernel.hpp), write
// acme_plugin.cc the way that minor's guide teaches, add the minor to LOOM_FROZEN_MINORS
// (tests/plugins/CMakeLists.txt) and to kFrozen below, and commit its conform report as
// frozen_abi/<minor>/conform-baseline.json.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "../dispatcher/dispatch_test_util.h"
#include "loom/core/device.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/plugin_host.h"
#include "loom/loom.h"
#include "loom/random.h"

namespace loom::testing {
namespace {

using dispatch::PluginHost;

struct Frozen {
  const char* name;      // plugin and device type
  bool converts_dtypes;  // its copy_ casts between dtypes on the device
  bool has_uniform;      // a random kernel on the 1.1 generator service
};

void PrintTo(const Frozen& frozen, std::ostream* os) {
  *os << frozen.name;
}

constexpr Frozen kFrozen[] = {
    {"acme_1_0", false, false},
    {"acme_1_1", true, true},
    {"acme_1_8", false, false},
};

void load_if_needed(const std::string& name, const std::string& dir) {
  if (!PluginHost::instance().is_loaded(name)) {
    PluginHost::instance().load(dir + "/libloom_plugin_" + name + ".so");
  }
}

// A float32 CPU tensor of `shape` with distinct, exactly representable values.
Tensor host_values(std::vector<int64_t> shape, float scale = 0.25f, float shift = -1.5f) {
  Tensor t = empty(shape, ScalarType::Float32);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<float>()[i] = shift + scale * static_cast<float>(i);
  return t;
}

void expect_same_values(const Tensor& actual, const Tensor& expected) {
  ASSERT_EQ(actual.device().type, kCPU);
  ASSERT_TRUE(std::equal(actual.sizes().begin(), actual.sizes().end(), expected.sizes().begin(),
                         expected.sizes().end()));
  Tensor a = actual.to(ScalarType::Float64).contiguous();
  Tensor e = expected.to(ScalarType::Float64).contiguous();
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.data<double>()[i], y = e.data<double>()[i];
    EXPECT_NEAR(x, y, 1e-6 * (1 + std::abs(y))) << "element " << i;
  }
}

class FrozenPlugin : public ::testing::TestWithParam<Frozen> {
 protected:
  void SetUp() override {
    load_if_needed("cpu", LOOM_PLUGIN_DIR);
    load_if_needed(GetParam().name, LOOM_TEST_PLUGIN_DIR);
    device_ = parse_device(std::string(GetParam().name) + ":0");
  }
  void TearDown() override { PluginHost::instance().unload(GetParam().name); }
  Device device_;
};

TEST_P(FrozenPlugin, MovesTensorsBothWaysInAnyLayout) {
  Tensor host = host_values({3, 4});
  Tensor on_device = host.to(device_);
  EXPECT_EQ(on_device.device(), device_);
  expect_same_values(on_device.to("cpu"), host);
  // a transposed source, to and from the device
  Tensor transposed = host.t();
  expect_same_values(transposed.to(device_).to("cpu"), transposed);
  expect_same_values(on_device.t().to("cpu"), transposed);
  // a sliced device tensor into a strided host destination
  Tensor column = empty({4, 3}, TensorOptions().dtype(ScalarType::Float32)).t();
  column.copy_(on_device);
  expect_same_values(column, host);
  Tensor rows = on_device.slice(0, 1, 3);
  expect_same_values(rows.to("cpu"), host.slice(0, 1, 3));
  // a source broadcast to the destination
  Tensor target = empty({3, 4}, TensorOptions().dtype(ScalarType::Float32).device(device_));
  target.copy_(host_values({4}));
  expect_same_values(target.to("cpu"), host_values({4}).expand({3, 4}));
}

TEST_P(FrozenPlugin, CopiesBetweenItsDevices) {
  Device second = parse_device(std::string(GetParam().name) + ":1");
  Tensor host = host_values({5});
  Tensor there = host.to(device_).to(second);
  EXPECT_EQ(there.device(), second);
  expect_same_values(there.to("cpu"), host);
}

TEST_P(FrozenPlugin, ComputesAsTheCpuDoes) {
  Tensor a = host_values({3, 4}), b = host_values({3, 4}, 0.5f, 2.0f), row = host_values({4});
  Tensor da = a.to(device_), db = b.to(device_), drow = row.to(device_);
  expect_same_values(add(da, db, 2).to("cpu"), add(a, b, 2));
  expect_same_values((da * db).to("cpu"), a * b);
  expect_same_values((da + drow).to("cpu"), a + row);              // broadcast
  expect_same_values((da + 2.5).to("cpu"), a + 2.5);               // a C++ number
  expect_same_values((da.t() * db.t()).to("cpu"), a.t() * b.t());  // strided inputs
  Tensor out = empty({3, 4}, TensorOptions().dtype(ScalarType::Float32).device(device_));
  add_out(out, da, db);  // out=
  expect_same_values(out.to("cpu"), a + b);
  Tensor in_place = a.to(device_);
  in_place.add_(db, 0.5);
  expect_same_values(in_place.to("cpu"), add(a, b, 0.5));
  Tensor filled = empty({2, 3}, TensorOptions().dtype(ScalarType::Float32).device(device_));
  filled.fill_(1.75);
  expect_same_values(filled.to("cpu"), full({2, 3}, 1.75));
}

TEST_P(FrozenPlugin, ConvertsDtypesAsItsCopyDoes) {
  Tensor doubles = host_values({6}).to(ScalarType::Float64);
  if (!GetParam().converts_dtypes && std::string(GetParam().name) == "acme_1_0") {
    // float32 only: refused as its kernel's dtype claim says, not a crash
    expect_error([&] { doubles.to(device_); }, "loom::to.device",
                 {"does not support dtype float64", "claims: float32"});
    return;
  }
  // to a float32 device tensor: converted on the host or by the plugin's copy_
  Tensor narrowed = doubles.to(device_, ScalarType::Float32);
  EXPECT_EQ(narrowed.dtype(), ScalarType::Float32);
  expect_same_values(narrowed.to("cpu"), doubles);
  if (!GetParam().converts_dtypes) return;
  // promotion on the device: the core casts int64 to float32 through copy_ there
  Tensor ints = arange(6).to(device_);
  EXPECT_EQ(ints.dtype(), ScalarType::Int64);
  Tensor mixed = ints + host_values({6}).to(device_);
  EXPECT_EQ(mixed.dtype(), ScalarType::Float32);
  expect_same_values(mixed.to("cpu"), arange(6) + host_values({6}));
}

TEST_P(FrozenPlugin, DrawsTheCpusRandomNumbers) {
  if (!GetParam().has_uniform) GTEST_SKIP() << GetParam().name << " has no random kernel";
  manual_seed(11);
  Tensor on_device = empty({64}, TensorOptions().dtype(ScalarType::Float32).device(device_));
  on_device.uniform_(-2, 3);
  manual_seed(11);
  Tensor on_cpu = empty({64}, TensorOptions().dtype(ScalarType::Float32));
  on_cpu.uniform_(-2, 3);
  expect_same_values(on_device.to("cpu"), on_cpu);
}

INSTANTIATE_TEST_SUITE_P(Minors, FrozenPlugin, ::testing::ValuesIn(kFrozen),
                         [](const ::testing::TestParamInfo<Frozen>& info) {
                           return std::string(info.param.name);
                         });

// A device type with neither an interface copy nor a copy_ kernel: its tensors cannot
// move, and the error says what the plugin must provide.
TEST(DeviceWithoutCopies, RefusesToMoveTensorsNamingWhatIsMissing) {
  load_if_needed("cpu", LOOM_PLUGIN_DIR);
  load_if_needed("test_no_copy", LOOM_TEST_PLUGIN_DIR);
  {
    Tensor there =
        empty({2}, TensorOptions().dtype(ScalarType::Float32).device(parse_device("no_copy")));
    const std::vector<std::string> parts = {
        "device type 'no_copy' of plugin 'test_no_copy' has no copy in its device interface "
        "and no loom::copy_ kernel",
        "LoomDeviceInterface::copy", "register a loom::copy_ kernel for backend 'no_copy'"};
    expect_error([&] { there.to("cpu"); }, "loom::to.device", {parts[0], parts[1], parts[2]});
    expect_error([&] { host_values({2}).to(parse_device("no_copy")); }, "loom::to.device",
                 {parts[0], parts[1], parts[2]});
  }
  PluginHost::instance().unload("test_no_copy");
}

}  // namespace
}  // namespace loom::testing
