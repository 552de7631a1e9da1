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

}  // namespace
}  // namespace loom::testing
