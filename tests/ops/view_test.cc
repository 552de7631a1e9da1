// The view ops as dispatcher ops (Note [View ops] in ops/views/view.cc): they share
// storage, every functionality key sees them, boxed callers create them by name, the meta
// device runs them, and bad inputs get errors naming the op. Expected values are
// PyTorch's (the expression in a comment).
#include <gmock/gmock.h>

#include <atomic>
#include <string>

#include "loom/call.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/local_dispatch_key_set.h"
#include "ops_test_util.h"

namespace loom::testing {
namespace {

using dispatch::Dispatcher;
using dispatch::OperatorHandle;
using ::testing::ElementsAre;

class ViewOps : public OpsTest {};

TEST_F(ViewOps, ViewsShareStorageAndReadTheRightElements) {
  Tensor x = make({0, 1, 2, 3, 4, 5}, {2, 3});
  Tensor t = x.transpose(0, 1);  // torch.arange(6.).view(2, 3).transpose(0, 1)
  EXPECT_TRUE(t.is_alias_of(x));
  EXPECT_EQ(shape(t), (Shape{3, 2}));
  EXPECT_EQ(values(t), (Values{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(values(x.t()), values(t));
  EXPECT_EQ(values(x.permute({1, 0})), values(t));
  Tensor a = alias(x);
  EXPECT_TRUE(a.is_alias_of(x));
  EXPECT_NE(a.impl(), x.impl());  // a new handle on the same elements
  EXPECT_EQ(values(a), values(x));
  // x.unflatten(1, (3, 1)).shape == (2, 3, 1); writes through the view reach x
  Tensor u = x.unflatten(1, {3, -1});
  EXPECT_EQ(shape(u), (Shape{2, 3, 1}));
  u.fill_(7);
  EXPECT_EQ(values(x), (Values{7, 7, 7, 7, 7, 7}));
}

TEST_F(ViewOps, UnfoldAndUnflattenMatchPyTorch) {
  Tensor x = make({0, 1, 2, 3, 4, 5, 6}, {7});
  // torch.arange(7.).unfold(0, 3, 2) -> [[0, 1, 2], [2, 3, 4], [4, 5, 6]]
  Tensor w = x.unfold(0, 3, 2);
  EXPECT_EQ(shape(w), (Shape{3, 3}));
  EXPECT_EQ(values(w), (Values{0, 1, 2, 2, 3, 4, 4, 5, 6}));
  EXPECT_TRUE(w.is_alias_of(x));
  // torch.arange(6.).view(2, 3).unfold(1, 2, 1) -> shape (2, 2, 2)
  Tensor y = make({0, 1, 2, 3, 4, 5}, {2, 3}).unfold(1, 2, 1);
  EXPECT_EQ(shape(y), (Shape{2, 2, 2}));
  EXPECT_EQ(values(y), (Values{0, 1, 1, 2, 3, 4, 4, 5}));
  // torch.tensor(5.).unfold(0, 1, 1) -> tensor([5.])
  EXPECT_EQ(shape(make({5}, {}).unfold(0, 1, 1)), (Shape{1}));
  // a transposed input: unflatten keeps the element order of the dim it splits
  Tensor z = make({0, 1, 2, 3, 4, 5, 6, 7}, {2, 4}).t().unflatten(0, {2, 2});
  EXPECT_EQ(shape(z), (Shape{2, 2, 2}));
  EXPECT_EQ(values(z), (Values{0, 4, 1, 5, 2, 6, 3, 7}));
}

// A Tracer fallback counts the view ops that reach it: the views dispatch like any op,
// so autograd, the profiler and the tracer see them.
TEST_F(ViewOps, FunctionalityKeysSeeViewOps) {
  Dispatcher& disp = Dispatcher::instance();
  static std::atomic<int> transposes{0}, expands{0};
  transposes = 0;
  expands = 0;
  auto tracer = [](void*, const LoomKernelCall* call) -> LoomError* {
    OperatorHandle op = OperatorHandle::from_abi(call->op);
    if (op.name() == "loom::transpose.int") ++transposes;
    if (op.name() == "loom::expand") ++expands;
    Dispatcher::instance().redispatch(op, DispatchKeySet(call->key_set), call->args, call->num_args,
                                      call->returns, call->num_returns);
    return nullptr;
  };
  dispatch::Registration fallback =
      disp.register_fallback(DispatchKey::Tracer, dispatch::KernelFunction{tracer, nullptr});
  Tensor x = make({0, 1, 2, 3, 4, 5}, {2, 3});
  {
    dispatch::IncludeDispatchKeyGuard include(DispatchKey::Tracer);
    Tensor t = x.transpose(0, 1);
    EXPECT_EQ(values(t), (Values{0, 3, 1, 4, 2, 5}));
    Tensor e = make({1, 2}, {2, 1}).expand({2, 3});
    EXPECT_EQ(values(e), (Values{1, 1, 1, 2, 2, 2}));
  }
  EXPECT_EQ(transposes.load(), 1);
  EXPECT_EQ(expands.load(), 1);
  x.transpose(0, 1);  // no Tracer in the key set: not seen
  EXPECT_EQ(transposes.load(), 1);
}

TEST_F(ViewOps, BoxedCallersCreateViewsByName) {
  Tensor x = make({0, 1, 2, 3, 4, 5}, {2, 3});
  std::vector<Value> r = call("transpose", {x, 0, 1});  // loom::transpose.int
  ASSERT_EQ(r.size(), 1u);
  const Tensor& t = r[0].to_tensor();
  EXPECT_TRUE(t.is_alias_of(x));
  EXPECT_EQ(values(t), (Values{0, 3, 1, 4, 2, 5}));
  Tensor s =
      call("loom::slice.Tensor", {x}, {{"dim", 1}, {"start", 1}, {"step", 2}})[0].to_tensor();
  EXPECT_EQ(values(s), (Values{1, 4}));
  EXPECT_TRUE(s.is_alias_of(x));
}

TEST_F(ViewOps, RunOnTheMetaDevice) {
  Tensor m = empty({2, 3, 4}, TensorOptions().device(Device{kMeta, -1}));
  EXPECT_EQ(shape(m.permute({2, 0, 1})), (Shape{4, 2, 3}));
  EXPECT_EQ(shape(m.select(1, -1)), (Shape{2, 4}));
  EXPECT_EQ(shape(m.unfold(2, 2, 2)), (Shape{2, 3, 2, 2}));
  EXPECT_EQ(m.diagonal(0, 1, 2).device().type, kMeta);
}

// Note [resize_]
TEST_F(ViewOps, ResizeKeepsLeadingElementsAndGrowsTheStorage) {
  Tensor x = make({0, 1, 2, 3, 4, 5}, {2, 3});
  Tensor same = resize_(x, {3, 2});
  EXPECT_EQ(same.data_ptr(), x.data_ptr());
  EXPECT_EQ(shape(x), (Shape{3, 2}));
  EXPECT_EQ(values(x), (Values{0, 1, 2, 3, 4, 5}));
  resize_(x, {2});
  EXPECT_EQ(values(x), (Values{0, 1}));
  resize_(x, {4, 4});  // grows: the old bytes come first
  EXPECT_EQ(shape(x), (Shape{4, 4}));
  Values grown = values(x);
  EXPECT_EQ(Values(grown.begin(), grown.begin() + 6), (Values{0, 1, 2, 3, 4, 5}));
  Tensor nhwc = make(Values(8, 1.0), {8});
  resize_(nhwc, {1, 2, 2, 2}, 2);  // torch.channels_last
  EXPECT_EQ(std::vector<int64_t>(nhwc.strides().begin(), nhwc.strides().end()),
            (std::vector<int64_t>{8, 1, 4, 2}));
  EXPECT_TRUE(nhwc.is_contiguous(MemoryFormat::ChannelsLast));
  Tensor m = empty({2, 3}, TensorOptions().device(Device{kMeta, -1}));
  resize_(m, {5, 5});
  EXPECT_EQ(shape(m), (Shape{5, 5}));
  expect_error(
      [&] {
        resize_(x, {2, -1});
      },
      "loom::resize_", "expected non-negative sizes, found [2, -1]");
  expect_error([&] { resize_(x, {2}, 4); }, "loom::resize_",
               "expected memory_format None, torch.contiguous_format (1) or torch.channels_last "
               "(2), found 4");
}

TEST_F(ViewOps, BadInputsGetErrorsNamingTheOp) {
  Tensor x = make({0, 1, 2, 3, 4, 5}, {2, 3});
  expect_error([&] { x.unfold(1, 4, 1); }, "loom::unfold",
               "window size 4 exceeds the size 3 of dim 1");
  expect_error([&] { x.unfold(0, 1, 0); }, "loom::unfold", "expected a positive step, found 0");
  expect_error(
      [&] {
        x.unflatten(1, {2, 2});
      },
      "loom::unflatten.int", "sizes [2, 2] multiply to 4, not to the size 3 of dim 1");
  expect_error([&] { x.unflatten(0, {-1, -1}); }, "loom::unflatten.int", "only one size can be -1");
  expect_error([&] { x.t().view({6}); }, "loom::view", "cannot view a tensor of sizes [3, 2]");
  expect_error([&] { x.transpose(0, 2); }, "loom::transpose.int", "dim 2 is out of range");
  expect_error([&] { x.expand({3, 2}); }, "loom::expand", "cannot be broadcast to [3, 2]");
  expect_error([&] { call("transpose", {x, 0}); }, "loom::transpose.int", "");
}

}  // namespace
}  // namespace loom::testing
