// The seed CPU plugin end to end through the dispatcher: results on contiguous,
// broadcast and strided inputs, and its errors.
#include <gtest/gtest.h>

#include "../dispatcher/dispatch_test_util.h"
#include "loom/dispatcher/boxing.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/plugin_host.h"
#include "loom/loom.h"
#include "loom/ops/standard_library.h"

namespace loom::testing {
namespace {

using dispatch::Dispatcher;

class CpuPlugin : public ::testing::Test {
 protected:
  void SetUp() override {
    ops::load_standard_library();
    dispatch::PluginHost::instance().load(std::string(LOOM_PLUGIN_DIR) + "/libloom_plugin_cpu.so");
  }
  static Tensor arange(std::vector<int64_t> sizes) {
    Tensor t = empty(sizes, ScalarType::Float32);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
    return t;
  }
  static Tensor add(const Tensor& a, const Tensor& b, double alpha = 1.0) {
    LoomValue args[] = {dispatch::box(a), dispatch::box(b), dispatch::box(alpha)};
    LoomValue ret[1];
    Dispatcher::instance().call(Dispatcher::instance().find_defined("loom::add.Tensor"), args, 3,
                                ret, 1);
    return dispatch::unbox_tensor(ret[0], "test");
  }
};

TEST_F(CpuPlugin, AddBroadcastsAndScales) {
  Tensor a = arange({2, 3});
  Tensor b = arange({3});
  Tensor c = add(a, b, 10.0);
  ASSERT_EQ(std::vector<int64_t>(c.sizes().begin(), c.sizes().end()), (std::vector<int64_t>{2, 3}));
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(c.data<float>()[i * 3 + j], (i * 3 + j) + 10.0f * j);
  }
}

TEST_F(CpuPlugin, AddReadsStridedViews) {
  Tensor a = arange({2, 3});
  Tensor at = a.t();  // [3, 2], strides [1, 3]
  Tensor c = add(at, at);
  // the result is laid out as its inputs (Note [Layouts of new results])
  ASSERT_EQ(std::vector<int64_t>(c.strides().begin(), c.strides().end()),
            (std::vector<int64_t>{1, 3}));
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 2; ++j) EXPECT_EQ(c.data<float>()[i + j * 3], 2.0f * (j * 3 + i));
  }
  Tensor mixed = add(at, arange({3, 2}));  // the first input decides over a row-major one
  EXPECT_EQ(std::vector<int64_t>(mixed.strides().begin(), mixed.strides().end()),
            (std::vector<int64_t>{1, 3}));
}

TEST_F(CpuPlugin, SumFillAndCopy) {
  Dispatcher& d = Dispatcher::instance();
  Tensor a = arange({4});
  LoomValue sum_args[] = {dispatch::box(a), dispatch::none()};
  LoomValue ret[1];
  d.call(d.find_defined("loom::sum"), sum_args, 2, ret, 1);
  EXPECT_EQ(*dispatch::unbox_tensor(ret[0], "test").data<float>(), 6.0f);
  Tensor dst = empty(std::vector<int64_t>{2, 2}, ScalarType::Float64);
  LoomValue fill_args[] = {dispatch::box(dst), dispatch::box(int64_t{7})};
  d.call(d.find_defined("loom::fill_.Scalar"), fill_args, 2, ret, 1);
  dispatch::release_value(ret[0]);
  EXPECT_EQ(dst.data<double>()[3], 7.0);
  Tensor row = arange({2});
  LoomValue copy_args[] = {dispatch::box(dst), dispatch::box(row), dispatch::box(false)};
  d.call(d.find_defined("loom::copy_"), copy_args, 3, ret, 1);
  dispatch::release_value(ret[0]);
  EXPECT_EQ(dst.data<double>()[0], 0.0);
  EXPECT_EQ(dst.data<double>()[3], 1.0);  // broadcast row into both rows
}

TEST_F(CpuPlugin, ErrorsNameTheOp) {
  Tensor a = arange({2, 3});
  expect_error([&] { add(a, arange({4})); }, "loom::add.Tensor",
               {"shapes [2, 3] and [4] cannot be broadcast"});
  // Mixed dtypes are promoted by the core, so the kernel computes in float64.
  Tensor d = empty(std::vector<int64_t>{3}, ScalarType::Float64);
  for (int i = 0; i < 3; ++i) d.data<double>()[i] = 0.5;
  EXPECT_EQ(add(arange({3}), d).dtype(), ScalarType::Float64);
  Tensor b = empty(std::vector<int64_t>{2}, ScalarType::Bool);
  LoomValue args[] = {dispatch::box(b), dispatch::box(b), dispatch::box(int64_t{1})};
  LoomValue ret[1];
  expect_error(
      [&] {
        Dispatcher::instance().call(Dispatcher::instance().find_defined("loom::sub.Tensor"), args,
                                    3, ret, 1);
      },
      "loom::sub.Tensor", {"subtraction of two bool tensors is not supported"});
}

}  // namespace
}  // namespace loom::testing
