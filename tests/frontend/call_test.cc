// Calling ops by name (loom/call.h): overload choice, positional / keyword / default
// binding, conversions, returns of every kind, an op the typed API does not know, and
// the errors for each way a call can be wrong.
#include <gtest/gtest.h>

#include <cstring>

#include "frontend_test_util.h"
#include "loom/call.h"
#include "loom/dispatcher/boxing.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/loom.h"

namespace loom {
namespace {

using test::expect_error;
using test::values;

class CallByName : public test::LoadedRuntimeTest {};

std::vector<int64_t> shape(const Tensor& t) {
  return std::vector<int64_t>(t.sizes().begin(), t.sizes().end());
}

TEST_F(CallByName, OverloadIsChosenByTheArguments) {
  Tensor a = tensor({1.0, 2.0});
  Tensor b = tensor({10.0, 20.0});
  EXPECT_EQ(values(call("add", {a, b})[0].to_tensor()), (std::vector<double>{11, 22}));
  EXPECT_EQ(values(call("loom::add", {a, b}, {{"alpha", 2}})[0].to_tensor()),
            (std::vector<double>{21, 42}));
  // A number for a Tensor argument is a wrapped scalar: it does not promote a float
  // tensor to float64.
  Tensor a32 = a.to(ScalarType::Float32);
  Tensor sum = call("add", {a32, 3.5})[0].to_tensor();
  EXPECT_EQ(sum.dtype(), ScalarType::Float32);
  EXPECT_EQ(values(sum), (std::vector<double>{4.5, 5.5}));
  // An overload that takes the number as it is wins over wrapping: max.dim, not max.other.
  EXPECT_EQ(call("max", {a.view({1, 2}), 1}).size(), 2u);
  // `out=` picks the out variant, which writes into and returns the given tensor.
  Tensor out = empty({2});
  std::vector<Value> r = call("add", {a, b}, {{"out", out}});
  EXPECT_EQ(r[0].to_tensor().impl(), out.impl());
  EXPECT_EQ(values(out), (std::vector<double>{11, 22}));
  // An exact overload name calls exactly that op.
  EXPECT_EQ(values(call("loom::mul.Tensor", {a, b})[0].to_tensor()), (std::vector<double>{10, 40}));
}

TEST_F(CallByName, DefaultsKeywordsAndConversions) {
  Tensor x = arange(6, TensorOptions().dtype(ScalarType::Float32)).view({2, 3});
  // int[1] dim from one int, keepdim by keyword, dtype by name.
  Tensor s =
      call("sum.dim_IntList", {x, 1}, {{"keepdim", true}, {"dtype", "float64"}})[0].to_tensor();
  EXPECT_EQ(shape(s), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(s.dtype(), ScalarType::Float64);
  EXPECT_EQ(values(s), (std::vector<double>{3, 12}));
  // Defaults fill what is not given: keepdim=False, dtype=None.
  Tensor d = call("sum.dim_IntList", {x, std::vector<int64_t>{0}})[0].to_tensor();
  EXPECT_EQ(shape(d), (std::vector<int64_t>{3}));
  EXPECT_EQ(values(d), (std::vector<double>{3, 5, 7}));
  // An int for a float argument; None for an optional one.
  Tensor c = call("clamp", {x}, {{"min", 1}, {"max", Value()}})[0].to_tensor();
  EXPECT_EQ(values(c), (std::vector<double>{1, 1, 2, 3, 4, 5}));
  // A Scalar from a C++ Scalar.
  EXPECT_EQ(values(call("mul", {x, Scalar(0.5)})[0].to_tensor()),
            (std::vector<double>{0, 0.5, 1, 1.5, 2, 2.5}));
}

TEST_F(CallByName, ReturnsTuplesAndLists) {
  Tensor x = tensor({3.0, 1.0, 2.0, 5.0});
  std::vector<Value> r = call("max", {x.view({2, 2}), 1});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(values(r[0].to_tensor()), (std::vector<double>{3, 5}));
  EXPECT_EQ(values(r[1].to_tensor()), (std::vector<double>{0, 1}));
  std::vector<Value> parts = call("split", {x, 2});
  ASSERT_EQ(parts.size(), 1u);
  ASSERT_EQ(parts[0].to_tensor_list().size(), 2u);
  EXPECT_EQ(values(parts[0].to_tensor_list()[1]), (std::vector<double>{2, 5}));
  // A tensor list argument.
  Tensor cat = call("cat", {std::vector<Tensor>{x, x}}, {{"dim", 0}})[0].to_tensor();
  EXPECT_EQ(cat.numel(), 8);
}

// An op the typed API knows nothing about: defined by the app, with a kernel that
// reports what it was given.
LoomError* describe_kernel(void*, const LoomKernelCall* call) {
  const LoomValue* a = call->args;
  int64_t window_sum = 0;
  for (uint32_t i = 0; i < a[1].length; ++i) window_sum += a[1].u.ints[i];
  call->returns[0] = dispatch::box(window_sum * 100 + static_cast<int64_t>(a[1].length));
  call->returns[1] = dispatch::box(a[2].u.d);
  call->returns[2] = dispatch::box(std::strcmp(a[3].u.str, "fast") == 0);
  return nullptr;
}

TEST_F(CallByName, AppDefinedOpWithDefaults) {
  dispatch::Dispatcher& disp = dispatch::Dispatcher::instance();
  dispatch::OperatorHandle op;
  dispatch::Registration def = disp.define(
      "app::describe(Tensor self, int[2] window=3, *, float scale=0.5, str mode=\"slow\") "
      "-> (int, float, bool)",
      dispatch::app_registrant(), &op);
  dispatch::Registration kernel =
      disp.register_kernel(op, DispatchKey::CPU, {describe_kernel, nullptr});
  Tensor t = zeros({1});
  std::vector<Value> r = call("app::describe", {t});
  EXPECT_EQ(r[0].to_int(), 602);  // window=3 repeated twice
  EXPECT_EQ(r[1].to_double(), 0.5);
  EXPECT_FALSE(r[2].to_bool());
  r = call("app::describe", {t, std::vector<int64_t>{1, 4}}, {{"mode", "fast"}, {"scale", 2}});
  EXPECT_EQ(r[0].to_int(), 502);
  EXPECT_EQ(r[1].to_double(), 2.0);
  EXPECT_TRUE(r[2].to_bool());
  EXPECT_EQ(schemas("app::describe"),
            (std::vector<std::string>{"app::describe(Tensor self, int[2] window=[3, 3], *, float "
                                      "scale=0.5, str mode=\"slow\") -> (int, float, bool)"}));
}

TEST_F(CallByName, SchemasListsOverloadsInTheOrderTried) {
  std::vector<std::string> add = schemas("add");
  ASSERT_EQ(add.size(), 3u);
  EXPECT_EQ(add[0].rfind("loom::add.Scalar(", 0), 0u);
  EXPECT_EQ(add[1].rfind("loom::add.Tensor(", 0), 0u);
  EXPECT_EQ(add[2].rfind("loom::add.out(", 0), 0u);
  EXPECT_TRUE(schemas("no_such_op").empty());
  EXPECT_EQ(schemas("loom::add.Tensor").size(), 1u);
}

TEST_F(CallByName, ErrorsNameTheOpAndTheArgument) {
  Tensor a = tensor({1.0, 2.0});
  expect_error([&] { call("no_such_op", {a}); }, "loom::call",
               {"unknown operator 'loom::no_such_op'"});
  expect_error(
      [&] {
        call("loom::add.Tensor", {a, "x"});
      },
      "loom::add.Tensor", {"argument 'other' expects Tensor, found str"});
  expect_error([&] { call("loom::add.Tensor", {a}); }, "loom::add.Tensor",
               {"missing argument 'other'"});
  expect_error(
      [&] {
        call("loom::add.Tensor", {a, a, 1});
      },
      "loom::add.Tensor", {"takes at most 2 positional arguments, found 3"});
  expect_error(
      [&] {
        call("loom::add.Tensor", {a, a}, {{"beta", 1}});
      },
      "loom::add.Tensor", {"unexpected keyword argument 'beta'"});
  expect_error(
      [&] {
        call("loom::add.Tensor", {a, a}, {{"other", a}});
      },
      "loom::add.Tensor", {"argument 'other' was given twice"});
  expect_error(
      [&] {
        call("loom::add.Tensor", {a, Tensor()});
      },
      "loom::add.Tensor", {"found an undefined Tensor"});
  // Every overload failing lists each one's reason.
  expect_error(
      [&] {
        call("add", {a, "x"});
      },
      "loom::add", {"no overload accepts (Tensor, str)", "loom::add.Tensor(", "loom::add.out("});
  // Kernel errors pass through unchanged.
  expect_error([&] { call("mm", {a, a}); }, "loom::mm", {"expected self to have 2 dims"});
  // Accessors of the wrong kind.
  expect_error([&] { Value(1.5).to_tensor(); }, "loom::Value", {"expected Tensor, found float"});
}

}  // namespace
}  // namespace loom
