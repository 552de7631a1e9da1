// Shape, indexing and sorting ops through the typed API, against hand-computed values:
// cat/stack, split/chunk/flatten/reshape views, index_select, gather, scatter(_add),
// sort/topk/argsort, flip/roll/repeat, tril/triu, nonzero and advanced indexing, on
// strided, zero-size and several-dtype inputs, in-place variants, the meta device, and
// the errors.
#include <limits>

#include "ops_test_util.h"

namespace loom::testing {
namespace {

class ShapeIndexing : public OpsTest {};

const Values k23 = {1, 2, 3, 4, 5, 6};  // [[1, 2, 3], [4, 5, 6]]

Tensor longs(const Values& v, const Shape& s) {
  return make(v, s, ScalarType::Int64);
}

TEST_F(ShapeIndexing, CatAlongDimsWithPromotionAndLegacyEmpty) {
  for (ScalarType t : {ScalarType::Float32, ScalarType::Bool, ScalarType::Int8, ScalarType::Float16,
                       ScalarType::BFloat16, ScalarType::Float64}) {
    Tensor a = make({1, 0, 1, 1}, {2, 2}, t);
    Tensor b = make({0, 1}, {2, 1}, t);
    Tensor c = cat({a, b}, -1);
    EXPECT_EQ(c.dtype(), t);
    EXPECT_EQ(shape(c), (Shape{2, 3}));
    EXPECT_EQ(values(c), (Values{1, 0, 0, 1, 1, 1})) << scalar_type_name(t);
  }
  Tensor x = make(k23, {2, 3});
  // a transposed (non-contiguous) input, dim 0, and a legacy empty tensor that is skipped
  Tensor r = cat({x, make({7, 8, 9}, {3, 1}).t(), empty({0})}, 0);
  EXPECT_EQ(values(r), (Values{1, 2, 3, 4, 5, 6, 7, 8, 9}));
  // int32 with float32 promotes to float32
  Tensor p = cat({make({1, 2}, {2}, ScalarType::Int32), make({0.5}, {1})});
  EXPECT_EQ(p.dtype(), ScalarType::Float32);
  EXPECT_EQ(values(p), (Values{1, 2, 0.5}));
  EXPECT_EQ(shape(cat({empty({0, 3}), x})), (Shape{2, 3}));
}

TEST_F(ShapeIndexing, StackInsertsANewDim) {
  Tensor a = make({1, 2}, {2});
  Tensor b = make({3, 4}, {2});
  EXPECT_EQ(values(stack({a, b})), (Values{1, 2, 3, 4}));
  Tensor s = stack({a, b}, -1);
  EXPECT_EQ(shape(s), (Shape{2, 2}));
  EXPECT_EQ(values(s), (Values{1, 3, 2, 4}));
  expect_error(
      [&] {
        stack({a, make({1, 2, 3}, {3})});
      },
      "loom::stack", "expected tensors of shape [2] like tensor 0, found [3] in tensor 1");
}

TEST_F(ShapeIndexing, SplitChunkFlattenReshapeAreViewsWhenPossible) {
  Tensor x = make({0, 1, 2, 3, 4, 5, 6}, {7});
  std::vector<Tensor> parts = split(x, 3);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(values(parts[2]), (Values{6}));
  EXPECT_EQ(parts[1].data_ptr(), static_cast<char*>(x.data_ptr()) + 3 * sizeof(float));
  std::vector<Tensor> chunks = chunk(make(k23, {2, 3}), 2, 1);
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(values(chunks[0]), (Values{1, 2, 4, 5}));
  EXPECT_EQ(values(chunks[1]), (Values{3, 6}));
  EXPECT_EQ(chunk(empty({0}), 3).size(), 3u);
  Tensor y = make({0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2});
  Tensor f = flatten(y, 1);
  EXPECT_EQ(shape(f), (Shape{2, 4}));
  EXPECT_EQ(f.data_ptr(), y.data_ptr());  // a view
  EXPECT_EQ(shape(flatten(make({5}, {}))), (Shape{1}));
  Tensor r = reshape(y, {-1, 4});
  EXPECT_EQ(shape(r), (Shape{2, 4}));
  EXPECT_EQ(r.data_ptr(), y.data_ptr());
  // transposed: no view exists, reshape copies
  Tensor t = reshape(make(k23, {2, 3}).t(), {6});
  EXPECT_EQ(values(t), (Values{1, 4, 2, 5, 3, 6}));
  expect_error(
      [&] {
        reshape(y, {3, -1});
      },
      "loom::reshape", "is invalid for a tensor of 8 elements");
  expect_error([&] { split(x, 0); }, "loom::split.Tensor", "expected a positive split_size");
  expect_error([&] { chunk(x, 0); }, "loom::chunk", "expected a positive number of chunks");
  expect_error([&] { flatten(y, 2, 1); }, "loom::flatten.using_ints", "start_dim 2");
}

TEST_F(ShapeIndexing, IndexSelectGather) {
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

TEST_F(ShapeIndexing, ScatterAndScatterAddWithInPlaceVariants) {
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

TEST_F(ShapeIndexing, SortIsStableWithNaNLargest) {
  const double nan = std::nan("");
  Tensor x = make({3, nan, 1, 3, 2}, {5});
  auto [v, i] = sort(x);
  expect_close(values(v), {1, 2, 3, 3, nan});
  EXPECT_EQ(values(i), (Values{2, 4, 0, 3, 1}));
  auto [dv, di] = sort(x, 0, true);
  expect_close(values(dv), {nan, 3, 3, 2, 1});
  EXPECT_EQ(values(di), (Values{1, 0, 3, 4, 2}));
  // along dim 0 of a transposed int tensor
  Tensor m = make({5, 1, 4, 2, 6, 0}, {2, 3}, ScalarType::Int16).t();  // [[5,2],[1,6],[4,0]]
  auto [mv, mi] = sort(m, 0);
  EXPECT_EQ(values(mv), (Values{1, 0, 4, 2, 5, 6}));
  EXPECT_EQ(values(mi), (Values{1, 2, 2, 0, 0, 1}));
  EXPECT_EQ(values(argsort(make({0, 1, 0}, {3}, ScalarType::Bool), -1, true)), (Values{1, 0, 2}));
  EXPECT_EQ(shape(std::get<0>(sort(empty({0, 4}), 1))), (Shape{0, 4}));
}

TEST_F(ShapeIndexing, TopkLargestAndSmallest) {
  Tensor x = make({1, 5, 3, 5, 2, 4}, {2, 3}, ScalarType::BFloat16);
  auto [v, i] = topk(x, 2);
  EXPECT_EQ(values(v), (Values{5, 3, 5, 4}));
  EXPECT_EQ(values(i), (Values{1, 2, 0, 2}));
  auto [sv, si] = topk(x, 1, 0, false);
  EXPECT_EQ(values(sv), (Values{1, 2, 3}));
  EXPECT_EQ(values(si), (Values{0, 1, 0}));
  EXPECT_EQ(shape(std::get<1>(topk(x, 0))), (Shape{2, 0}));
  expect_error([&] { topk(x, 4); }, "loom::topk", "expected k in [0, 3]");
}

TEST_F(ShapeIndexing, FlipRollRepeat) {
  Tensor x = make(k23, {2, 3});
  EXPECT_EQ(values(flip(x, {0, -1})), (Values{6, 5, 4, 3, 2, 1}));
  EXPECT_EQ(values(flip(x.t(), {1})), (Values{4, 1, 5, 2, 6, 3}));
  EXPECT_EQ(values(roll(x, 1)), (Values{6, 1, 2, 3, 4, 5}));
  EXPECT_EQ(values(roll(x, {1, -1}, {0, 1})), (Values{5, 6, 4, 2, 3, 1}));
  EXPECT_EQ(values(roll(make({1, 0, 0}, {3}, ScalarType::Bool), 4, 0)), (Values{0, 1, 0}));
  Tensor r = repeat(make({1, 2}, {2}, ScalarType::Int64), {2, 2});
  EXPECT_EQ(shape(r), (Shape{2, 4}));
  EXPECT_EQ(values(r), (Values{1, 2, 1, 2, 1, 2, 1, 2}));
  EXPECT_EQ(shape(repeat(x, {0, 1})), (Shape{0, 3}));
  EXPECT_EQ(values(repeat(make({7}, {}), {3})), (Values{7, 7, 7}));
  expect_error([&] { repeat(x, {2}); }, "loom::repeat", "expected at least 2 repeats");
  expect_error([&] { flip(x, {0, 0}); }, "loom::flip", "appears more than once");
  expect_error([&] { roll(x, {1, 2}, {0}); }, "loom::roll", "as many shifts as dims");
}

TEST_F(ShapeIndexing, TrilTriuAndInPlace) {
  Tensor x = make({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3});
  EXPECT_EQ(values(tril(x)), (Values{1, 0, 0, 4, 5, 0, 7, 8, 9}));
  EXPECT_EQ(values(triu(x, 1)), (Values{0, 2, 3, 0, 0, 6, 0, 0, 0}));
  EXPECT_EQ(values(tril(x.t(), -1)), (Values{0, 0, 0, 2, 0, 0, 3, 6, 0}));
  Tensor h = make({1, 2, 3, 4}, {1, 2, 2}, ScalarType::Float16);
  h.triu_();
  EXPECT_EQ(values(h), (Values{1, 2, 0, 4}));
  expect_error([&] { tril(make({1}, {1})); }, "loom::tril", "at least 2 dims");
}

TEST_F(ShapeIndexing, NonzeroAndAdvancedIndexing) {
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

TEST_F(ShapeIndexing, EdgeCasesFromReview) {
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

TEST_F(ShapeIndexing, MetaDeviceRunsOnlyTheShapeRule) {
  TensorOptions meta = TensorOptions().device(Device{kMeta, -1});
  Tensor m = empty({4, 5}, meta);
  EXPECT_EQ(shape(cat({m, empty({4, 2}, meta)}, 1)), (Shape{4, 7}));
  EXPECT_EQ(shape(stack({m, m})), (Shape{2, 4, 5}));
  auto [v, i] = topk(m, 3, 0);
  EXPECT_EQ(shape(v), (Shape{3, 5}));
  EXPECT_EQ(i.dtype(), ScalarType::Int64);
  EXPECT_EQ(shape(gather(m, 1, empty({2, 3}, meta.dtype(ScalarType::Int64)))), (Shape{2, 3}));
  EXPECT_EQ(shape(repeat(m, {2, 1, 3})), (Shape{2, 4, 15}));
  EXPECT_EQ(shape(triu(m)), (Shape{4, 5}));
  EXPECT_EQ(shape(argsort(m)), (Shape{4, 5}));
}

TEST_F(ShapeIndexing, BadInputsGetErrorsNamingTheOp) {
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

}  // namespace
}  // namespace loom::testing
