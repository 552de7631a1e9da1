// In-place and out= writes into memory that overlaps itself or an input are refused
// before any kernel runs (Note [Overlapping writes]); exact aliasing stays allowed.
// Each case is what PyTorch 2.x does with the same tensors (its expression in comments).
#include "ops_test_util.h"

namespace loom::testing {
namespace {

class OverlappingWrites : public OpsTest {};

const std::string kInternal =
    "more than one element of the written-to tensor refers to a single "
    "memory location";
const std::string kPartial = "some elements of an input and of the written-to tensor refer to";

TEST_F(OverlappingWrites, ExpandedSelfIsRefusedAndLeftUnchanged) {
  Tensor row = make({1, 2, 3, 4, 5}, {1, 5});
  Tensor expanded = row.expand({4, 5});  // stride 0 on dim 0
  Tensor ones = loom::ones({4, 5});
  const uint64_t version = row.impl()->storage()->version();
  // torch.ones(1,5).expand(4,5).add_(torch.ones(4,5)) -> RuntimeError: unsupported operation:
  // more than one element of the written-to tensor refers to a single memory location.
  expect_error([&] { add_(expanded, ones); }, "loom::add_.Tensor", kInternal);
  expect_error([&] { add_out(expanded, ones, ones); }, "loom::add.out", kInternal);
  expect_error([&] { copy_(expanded, ones); }, "loom::copy_", kInternal);
  expect_error([&] { cumsum_(expanded, 1); }, "loom::cumsum_", kInternal);
  expect_error(
      [&] {
        masked_fill_(expanded, loom::ones({4, 5}, TensorOptions().dtype(ScalarType::Bool)), 0.0);
      },
      "loom::masked_fill_.Scalar", kInternal);
  expect_error([&] { uniform_(expanded); }, "loom::uniform_", kInternal);
  EXPECT_EQ(values(row), (Values{1, 2, 3, 4, 5}));       // nothing was written
  EXPECT_EQ(row.impl()->storage()->version(), version);  // and none counted
}

TEST_F(OverlappingWrites, FillMayWriteSharedElements) {
  // torch.zeros(1,5).expand(4,5).fill_(7): allowed, every element gets the same value.
  Tensor row = loom::zeros({1, 5});
  row.expand({4, 5}).fill_(7.0);
  EXPECT_EQ(values(row), (Values{7, 7, 7, 7, 7}));
}

TEST_F(OverlappingWrites, PartialOverlapWithAnInputIsRefused) {
  Tensor a = make({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4});
  // a.add_(a[0]): the broadcast row is part of a -> RuntimeError: unsupported operation:
  // some elements of the input tensors and the written-to tensor refer to a single memory
  // location.
  expect_error([&] { add_(a, a.select(0, 0)); }, "loom::add_.Tensor", kPartial);
  // torch.add(x[1:], x[1:], out=x[:-1]) with x of 8 elements: shifted by one element.
  Tensor x = make({1, 2, 3, 4, 5, 6, 7, 8}, {8});
  expect_error([&] { add_out(x.slice(0, 0, 7), x.slice(0, 1, 8), x.slice(0, 1, 8)); },
               "loom::add.out", kPartial);
  expect_error([&] { copy_(x.slice(0, 0, 7), x.slice(0, 1, 8)); }, "loom::copy_", kPartial);
  EXPECT_EQ(values(x), (Values{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(values(a), (Values{1, 2, 3, 4, 5, 6, 7, 8}));
}

TEST_F(OverlappingWrites, ExactAliasingAndDisjointViewsAreAllowed) {
  Tensor a = make({1, 2, 3, 4}, {2, 2});
  add_(a, a);  // a.add_(a): the same elements, read then written
  EXPECT_EQ(values(a), (Values{2, 4, 6, 8}));
  Tensor b = make({1, 1, 1, 1}, {2, 2});
  add_out(a, a, b);  // torch.add(a, b, out=a)
  EXPECT_EQ(values(a), (Values{3, 5, 7, 9}));
  // Two halves of one storage do not overlap: x[:4] += x[4:].
  Tensor x = make({1, 2, 3, 4, 10, 20, 30, 40}, {8});
  add_(x.slice(0, 0, 4), x.slice(0, 4, 8));
  EXPECT_EQ(values(x), (Values{11, 22, 33, 44, 10, 20, 30, 40}));
  // A transposed view covers the same block as its base: PyTorch calls that a full
  // overlap and allows it; loom too.
  Tensor s = make({1, 2, 3, 4}, {2, 2});
  EXPECT_NO_THROW(add_out(s, s.t().contiguous(), s));
}

TEST_F(OverlappingWrites, OutputsOfMultiOutputOpsAreChecked) {
  Tensor x = make({3, 1, 2, 5, 4, 6}, {2, 3});
  Tensor values_out = loom::empty({2});
  Tensor indices = loom::zeros({1}, TensorOptions().dtype(ScalarType::Int64)).expand({2});
  expect_error([&] { max_out(values_out, indices, x, 1); }, "loom::max.dim_out", kInternal);
}

}  // namespace
}  // namespace loom::testing
