// out= arguments of the wrong shape are resized as PyTorch resizes them (Note [Resizing
// outs]): silently when empty, with a warning through the app's handler (Note [Warnings])
// when they have elements; in-place variants never resize self.
#include <vector>

#include "ops_test_util.h"

namespace loom::testing {
namespace {

class OutArguments : public OpsTest {
 protected:
  void SetUp() override {
    set_warning_handler([this](const Warning& w) { warnings_.push_back(w); });
  }
  void TearDown() override { set_warning_handler(nullptr); }
  std::vector<Warning> warnings_;
};

TEST_F(OutArguments, EmptyOutIsResizedSilently) {
  // torch.add(torch.tensor([1., 2, 3]), 1, out=torch.empty(0)) -> tensor([2., 3., 4.])
  Tensor out = loom::empty({0});
  Tensor result = add_out(out, make({1, 2, 3}, {3}), make({1}, {1}));
  EXPECT_EQ(result.impl(), out.impl());
  EXPECT_EQ(shape(out), (Shape{3}));
  EXPECT_EQ(values(out), (Values{2, 3, 4}));
  EXPECT_TRUE(warnings_.empty());
  // A Shaped op too: torch.sum(x, 0, out=torch.empty(0)) for x [2, 3].
  Tensor sums = loom::empty({0});
  sum_out(sums, make(k23, {2, 3}), IntList{0});
  EXPECT_EQ(values(sums), (Values{5, 7, 9}));
  EXPECT_TRUE(warnings_.empty());
}

TEST_F(OutArguments, OutWithElementsIsResizedWithAWarning) {
  // torch.mul(a, b, out=torch.empty(2)) for 3-element a, b: resized, and "UserWarning: An
  // output with one or more elements was resized ...".
  Tensor out = loom::zeros({2});
  mul_out(out, make({1, 2, 3}, {3}), make({2, 2, 2}, {3}));
  EXPECT_EQ(values(out), (Values{2, 4, 6}));
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_EQ(warnings_[0].component, "loom::mul.out");
  EXPECT_NE(warnings_[0].message.find("resized from shape [2] to the result's shape [3]"),
            std::string::npos)
      << warnings_[0].message;
  // Shrinking keeps the storage: torch.neg(x, out=big) for a big out.
  Tensor big = loom::zeros({2, 4});
  void* data = big.data_ptr();
  neg_out(big, make({1, 2}, {2}));
  EXPECT_EQ(shape(big), (Shape{2}));
  EXPECT_EQ(big.data_ptr(), data);
  EXPECT_EQ(values(big), (Values{-1, -2}));
  EXPECT_EQ(warnings_.size(), 2u);
}

TEST_F(OutArguments, DtypeAndDeviceStillHaveToFit) {
  Tensor out = loom::empty({0}, TensorOptions().dtype(ScalarType::Int64));
  // torch.add(float, float, out=int64 tensor) -> "result type Float can't be cast to the
  // desired output type Long".
  expect_error([&] { add_out(out, make({1.5}, {1}), make({1}, {1})); }, "loom::add.out",
               "can't be cast to the out dtype int64");
  EXPECT_EQ(shape(out), (Shape{0}));  // refused before anything changed
}

TEST_F(OutArguments, InPlaceNeverResizesSelf) {
  // torch.ones(1).add_(torch.ones(3)) -> "output with shape [1] doesn't match the
  // broadcast shape [3]".
  Tensor self = loom::ones({1});
  expect_error([&] { add_(self, loom::ones({3})); }, "loom::add_.Tensor", "shape [3]");
  EXPECT_EQ(shape(self), (Shape{1}));
  EXPECT_TRUE(warnings_.empty());
}

TEST_F(OutArguments, AHandlerThatThrowsStopsTheCallBeforeItWrites) {
  set_warning_handler([](const Warning& w) { throw Error("warnings-as-errors", w.message); });
  Tensor out = loom::zeros({2});
  // The error leaves the op call like a kernel's, under the op's name.
  expect_error(
      [&] {
        add_out(out, make({1, 2, 3}, {3}), make({1}, {1}));
      },
      "loom::add.out",
      "[warnings-as-errors] [loom::add.out] an out= tensor with elements was resized");
  EXPECT_EQ(values(out), (Values{0, 0}));
}

}  // namespace
}  // namespace loom::testing
