// embedding and one_hot through the typed API, against hand-computed values: int32 and
// int64 indices, strided weights and indices, several dtypes, zero-size inputs.
#include "ops_test_util.h"

namespace loom::testing {
namespace {

class Embedding : public OpsTest {};

TEST_F(Embedding, EmbeddingGathersRows) {
  Values w = wave(15);
  Tensor weight = make(w, {5, 3});
  for (ScalarType it : {ScalarType::Int64, ScalarType::Int32}) {
    Tensor idx = make({4, 0, 4, 2}, {2, 2}, it);
    Tensor out = embedding(weight, idx);
    EXPECT_EQ(shape_of(out), (Shape{2, 2, 3}));
    Values expected;
    for (int i : {4, 0, 4, 2})
      for (int j = 0; j < 3; ++j) expected.push_back(static_cast<float>(w[i * 3 + j]));
    expect_close(values(out), expected);
  }
  // strided weight (transposed) and indices (sliced); other dtypes copy exactly
  Tensor wt = make(w, {3, 5}, ScalarType::Float16).t();                    // [5, 3]
  Tensor idx = make({1, 9, 3}, {3}, ScalarType::Int64).slice(0, 0, 3, 2);  // {1, 3}
  Values expected;
  for (int i : {1, 3})
    for (int j = 0; j < 3; ++j)
      expected.push_back(values(make({w[j * 5 + i]}, {1}, ScalarType::Float16))[0]);
  expect_close(values(embedding(wt, idx)), expected, 0);
  EXPECT_EQ(values(embedding(make({1, 2, 3, 4}, {2, 2}, ScalarType::Int32),
                             make({1}, {}, ScalarType::Int64))),
            (Values{3, 4}));
  EXPECT_EQ(shape_of(embedding(weight, empty({0}, TensorOptions().dtype(ScalarType::Int64)))),
            (Shape{0, 3}));
}

TEST_F(Embedding, OneHot) {
  Tensor x = make({2, 0, 1}, {3}, ScalarType::Int64);
  Tensor y = one_hot(x);
  EXPECT_EQ(y.dtype(), ScalarType::Int64);
  EXPECT_EQ(shape_of(y), (Shape{3, 3}));
  EXPECT_EQ(values(y), (Values{0, 0, 1, 1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(shape_of(one_hot(make({1, 0, 1, 1}, {2, 2}, ScalarType::Int64).t(), 4)),
            (Shape{2, 2, 4}));
  EXPECT_EQ(values(one_hot(make({1, 0, 1, 1}, {2, 2}, ScalarType::Int64).t(), 2)),
            (Values{0, 1, 0, 1, 1, 0, 0, 1}));
  EXPECT_EQ(shape_of(one_hot(empty({0}, TensorOptions().dtype(ScalarType::Int64)), 5)),
            (Shape{0, 5}));
}

TEST_F(Embedding, EmbeddingBagSumsMeansAndMaxima) {
  // w = torch.arange(12., dtype=torch.float64).view(6, 2) * torch.tensor([1., -1.])
  Tensor w = make({0, -1, 2, -3, 4, -5, 6, -7, 8, -9, 10, -11}, {6, 2}, ScalarType::Float64);
  Tensor idx = make({1, 2, 4, 5, 4, 3, 0}, {7}, ScalarType::Int64);
  Tensor off = make({0, 2, 2, 5}, {4}, ScalarType::Int64);  // bag 1 is empty
  // torch.ops.aten.embedding_bag(w, idx, off, False, mode) for mode 0, 1, 2
  auto [sum, offset2bag, sum_sizes, unused] = embedding_bag(w, idx, off, false, 0);
  EXPECT_EQ(values(sum), (Values{6, -8, 0, 0, 26, -29, 6, -8}));
  EXPECT_EQ(values(offset2bag), (Values{0, 0, 2, 2, 2, 3, 3}));
  EXPECT_EQ(values(sum_sizes), (Values{2, 0, 3, 2}));  // PyTorch's CPU kernel: zeros here
  auto [mean, o2, sizes, mean_max_indices] = embedding_bag(w, idx, off, false, 1);
  expect_close(values(mean), {3, -4, 0, 0, 26.0 / 3, -29.0 / 3, 3, -4});
  EXPECT_EQ(values(sizes), (Values{2, 0, 3, 2}));
  EXPECT_EQ(values(mean_max_indices), (Values{2, 0, 3, 2}));
  auto [max, o3, s3, max_indices] = embedding_bag(w, idx, off, false, 2);
  EXPECT_EQ(values(max), (Values{4, -3, 0, 0, 10, -9, 6, -1}));
  EXPECT_EQ(values(max_indices), (Values{2, 1, 0, 0, 5, 4, 3, 0}));

  // torch.ops.aten.embedding_bag.padding_idx(w, idx, off, False, 0, False,
  //     torch.tensor([1., 2., 0.5, 1., 1., 1., -1.]), False, 4)
  Tensor psw = make({1, 2, 0.5, 1, 1, 1, -1}, {7}, ScalarType::Float64);
  EXPECT_EQ(values(std::get<0>(embedding_bag(w, idx, off, false, 0, false, psw, false, 4))),
            (Values{10, -13, 0, 0, 10, -11, 6, -6}));
  // include_last_offset: 3 bags; the last runs to the end of the indices, as in PyTorch:
  // torch.ops.aten.embedding_bag.padding_idx(w, idx, off, False, 1, False, None, True, None)
  auto [last, o4, last_sizes, i4] = embedding_bag(w, idx, off, false, 1, false, std::nullopt, true);
  expect_close(values(last), {3, -4, 0, 0, 6.4, -7.4});
  EXPECT_EQ(values(last_sizes), (Values{2, 0, 5}));
  // int32 indices and offsets; the meta device gives the shapes.
  EXPECT_EQ(
      shape(std::get<0>(embedding_bag(w, idx.to(ScalarType::Int32), off.to(ScalarType::Int32)))),
      (Shape{4, 2}));
  TensorOptions meta = TensorOptions().device(Device{kMeta, -1});
  auto [m0, m1, m2, m3] =
      embedding_bag(empty({6, 2}, meta), empty({7}, meta.dtype(ScalarType::Int64)),
                    empty({4}, meta.dtype(ScalarType::Int64)), false, 2);
  EXPECT_EQ(shape(m0), (Shape{4, 2}));
  EXPECT_EQ(shape(m3), (Shape{4, 2}));
}

// Core ATen IR's _embedding_bag is embedding_bag with padding_idx -1 for none.
TEST_F(Embedding, CoreAtenEmbeddingBagMatchesEmbeddingBag) {
  Tensor weight = make({0, 1, 2, 3, 4, 5, 6, 7}, {4, 2});
  Tensor indices = make({0, 2, 2, 3}, {4}, ScalarType::Int64);
  Tensor offsets = make({0, 1}, {2}, ScalarType::Int64);
  for (int64_t mode : {0, 1, 2}) {
    auto ours = _embedding_bag(weight, indices, offsets, false, mode);
    auto theirs = embedding_bag(weight, indices, offsets, false, mode);
    EXPECT_EQ(values(std::get<0>(ours)), values(std::get<0>(theirs))) << "mode " << mode;
  }
  auto padded = _embedding_bag(weight, indices, offsets, false, 0, false, std::nullopt, false, 2);
  EXPECT_EQ(values(std::get<0>(padded)), (Values{0, 1, 6, 7}));
  expect_error(
      [&] { _embedding_bag(weight, indices, offsets, false, 0, false, std::nullopt, false, -2); },
      "loom::_embedding_bag", "expected padding_idx -1 (none) or a row index, found -2");
}

TEST_F(Embedding, EmbeddingBagErrors) {
  Tensor w = empty({6, 2});
  Tensor idx = make({1, 2, 3}, {3}, ScalarType::Int64);
  // PyTorch: "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to
  // start from position 0. However, got 1"
  expect_error(
      [&] {
        embedding_bag(w, idx, make({1, 2}, {2}, ScalarType::Int64));
      },
      "loom::embedding_bag", "offsets[0] has to be 0");
  expect_error(
      [&] {
        embedding_bag(w, idx, make({0, 2, 1}, {3}, ScalarType::Int64));
      },
      "loom::embedding_bag", "expected non-decreasing offsets within the 3 indices");
  expect_error(
      [&] {
        embedding_bag(w, make({1, 6}, {2}, ScalarType::Int64), make({0}, {1}, ScalarType::Int64));
      },
      "loom::embedding_bag", "index 6 is out of range for a weight of 6 rows");
  expect_error(
      [&] {
        embedding_bag(w, idx, make({0}, {1}, ScalarType::Int64), false, 1, false, empty({3}));
      },
      "loom::embedding_bag", "per_sample_weights is only supported for mode='sum'");
  expect_error([&] { embedding_bag(w, idx, make({0}, {1}, ScalarType::Int64), false, 3); },
               "loom::embedding_bag", "expected mode 0 (sum), 1 (mean) or 2 (max), found 3");
  expect_error(
      [&] { embedding_bag(w, idx.to(ScalarType::Float32), make({0}, {1}, ScalarType::Int64)); },
      "loom::embedding_bag", "expected 1-D int64 or int32 indices, found [3] float32");
}

}  // namespace
}  // namespace loom::testing
