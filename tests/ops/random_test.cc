// The random ops of the op library through the typed API: multinomial's frequencies with
// and without replacement, its reproducibility under manual_seed, and its errors.
#include <limits>
#include <set>

#include "loom/random.h"
#include "ops_test_util.h"

namespace loom::testing {
namespace {

class Random : public OpsTest {};

// Note [multinomial]
TEST_F(Random, MultinomialDrawsInProportionToTheWeights) {
  manual_seed(5);
  const int64_t draws = 20000;
  Tensor weights = make({1, 0, 6, 3}, {4});  // not normalised: 0.1, 0, 0.6, 0.3
  Tensor samples = multinomial(weights, draws, true);
  ASSERT_EQ(shape(samples), (Shape{draws}));
  EXPECT_EQ(samples.dtype(), ScalarType::Int64);
  Values drawn = values(samples);
  std::vector<double> frequency(4, 0.0);
  for (double d : drawn) {
    ASSERT_GE(d, 0);
    ASSERT_LT(d, 4);
    frequency[static_cast<size_t>(d)] += 1.0 / draws;
  }
  EXPECT_EQ(frequency[1], 0.0);  // zero weight: never drawn
  EXPECT_NEAR(frequency[0], 0.1, 0.015);
  EXPECT_NEAR(frequency[2], 0.6, 0.015);
  EXPECT_NEAR(frequency[3], 0.3, 0.015);
  // The same seed gives the same draws.
  manual_seed(5);
  EXPECT_EQ(values(multinomial(weights, draws, true)), drawn);
}

TEST_F(Random, MultinomialWithoutReplacementDrawsDistinctCategories) {
  manual_seed(9);
  Tensor weights = make({1, 0, 2, 1, 5, 5, 5, 5}, {2, 4});
  Tensor samples = multinomial(weights, 4);
  ASSERT_EQ(shape(samples), (Shape{2, 4}));
  Values v = values(samples);
  for (int row = 0; row < 2; ++row) {
    std::set<double> seen(v.begin() + row * 4, v.begin() + row * 4 + 4);
    EXPECT_EQ(seen.size(), 4u) << "row " << row;
  }
  EXPECT_EQ(v[3], 1);  // the zero-weight category comes last
  // The heaviest category is drawn first most often: weights [1, 8, 1] -> category 1 leads
  // about 8 times in 10.
  int first_is_heaviest = 0;
  for (int trial = 0; trial < 400; ++trial) {
    first_is_heaviest += values(multinomial(make({1, 8, 1}, {3}), 1))[0] == 1;
  }
  EXPECT_NEAR(first_is_heaviest / 400.0, 0.8, 0.07);
}

TEST_F(Random, MultinomialErrors) {
  const double inf = std::numeric_limits<double>::infinity();
  // torch.multinomial(torch.tensor([1., -1]), 1) raises "probability tensor contains either
  // `inf`, `nan` or element < 0"
  expect_error(
      [&] {
        multinomial(make({1, -1}, {2}), 1);
      },
      "loom::multinomial", "probability tensor contains either `inf`, `nan` or element < 0");
  expect_error(
      [&] {
        multinomial(make({1, inf}, {2}), 1);
      },
      "loom::multinomial", "probability tensor contains either `inf`, `nan` or element < 0");
  expect_error(
      [&] {
        multinomial(make({0, 0}, {2}), 1);
      },
      "loom::multinomial", "invalid multinomial distribution (sum of probabilities <= 0)");
  expect_error(
      [&] {
        multinomial(make({1, 1}, {2}), 3);
      },
      "loom::multinomial",
      "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  expect_error(
      [&] {
        multinomial(make({1, 1}, {2}), 0, true);
      },
      "loom::multinomial", "cannot sample n_sample <= 0 samples");
  expect_error(
      [&] {
        multinomial(loom::ones({1, 1, 2}), 1);
      },
      "loom::multinomial", "prob_dist must be 1 or 2 dim");
  expect_error(
      [&] {
        multinomial(make({1, 1}, {2}, ScalarType::Int64), 1);
      },
      "loom::multinomial", "only supports floating-point dtypes");
}

}  // namespace
}  // namespace loom::testing

namespace loom::testing {
namespace {

// Note [Argument checks]: the op library refuses bad distribution parameters before any
// backend runs, so meta tensors (whose kernel does nothing) get the CPU's messages too,
// and the message has one spelling ("%g"-like numbers) whatever the backend.
TEST_F(Random, ArgumentChecksRunBeforeTheBackendOnEveryDevice) {
  for (Device device : {Device{kCPU, -1}, Device{kMeta, -1}}) {
    const TensorOptions on = TensorOptions().device(device);
    Tensor f = empty({3}, on);
    expect_error([&] { uniform_(f, 2.0, 1.0); }, "loom::uniform_",
                 "expected from <= to, found from=2 to=1");
    expect_error([&] { uniform_(empty({2}, on.dtype(ScalarType::Float16)), 0.0, 1e6); },
                 "loom::uniform_", "expected bounds within the finite range of float16");
    expect_error([&] { normal_(f, 0.0, -0.5); }, "loom::normal_",
                 "expected std >= 0, found std=-0.5");
    expect_error([&] { bernoulli_(f, 1.5); }, "loom::bernoulli_.float",
                 "expected p in [0, 1], found p=1.5");
    expect_error([&] { dropout(f, -0.25, true); }, "loom::dropout",
                 "expected p in [0, 1], found p=-0.25");
  }
  // Within the checks, the meta device computes nothing and refuses nothing.
  Tensor m = empty({3}, TensorOptions().device(Device{kMeta, -1}));
  EXPECT_EQ(uniform_(m, -1.0, 1.0).device().type, kMeta);
}

}  // namespace
}  // namespace loom::testing
