// The indexing ops through the typed API, against hand-computed values: index_select,
// gather, scatter(_add), scatter_reduce, nonzero and advanced indexing (index.Tensor), on strided,
// zero-size and several-dtype inputs, in-place variants, the meta device, and the errors.
#include <limits>

#include <cmath>

#include "ops_test_util.h"

namespace loom::testing {
namespace {

class Indexing : public OpsTest {};

Tensor longs(const Values& v, const Shape& s) {
  return make(v, s, ScalarType::Int64);
}

TEST_F(Indexing, IndexSelectGather) {
  Tensor x = make(k23, {2, 3});
  EXPECT_EQ(values(index_select(x, 1, longs({2, 0}, {2}))), (Values{3, 1, 6, 4}));
  EXPECT_EQ(values(index_select(x.t(), 0, make({1}, {1}, ScalarType::Int32))), (Values{2, 5}));
  EXPECT_EQ(shape(index_select(x, -2, longs({}, {0}))), (Shape{0, 3}));
  Tensor g = gather(x, 1, longs({0, 0, 2, 1}, {2, 2}));
  EXPECT_EQ(values(g), (Values{1, 1, 6, 5}));
  Tensor h = gather(make(k23, {2, 3}, ScalarType::Float16).t(), 0, longs({2, 0}, {1, 2}));
  EXPECT_EQ(h.dtype(), ScalarType::Float16);
  EXPECT_EQ(values(h), (Values{3, 4}));
  EXPECT_EQ(values(gather(make({1, 0, 1}, {3}, ScalarType::Bool), 0, longs({1, 2}, {2}))),
            (Values{0, 1}));
}

TEST_F(Indexing, ScatterAndScatterAddWithInPlaceVariants) {
  Tensor zeros = make({0, 0, 0, 0, 0, 0}, {2, 3});
  Tensor idx = longs({2, 0}, {1, 2});
  Tensor src = make({10, 20, 30, 40}, {2, 2});
  EXPECT_EQ(values(scatter(zeros, 1, idx, src)), (Values{20, 0, 10, 0, 0, 0}));
  EXPECT_EQ(values(scatter(zeros, 0, longs({1, 0, 1}, {1, 3}), 7.0)), (Values{0, 7, 0, 7, 0, 7}));
  Tensor acc = make({1, 1, 1}, {3}, ScalarType::Int32);
  acc.scatter_add_(0, longs({0, 0, 2, 0}, {4}), make({1, 2, 3, 4}, {4}, ScalarType::Int32));
  EXPECT_EQ(values(acc), (Values{8, 1, 4}));
  Tensor in_place = make(k23, {2, 3});
  in_place.scatter_(0, longs({1}, {1, 1}), -1.0);
  EXPECT_EQ(values(in_place), (Values{1, 2, 3, -1, 5, 6}));
  Tensor b = make({0, 0}, {2}, ScalarType::Bool);
  EXPECT_EQ(values(scatter_add(b, 0, longs({1, 1}, {2}), make({1, 1}, {2}, ScalarType::Bool))),
            (Values{0, 1}));
  // a transposed self and a float16 scatter_add
  Tensor hf = scatter_add(make(k23, {2, 3}, ScalarType::Float16).t(), 0, longs({0, 0}, {1, 2}),
                          make({0.5, 0.25}, {1, 2}, ScalarType::Float16));
  EXPECT_EQ(values(hf), (Values{1.5, 4.25, 2, 5, 3, 6}));
}

// Note [scatter_reduce]: self [1, 2, 3, 4]; src 5, 6 go to position 0 and 7, 8, 9 to 2.
TEST_F(Indexing, ScatterReduceEveryReductionWithAndWithoutSelf) {
  Tensor self = make({1, 2, 3, 4}, {4}, ScalarType::Float64);
  Tensor index = longs({0, 0, 2, 2, 2}, {5});
  Tensor src = make({5, 6, 7, 8, 9}, {5}, ScalarType::Float64);
  auto reduce = [&](const char* how, bool include_self) {
    return values(scatter_reduce(self, 0, index, src, how, include_self));
  };
  EXPECT_EQ(reduce("sum", true), (Values{12, 2, 27, 4}));
  EXPECT_EQ(reduce("sum", false), (Values{11, 2, 24, 4}));
  EXPECT_EQ(reduce("prod", true), (Values{30, 2, 1512, 4}));
  EXPECT_EQ(reduce("prod", false), (Values{30, 2, 504, 4}));
  EXPECT_EQ(reduce("mean", true), (Values{4, 2, 6.75, 4}));
  EXPECT_EQ(reduce("mean", false), (Values{5.5, 2, 8, 4}));
  EXPECT_EQ(reduce("amax", true), (Values{6, 2, 9, 4}));
  EXPECT_EQ(reduce("amin", true), (Values{1, 2, 3, 4}));
  EXPECT_EQ(reduce("amin", false), (Values{5, 2, 7, 4}));
  // 2-D along dim 1, in place, on a transposed self
  Tensor grid = make({0, 0, 0, 0, 0, 0}, {3, 2}).t();  // [2, 3]
  scatter_reduce_(grid, 1, longs({2, 2, 0, 1}, {2, 2}), make({1, 2, 3, 4}, {2, 2}), "amax", false);
  EXPECT_EQ(values(grid), (Values{0, 0, 2, 3, 4, 0}));
  // integer means round down, as PyTorch's floor division does: (0 - 1 - 1) / 3
  Tensor ints =
      scatter_reduce(longs({0, 7}, {2}), 0, longs({0, 0}, {2}), longs({-1, -1}, {2}), "mean", true);
  EXPECT_EQ(values(ints), (Values{-1, 7}));
  // NaN wins a maximum
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Values maxed = values(
      scatter_reduce(make({0, 0}, {2}), 0, longs({0, 0}, {2}), make({nan, 1}, {2}), "amax", true));
  EXPECT_TRUE(std::isnan(maxed[0]));
  EXPECT_EQ(shape(scatter_reduce(
                empty({3, 4}, TensorOptions().device(Device{kMeta, -1})), 1,
                empty({3, 2}, TensorOptions().dtype(ScalarType::Int64).device(Device{kMeta, -1})),
                empty({3, 2}, TensorOptions().device(Device{kMeta, -1})), "sum")),
            (Shape{3, 4}));
  expect_error([&] { scatter_reduce(self, 0, index, src, "max"); }, "loom::scatter_reduce.two",
               "expected reduce 'sum', 'prod', 'mean', 'amax' or 'amin', found 'max'");
  expect_error(
      [&] {
        scatter_reduce(make({1, 0}, {2}, ScalarType::Bool), 0, longs({0}, {1}),
                       make({1}, {1}, ScalarType::Bool), "sum");
      },
      "loom::scatter_reduce.two", "expected a numeric self, found bool");
  expect_error(
      [&] { scatter_reduce(self, 0, longs({4}, {1}), make({1}, {1}, ScalarType::Float64), "sum"); },
      "loom::scatter_reduce.two", "index 4 is out of range");
}

TEST_F(Indexing, NonzeroAndAdvancedIndexing) {
  Tensor x = make({0, 2, 0, 3, 0, 1}, {2, 3});
  Tensor nz = nonzero(x.t());  // [[0, 3], [2, 0], [0, 1]]
  EXPECT_EQ(shape(nz), (Shape{3, 2}));
  EXPECT_EQ(values(nz), (Values{0, 1, 1, 0, 2, 1}));
  EXPECT_EQ(shape(nonzero(empty({0, 2}))), (Shape{0, 2}));
  Tensor y = make(k23, {2, 3});
  // y[[1, 0]] and y[:, [-1]] and y[[[0], [1]], [0, 2]] (broadcast to [2, 2])
  EXPECT_EQ(values(index(y, {longs({1, 0}, {2})})), (Values{4, 5, 6, 1, 2, 3}));
  Tensor col = index(y, {std::nullopt, longs({-1}, {1})});
  EXPECT_EQ(shape(col), (Shape{2, 1}));
  EXPECT_EQ(values(col), (Values{3, 6}));
  EXPECT_EQ(values(index(y, {longs({0, 1}, {2, 1}), longs({0, 2}, {2})})), (Values{1, 3, 4, 6}));
  // a bool mask over both dims
  Tensor mask = make({1, 0, 1, 0, 0, 1}, {2, 3}, ScalarType::Bool);
  EXPECT_EQ(values(index(y, {mask})), (Values{1, 3, 6}));
  // non-adjacent indexed dims put the broadcast dims first
  Tensor z = make({0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2});
  Tensor nonadj = index(z, {longs({1}, {1}), std::nullopt, longs({0}, {1})});
  EXPECT_EQ(shape(nonadj), (Shape{1, 2}));
  EXPECT_EQ(values(nonadj), (Values{4, 6}));
  expect_error([&] { index(y, {longs({2}, {1})}); }, "loom::index.Tensor",
               "index 2 is out of range for dim 0 of size 2");
  expect_error([&] { index(y, {make({0}, {1})}); }, "loom::index.Tensor",
               "expected int64 or bool index tensors, found float32");
}

// Kept whole across families: also roll and repeat (shape).
TEST_F(Indexing, EdgeCasesFromReview) {
  Values v(12);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  Tensor x = make(v, {3, 4});
  // 0-dim integer indices drop the indexed dims
  Tensor row = index(x, {longs({1}, {})});
  EXPECT_EQ(shape(row), (Shape{4}));
  EXPECT_EQ(values(row), (Values{4, 5, 6, 7}));
  Tensor cube = make(Values(60, 1.0), {3, 4, 5});
  EXPECT_EQ(shape(index(cube, {longs({1}, {}), longs({2}, {})})), (Shape{5}));
  EXPECT_EQ(shape(index(cube, {std::nullopt, longs({2}, {})})), (Shape{3, 5}));
  // an empty index addresses nothing: gather gives an empty result, scatter a copy
  EXPECT_EQ(shape(gather(x, 1, longs({}, {0}))), (Shape{0}));
  EXPECT_EQ(values(scatter(x, 0, longs({}, {0}), make({}, {0}))), v);
  // roll by any int64 shift: shift mod size
  Tensor five = make({0, 1, 2, 3, 4}, {5});
  EXPECT_EQ(values(roll(five, {std::numeric_limits<int64_t>::min()})), (Values{3, 4, 0, 1, 2}));
  EXPECT_EQ(
      values(roll(five, {std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::max()},
                  {0, 0})),
      (Values{1, 2, 3, 4, 0}));
  expect_error([&] { repeat(five, {int64_t{1} << 62}); }, "loom::repeat", "overflow int64");
}

// Kept whole across families: also bernoulli and dropout (random) and one_hot (embedding).
TEST_F(Indexing, MetaKernelsOfUnstructuredOps) {
  const Device meta_device{kMeta, -1};
  const TensorOptions meta = TensorOptions().device(meta_device);
  const TensorOptions meta_int = TensorOptions().dtype(ScalarType::Int64).device(meta_device);
  Tensor x = empty({4, 5, 6}, meta);
  // shaped like an input
  Tensor b = bernoulli(x);
  EXPECT_EQ(shape_of(b), (Shape{4, 5, 6}));
  EXPECT_EQ(b.device().type, kMeta);
  EXPECT_EQ(shape_of(dropout(x, 0.5, true)), (Shape{4, 5, 6}));
  EXPECT_EQ(dropout(x, 0.5, false).impl(), x.impl());
  EXPECT_EQ(shape_of(one_hot(empty({3, 2}, meta_int), 7)), (Shape{3, 2, 7}));
  // integer indices: adjacent indexed dims stay in place, separated ones go first
  Tensor i23 = empty({2, 3}, meta_int), i3 = empty({3}, meta_int);
  EXPECT_EQ(shape_of(index(x, {i23})), (Shape{2, 3, 5, 6}));
  EXPECT_EQ(shape_of(index(x, {std::nullopt, i23, i3})), (Shape{4, 2, 3}));
  EXPECT_EQ(shape_of(index(x, {i3, std::nullopt, i23})), (Shape{2, 3, 5}));
  EXPECT_EQ(shape_of(index(x, {std::nullopt})), (Shape{4, 5, 6}));
  // data-dependent shapes and bad arguments are errors naming the op
  expect_error([&] { nonzero(x); }, "loom::nonzero",
               "the output shape depends on the number of nonzero elements");
  expect_error([&] { one_hot(empty({3}, meta_int)); }, "loom::one_hot",
               "depends on the largest class (num_classes=-1)");
  expect_error([&] { one_hot(x, 3); }, "loom::one_hot", "expected an int64 input, found float32");
  expect_error(
      [&] { index(x, {empty({4}, TensorOptions().dtype(ScalarType::Bool).device(meta_device))}); },
      "loom::index.Tensor", "the number of true elements of a mask");
  expect_error(
      [&] {
        index(x, {i23, empty({4}, meta_int)});
      },
      "loom::index.Tensor", "cannot be broadcast");
  expect_error(
      [&] {
        index(x, {i3, i3, i3, i3});
      },
      "loom::index.Tensor", "too many indices for a tensor of 3 dims: found 4");
  expect_error([&] { dropout(x, 1.5, true); }, "loom::dropout",
               "expected p in [0, 1], found p=1.5");
  expect_error([&] { bernoulli(empty({2}, meta_int)); }, "loom::bernoulli",
               "dtype int64 is not supported");
}

// Kept whole across families: also cat (shape) and sort (sort).
TEST_F(Indexing, BadInputsGetErrorsNamingTheOp) {
  Tensor x = make(k23, {2, 3});
  expect_error(
      [&] {
        cat({make({1}, {1, 1, 1}), x, make({1, 2}, {1, 2})});
      },
      "loom::cat", "expected tensors with 3 dims like tensor 0, found tensor 1 with 2 dims");
  expect_error(
      [&] {
        cat({x, make({1, 2}, {1, 2})});
      },
      "loom::cat", "expected size 3 in dim 1 like tensor 0, found size 2 in tensor 1");
  expect_error([&] { cat({x, x}, 2); }, "loom::cat", "dim 2 is out of range");
  expect_error([&] { cat(std::vector<Tensor>{}); }, "loom::cat", "non-empty list");
  expect_error([&] { index_select(x, 1, longs({3}, {1})); }, "loom::index_select",
               "index 3 is out of range for dim 1 of size 3");
  expect_error([&] { index_select(x, 0, make({0}, {1})); }, "loom::index_select",
               "expected an int64 or int32 index tensor, found float32");
  expect_error(
      [&] {
        gather(x, 0, longs({0, 5}, {1, 2}));
      },
      "loom::gather", "index 5 is out of range for dim 0 of size 2");
  expect_error(
      [&] {
        gather(x, 0, make({0}, {1, 1}, ScalarType::Int32));
      },
      "loom::gather", "expected an int64 index tensor, found int32");
  {
    // many rows, split over the pool: the message names the first bad index in
    // row-major order, and every index is checked before out= is written
    Values many(3 * 4096, 1);
    many[2 * 4096 + 7] = 9;
    many[4096 + 3] = -2;
    const Tensor wide = zeros({3, 4096});
    const Tensor out = full({3, 4096}, 5.0);
    expect_error(
        [&] {
          gather_out(out, wide, 0, longs(many, {3, 4096}));
        },
        "loom::gather.out", "index -2 is out of range for dim 0 of size 3");
    EXPECT_EQ(values(out), Values(3 * 4096, 5.0));
    expect_error(
        [&] {
          gather(wide.t(), 1, longs(many, {3, 4096}).t());
        },
        "loom::gather", "index -2 is out of range for dim 1 of size 3");
  }
  expect_error([&] { gather(x, 0, longs({0}, {1})); }, "loom::gather",
               "expected an index with 2 dims like self, found 1 dims");
  expect_error(
      [&] {
        scatter(x, 1, longs({-1}, {1, 1}), 1.0);
      },
      "loom::scatter.value", "index -1 is out of range for dim 1 of size 3");
  expect_error(
      [&] {
        scatter_add(x, 0, longs({0}, {1, 1}), make({1}, {1, 1}, ScalarType::Int32));
      },
      "loom::scatter_add", "expected src of self's dtype float32, found int32");
  expect_error([&] { sort(x, 2); }, "loom::sort", "dim 2 is out of range");
}

TEST_F(Indexing, IndexAddCopyMaskedSelectRepeatInterleave) {
  Tensor index = make({0, 2, 0}, {3}, ScalarType::Int64);
  Tensor source = make({1, 1, 2, 2, 3, 3}, {3, 2});
  // torch.zeros(3, 2).index_add(0, torch.tensor([0, 2, 0]), source) -> [[4, 4], [0, 0], [2, 2]]
  EXPECT_EQ(values(index_add(loom::zeros({3, 2}), 0, index, source)), (Values{4, 4, 0, 0, 2, 2}));
  Tensor acc = loom::zeros({3, 2});
  index_add_(acc, 0, index, source, 2);
  EXPECT_EQ(values(acc), (Values{8, 8, 0, 0, 4, 4}));
  // torch.zeros(3, 2).index_copy(0, torch.tensor([2, 0]), [[1, 2], [3, 4]]) -> [[3, 4], [0, 0], [1,
  // 2]]
  EXPECT_EQ(values(index_copy(loom::zeros({3, 2}), 0, make({2, 0}, {2}, ScalarType::Int64),
                              make({1, 2, 3, 4}, {2, 2}))),
            (Values{3, 4, 0, 0, 1, 2}));
  expect_error(
      [&] {
        index_add(loom::zeros({3, 2}), 0, index, loom::zeros({2, 2}));
      },
      "loom::index_add", "expected source to have 3 elements in dim 0");
  // torch.masked_select(torch.tensor([[1, 2], [3, 4]]), mask) with a full and a broadcast mask
  Tensor x = make({1, 2, 3, 4}, {2, 2});
  EXPECT_EQ(values(masked_select(x, make({1, 0, 0, 1}, {2, 2}, ScalarType::Bool))), (Values{1, 4}));
  EXPECT_EQ(values(masked_select(x, make({1, 0}, {2}, ScalarType::Bool))), (Values{1, 3}));
  // torch.repeat_interleave(torch.tensor([1, 2, 3]), 2) -> [1, 1, 2, 2, 3, 3]
  EXPECT_EQ(values(repeat_interleave(make({1, 2, 3}, {3}), 2)), (Values{1, 1, 2, 2, 3, 3}));
  // torch.repeat_interleave(x, torch.tensor([1, 2]), dim=0) -> [[1, 2], [3, 4], [3, 4]]
  EXPECT_EQ(values(repeat_interleave(x, make({1, 2}, {2}, ScalarType::Int64), 0)),
            (Values{1, 2, 3, 4, 3, 4}));
  // torch.repeat_interleave(torch.tensor([2, 1])) -> [0, 0, 1]
  EXPECT_EQ(values(repeat_interleave(make({2, 1}, {2}, ScalarType::Int64))), (Values{0, 0, 1}));
  expect_error(
      [&] {
        repeat_interleave(x, make({1, 2, 3}, {3}, ScalarType::Int64), 0);
      },
      "loom::repeat_interleave.self_Tensor", "expected one repeat count per element");
}

TEST_F(Indexing, IndexPutAndMaskedScatter) {
  using Indices = std::vector<std::optional<Tensor>>;
  Tensor rows = make({0, 2, 0}, {3}, ScalarType::Int64);
  // torch.zeros(3, 2).index_put_((torch.tensor([0, 2, 0]),), torch.tensor([[1., 1], [2, 2],
  // [3, 3]]), accumulate=True) -> [[4, 4], [0, 0], [2, 2]]
  Tensor acc = loom::zeros({3, 2});
  index_put_(acc, Indices{rows}, make({1, 1, 2, 2, 3, 3}, {3, 2}), true);
  EXPECT_EQ(values(acc), (Values{4, 4, 0, 0, 2, 2}));
  // torch.arange(6.).view(2, 3).index_put((torch.tensor([0, 1]), torch.tensor([2, 0])),
  // torch.tensor(9.)) -> [[0, 1, 9], [9, 4, 5]]; self is left alone
  Tensor x = make({0, 1, 2, 3, 4, 5}, {2, 3});
  EXPECT_EQ(
      values(index_put(
          x, Indices{make({0, 1}, {2}, ScalarType::Int64), make({2, 0}, {2}, ScalarType::Int64)},
          make({9}, {}))),
      (Values{0, 1, 9, 9, 4, 5}));
  EXPECT_EQ(values(x), (Values{0, 1, 2, 3, 4, 5}));
  // a = torch.arange(4.).view(2, 2); a[a > 1] = 7 -> [[0, 1], [7, 7]]
  Tensor a = make({0, 1, 2, 3}, {2, 2});
  index_put_(a, Indices{make({0, 0, 1, 1}, {2, 2}, ScalarType::Bool)}, make({7}, {}));
  EXPECT_EQ(values(a), (Values{0, 1, 7, 7}));
  // A non-contiguous self is written in place: t = torch.zeros(2, 3).t();
  // t.index_put_((torch.tensor([1]),), torch.tensor([5., 6])) -> t.t() == [[0, 5, 0], [0, 6, 0]]
  Tensor base = loom::zeros({2, 3});
  index_put_(base.t(), Indices{make({1}, {1}, ScalarType::Int64)}, make({5, 6}, {2}));
  EXPECT_EQ(values(base), (Values{0, 5, 0, 0, 6, 0}));
  // torch.zeros(3).index_put_((idx,), torch.zeros(2, dtype=torch.float64)) raises "Index put
  // requires the source and destination dtypes match, got Float for the destination and
  // Double for the source."
  expect_error(
      [&] {
        index_put_(loom::zeros({3}), Indices{make({0, 1}, {2}, ScalarType::Int64)},
                   loom::zeros({2}).to(ScalarType::Float64));
      },
      "loom::index_put_", "Index put requires the source and destination dtypes match");
  // torch.zeros(3, 2).index_put_((torch.tensor([0, 1]),), torch.ones(3)) raises "shape
  // mismatch: value tensor of shape [3] cannot be broadcast to indexing result of shape [2, 2]"
  expect_error(
      [&] {
        index_put_(loom::zeros({3, 2}), Indices{make({0, 1}, {2}, ScalarType::Int64)},
                   loom::ones({3}));
      },
      "loom::index_put_",
      "value tensor of shape [3] cannot be broadcast to indexing result of shape [2, 2]");
  expect_error(
      [&] {
        index_put_(loom::zeros({3}), Indices{make({3}, {1}, ScalarType::Int64)}, loom::ones({1}));
      },
      "loom::index_put_", "index 3 is out of range for dim 0 of size 3");

  // torch.zeros(2, 3).masked_scatter(torch.tensor([[1, 0, 1], [0, 1, 0]]).bool(),
  // torch.tensor([1., 2, 3, 4])) -> [[1, 0, 2], [0, 3, 0]]
  Tensor mask = make({1, 0, 1, 0, 1, 0}, {2, 3}, ScalarType::Bool);
  EXPECT_EQ(values(masked_scatter(loom::zeros({2, 3}), mask, make({1, 2, 3, 4}, {4}))),
            (Values{1, 0, 2, 0, 3, 0}));
  // torch.zeros(2, 1).masked_scatter(torch.tensor([True, False, True]), torch.arange(1., 7.))
  // -> [[1, 0, 2], [3, 0, 4]] (self and mask broadcast)
  EXPECT_EQ(values(masked_scatter(loom::zeros({2, 1}), make({1, 0, 1}, {3}, ScalarType::Bool),
                                  make({1, 2, 3, 4, 5, 6}, {6}))),
            (Values{1, 0, 2, 3, 0, 4}));
  Tensor target = loom::zeros({2, 3});
  masked_scatter_(target, make({0, 1, 1}, {3}, ScalarType::Bool), make({1, 2, 3, 4}, {2, 2}));
  EXPECT_EQ(values(target), (Values{0, 1, 2, 0, 3, 4}));
  // torch.zeros(2, 3).masked_scatter_(mask, torch.ones(2)) raises "Number of elements of
  // source < number of ones in mask"
  expect_error(
      [&] {
        masked_scatter_(loom::zeros({2, 3}), mask, loom::ones({2}));
      },
      "loom::masked_scatter_", "Number of elements of source < number of ones in mask");
  expect_error(
      [&] {
        masked_scatter_(loom::zeros({2, 3}), mask.to(ScalarType::Float32), loom::ones({6}));
      },
      "loom::masked_scatter_", "only supports boolean masks");
  expect_error(
      [&] {
        masked_scatter_(loom::zeros({1, 3}), mask, loom::ones({6}));
      },
      "loom::masked_scatter_", "expected a mask that broadcasts to self's shape [1, 3]");
}

}  // namespace
}  // namespace loom::testing
