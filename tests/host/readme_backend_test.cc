// The README's plugin example (sdk/examples/readme_backend/my_backend.cc), loaded beside
// the cpu plugin as the README says: it replaces the cpu plugin's mul.out and must give
// the same values on broadcast, transposed and integer inputs, refuse the dtypes it does
// not claim, and be the very code the README shows.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "../dispatcher/dispatch_test_util.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/plugin_host.h"
#include "loom/loom.h"
#include "loom/ops/standard_library.h"

namespace loom::testing {
namespace {

using dispatch::PluginHost;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class ReadmeBackend : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ops::load_standard_library();
    PluginHost::instance().load(std::string(LOOM_PLUGIN_DIR) + "/libloom_plugin_cpu.so");
    PluginHost::instance().load(std::string(LOOM_TEST_PLUGIN_DIR) +
                                "/libloom_plugin_my_backend.so");
  }
};

TEST_F(ReadmeBackend, IsTheCodeTheReadmeShows) {
  const std::string source = read_file(LOOM_README_BACKEND_SOURCE);
  ASSERT_FALSE(source.empty());
  EXPECT_NE(read_file(LOOM_README).find("```cpp\n" + source + "```"), std::string::npos)
      << "README.md's plugin example differs from " << LOOM_README_BACKEND_SOURCE;
}

TEST_F(ReadmeBackend, MultipliesBroadcastTransposedAndIntegerInputs) {
  // arange(6).view(2, 3) * tensor([10, 20, 30]): the row broadcast (stride 0)
  Tensor a = arange(6, TensorOptions().dtype(ScalarType::Float32)).view({2, 3});
  Tensor b = arange(10, 40, 10, TensorOptions().dtype(ScalarType::Float32));
  Tensor c = mul(a, b);
  const float expected[] = {0, 20, 60, 30, 80, 150};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(c.data<float>()[i], expected[i]) << i;
  // a transposed input: a.t() * a.t() is (a * a).t()
  Tensor t = mul(a.t(), a.t()).contiguous();
  const float squares_t[] = {0, 9, 1, 16, 4, 25};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(t.data<float>()[i], squares_t[i]) << i;
  // int64 and float64 go through the same kernel
  Tensor i64 = mul(arange(4), arange(4));
  EXPECT_EQ(i64.data<int64_t>()[3], 9);
  Tensor f64 = full({3}, 1.5, TensorOptions().dtype(ScalarType::Float64)) * 2.0;
  EXPECT_EQ(f64.data<double>()[2], 3.0);
}

// Strided, sliced, permuted, 0-dim and empty inputs give what the contiguous copies give
// (both through the example's kernel, which has replaced the cpu plugin's for mul.out).
TEST_F(ReadmeBackend, StridedLayoutsMatchContiguousOnes) {
  dispatch::Dispatcher& d = dispatch::Dispatcher::instance();
  for (const dispatch::TableRow& row : d.dump_table(d.find_defined("loom::mul.out"))) {
    if (row.key == DispatchKey::CPU) {
      EXPECT_EQ(row.provider, "my_backend");
    }
  }
  Tensor x = arange(60, TensorOptions().dtype(ScalarType::Float64)).view({3, 4, 5});
  Tensor y = arange(20, TensorOptions().dtype(ScalarType::Float64)).view({5, 4});
  std::vector<std::pair<Tensor, Tensor>> cases = {
      {x.permute({2, 0, 1}), y.unsqueeze(1)},         // permuted, broadcast middle dim
      {x.slice(2, 1, 5, 2), x.slice(2, 0, 4, 2)},     // stepped slices
      {x.select(1, 2), y.t().slice(0, 1, 4)},         // a selected plane, transposed
      {x.select(0, 1).select(0, 1).select(0, 1), y},  // 0-dim times a matrix
      {x.narrow(1, 0, 0), x.narrow(1, 1, 0)},         // empty
  };
  for (auto& [a, b] : cases) {
    Tensor strided = mul(a, b);
    Tensor dense = mul(a.contiguous(), b.contiguous());
    ASSERT_EQ(strided.numel(), dense.numel());
    Tensor s = strided.contiguous();
    for (int64_t i = 0; i < dense.numel(); ++i) {
      EXPECT_EQ(s.data<double>()[i], dense.data<double>()[i]) << a.describe() << " element " << i;
    }
  }
}

TEST_F(ReadmeBackend, RefusesTheDtypesItDoesNotClaim) {
  Tensor h = ones({2}, TensorOptions().dtype(ScalarType::Float16));
  expect_error([&] { mul(h, h); }, "loom::mul.Tensor",
               {"backend CPU does not support dtype float16 (claims: bool, uint8, int8, int16, "
                "int32, int64, float32, float64)"});
}

}  // namespace
}  // namespace loom::testing
