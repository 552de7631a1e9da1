// The shape ops through the typed API, against hand-computed values: cat/stack,
// split/chunk/flatten/reshape views, flip/roll/repeat, tril/triu, pad, and Core ATen's
// split_with_sizes, constant_pad_nd, select_scatter and slice_scatter, on strided,
// zero-size and several-dtype inputs, in-place variants, the meta device, and the errors.
#include <cmath>

#include "ops_test_util.h"

namespace loom::testing {
namespace {

class ShapeOps : public OpsTest {};

TEST_F(ShapeOps, CatAlongDimsWithPromotionAndLegacyEmpty) {
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

// Note [Contiguous cat]: contiguous inputs copy as byte ranges split over the thread
// pool (here over many 64 KiB grains, pieces of blocks at both ends of each range),
// an empty block in between; a strided input takes the strided loop.
TEST_F(ShapeOps, CatOfLargeInputsAlongEveryDim) {
  const Shape sizes_a{40, 30, 50};
  Tensor a = make(wave(40 * 30 * 50), sizes_a);
  const Values va = values(a);
  for (int64_t dim : {0, 1, 2}) {
    const size_t ud = static_cast<size_t>(dim);
    Shape sizes_b = sizes_a, empty_shape = sizes_a, expected_shape = sizes_a;
    sizes_b[ud] = 23;  // uneven: the threads' ranges start inside blocks
    empty_shape[ud] = 0;
    expected_shape[ud] += 23;
    Tensor b = make(wave(static_cast<size_t>(sizes_b[0] * sizes_b[1] * sizes_b[2]), 1.0), sizes_b);
    const Values vb = values(b);
    for (bool strided : {false, true}) {
      Tensor second = strided ? b.transpose(0, 2).contiguous().transpose(0, 2) : b;
      Tensor nothing = loom::empty(empty_shape);
      Tensor c = cat(std::vector<Tensor>{a, nothing, second}, dim);
      ASSERT_EQ(shape(c), expected_shape);
      const Values vc = values(c);
      size_t mismatches = 0;
      for (size_t i = 0; i < vc.size(); ++i) {
        // the index of element i of c, and the input element it comes from
        const int64_t n = static_cast<int64_t>(i);
        int64_t idx[3] = {n / (expected_shape[1] * expected_shape[2]),
                          n / expected_shape[2] % expected_shape[1], n % expected_shape[2]};
        const bool from_b = idx[dim] >= sizes_a[ud];
        if (from_b) idx[dim] -= sizes_a[ud];
        const Shape& from = from_b ? sizes_b : sizes_a;
        const int64_t flat = (idx[0] * from[1] + idx[1]) * from[2] + idx[2];
        mismatches += vc[i] != (from_b ? vb : va)[static_cast<size_t>(flat)];
      }
      EXPECT_EQ(mismatches, 0u) << "dim " << dim << (strided ? ", strided" : "");
    }
  }
}

TEST_F(ShapeOps, StackInsertsANewDim) {
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

TEST_F(ShapeOps, SplitChunkFlattenReshapeAreViewsWhenPossible) {
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

TEST_F(ShapeOps, FlipRollRepeat) {
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

TEST_F(ShapeOps, TrilTriuAndInPlace) {
  Tensor x = make({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3});
  EXPECT_EQ(values(tril(x)), (Values{1, 0, 0, 4, 5, 0, 7, 8, 9}));
  EXPECT_EQ(values(triu(x, 1)), (Values{0, 2, 3, 0, 0, 6, 0, 0, 0}));
  EXPECT_EQ(values(tril(x.t(), -1)), (Values{0, 0, 0, 2, 0, 0, 3, 6, 0}));
  Tensor h = make({1, 2, 3, 4}, {1, 2, 2}, ScalarType::Float16);
  h.triu_();
  EXPECT_EQ(values(h), (Values{1, 2, 0, 4}));
  expect_error([&] { tril(make({1}, {1})); }, "loom::tril", "at least 2 dims");
}

TEST_F(ShapeOps, PadConstantReflectReplicateCircular) {
  Tensor x = make({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor p = pad(x, {1, 2});
  EXPECT_EQ(shape_of(p), (Shape{2, 6}));
  EXPECT_EQ(values(p), (Values{0, 1, 2, 3, 0, 0, 0, 4, 5, 6, 0, 0}));
  EXPECT_EQ(values(pad(x, {0, 0, 1, 0}, "constant", 7.0)), (Values{7, 7, 7, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(values(pad(x, {-1, 1})), (Values{2, 3, 0, 5, 6, 0}));  // negative pads crop
  EXPECT_EQ(shape_of(pad(x, {-3, 0})), (Shape{2, 0}));
  EXPECT_EQ(values(pad(x.t(), {1, 0})), (Values{0, 1, 4, 0, 2, 5, 0, 3, 6}));  // strided
  EXPECT_EQ(values(pad(x, {2, 1}, "reflect")), (Values{3, 2, 1, 2, 3, 2, 6, 5, 4, 5, 6, 5}));
  EXPECT_EQ(values(pad(x, {1, 2}, "replicate")), (Values{1, 1, 2, 3, 3, 3, 4, 4, 5, 6, 6, 6}));
  EXPECT_EQ(values(pad(x, {1, 2}, "circular")), (Values{3, 1, 2, 3, 1, 2, 6, 4, 5, 6, 4, 5}));
  EXPECT_EQ(values(pad(x, {0, 0, 1, 1}, "replicate")),
            (Values{1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6}));
  Tensor i = pad(make({1, 2}, {2}, ScalarType::Int32), {1, 1}, "constant", 9.0);
  EXPECT_EQ(i.dtype(), ScalarType::Int32);
  EXPECT_EQ(values(i), (Values{9, 1, 2, 9}));
  EXPECT_EQ(shape_of(pad(empty({0, 2}), {1, 1})), (Shape{0, 4}));
}

// Core ATen IR's forms, pinned to PyTorch.
TEST_F(ShapeOps, SplitWithSizesConstantPadAndTheScatters) {
  Tensor x = make({1, 2, 3, 4, 5, 6}, {2, 3});
  // torch.split_with_sizes(x, [1, 2], 1): views [[1], [4]] and [[2, 3], [5, 6]]
  std::vector<Tensor> parts = split_with_sizes(x, {1, 2}, 1);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_TRUE(parts[1].is_alias_of(x));
  EXPECT_EQ(values(parts[0]), (Values{1, 4}));
  EXPECT_EQ(values(parts[1]), (Values{2, 3, 5, 6}));
  // "split_with_sizes expects split_sizes to sum exactly to 3 ..."
  expect_error(
      [&] {
        split_with_sizes(x, {1, 1}, 1);
      },
      "loom::split_with_sizes",
      "expected split_sizes to sum to 3 (the size of dim 1), found [1, 1] summing to 2");
  // torch.constant_pad_nd(torch.tensor([1, 2]), [1, 1], 9) -> tensor([9, 1, 2, 9])
  Tensor padded = constant_pad_nd(make({1, 2}, {2}, ScalarType::Int64), {1, 1}, 9);
  EXPECT_EQ(padded.dtype(), ScalarType::Int64);
  EXPECT_EQ(values(padded), (Values{9, 1, 2, 9}));
  // torch.select_scatter(x, torch.tensor([7., 8.]), 1, 2): column 2 replaced, x unchanged
  Tensor selected = select_scatter(x, make({7, 8}, {2}), 1, 2);
  EXPECT_EQ(values(selected), (Values{1, 2, 7, 4, 5, 8}));
  EXPECT_EQ(values(x), (Values{1, 2, 3, 4, 5, 6}));
  // torch.slice_scatter(torch.zeros(6), torch.ones(2), start=1, end=5, step=2)
  Tensor sliced = slice_scatter(zeros({6}), ones({2}), 0, 1, 5, 2);
  EXPECT_EQ(values(sliced), (Values{0, 1, 0, 1, 0, 0}));
  expect_error([&] { slice_scatter(zeros({6}), ones({3}), 0, 1, 5, 2); }, "loom::slice_scatter",
               "expected src of the slice's shape [2], found [3]");
}

// Kept whole across families: also topk and argsort (sort) and gather (indexing).
// Note [Memory format codes]: 1 contiguous_format, 2 channels_last, 3 channels_last_3d.
TEST_F(ShapeOps, SymIsContiguousAsksOfEachMemoryFormat) {
  Tensor x = make(Values(24, 1.0), {1, 2, 3, 4});
  EXPECT_TRUE(sym_is_contiguous(x));
  EXPECT_FALSE(sym_is_contiguous(x, 2));
  Tensor nhwc = x.contiguous(MemoryFormat::ChannelsLast);
  EXPECT_FALSE(sym_is_contiguous(nhwc, 1));
  EXPECT_TRUE(sym_is_contiguous(nhwc, 2));
  // NDHWC: C innermost, then W, H, D
  Tensor ndhwc = make(Values(24, 1.0), {1, 2, 3, 2, 2})
                     .permute({0, 2, 3, 4, 1})
                     .contiguous()
                     .permute({0, 4, 1, 2, 3});
  EXPECT_TRUE(sym_is_contiguous(ndhwc, 3));
  EXPECT_FALSE(sym_is_contiguous(x, 3));
  expect_error([&] { sym_is_contiguous(x, 4); }, "loom::sym_is_contiguous",
               "expected memory_format torch.contiguous_format (1), torch.channels_last (2) or "
               "torch.channels_last_3d (3), found 4");
}

TEST_F(ShapeOps, MetaDeviceRunsOnlyTheShapeRule) {
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

TEST_F(ShapeOps, PixelShuffleAndUnshuffle) {
  Tensor x = make({0, 1, 2, 3, 4, 5, 6, 7}, {1, 4, 1, 2});
  // torch.nn.functional.pixel_shuffle(torch.arange(8.).view(1, 4, 1, 2), 2)
  // -> [[[[0., 2., 1., 3.], [4., 6., 5., 7.]]]]
  Tensor up = pixel_shuffle(x, 2);
  EXPECT_EQ(shape(up), (Shape{1, 1, 2, 4}));
  EXPECT_EQ(values(up), (Values{0, 2, 1, 3, 4, 6, 5, 7}));
  Tensor down = pixel_unshuffle(up, 2);
  EXPECT_EQ(shape(down), (Shape{1, 4, 1, 2}));
  EXPECT_EQ(values(down), values(x));
  expect_error(
      [&] {
        pixel_shuffle(loom::zeros({1, 3, 2, 2}), 2);
      },
      "loom::pixel_shuffle", "expected channels divisible by the factor squared (4), found 3");
  expect_error(
      [&] {
        pixel_unshuffle(loom::zeros({1, 1, 3, 2}), 2);
      },
      "loom::pixel_unshuffle",
      "expected height and width divisible by the factor 2, found 3 and 2");
  expect_error(
      [&] {
        pixel_shuffle(loom::zeros({4, 2}), 2);
      },
      "loom::pixel_shuffle", "at least 3 dims");
}

}  // namespace
}  // namespace loom::testing
