// Pointwise ops with masks, three operands or modes: where, masked_fill, lerp, addcmul,
// addcdiv and div's rounding modes (broadcasting, promotion, in-place, errors).
#include <cmath>

#include "ops_test_util.h"

namespace loom::testing {
namespace {

class Ternary : public OpsTest {};

TEST_F(Ternary, WhereBroadcastsAndPromotesOnlyTheValues) {
  Tensor cond = make({1, 0, 1}, {3}, ScalarType::Bool);
  Tensor x = make({1, 2, 3, 4, 5, 6}, {2, 3}, ScalarType::Int32);
  Tensor y = make({-1}, {1}, ScalarType::Float64);
  Tensor r = where(cond, x, y);
  EXPECT_EQ(r.dtype(), ScalarType::Float64);
  EXPECT_EQ(shape(r), (Shape{2, 3}));
  EXPECT_EQ(values(r), (Values{1, -1, 3, 4, -1, 6}));
  EXPECT_EQ(values(where(cond, x.t().t(), wrapped_scalar(0))), (Values{1, 0, 3, 4, 0, 6}));
  EXPECT_EQ(where(cond, x, wrapped_scalar(0)).dtype(), ScalarType::Int32);
}

TEST_F(Ternary, MaskedFillKeepsSelfsDtypeAndWorksInPlace) {
  Tensor x = make({1, 2, 3, 4}, {2, 2}, ScalarType::Int64);
  Tensor mask = make({1, 0}, {2}, ScalarType::Bool);  // broadcast over rows
  EXPECT_EQ(values(masked_fill(x, mask, 9)), (Values{9, 2, 9, 4}));
  EXPECT_EQ(masked_fill(x, mask, 9).dtype(), ScalarType::Int64);
  Tensor f = make({1, 2, 3, 4}, {2, 2}, ScalarType::Float16);
  f.masked_fill_(make({0, 1, 1, 0}, {2, 2}, ScalarType::Bool), -INFINITY);
  EXPECT_EQ(values(f), (Values{1, -INFINITY, -INFINITY, 4}));
}

// Long irregular masks run the branch-free vector loops: every element must pick its own
// side, NaNs and signed zeros kept bit for bit, for each element width.
TEST_F(Ternary, WhereAndMaskedFillOnLongIrregularMasks) {
  const int64_t n = 1000;
  Values mask_values, x_floats, x_ints, y_values;
  for (int64_t i = 0; i < n; ++i) {
    mask_values.push_back((i * 7919 % 13) < 6 ? 1 : 0);
    x_floats.push_back(i % 5 == 0 ? -0.0 : (i % 11 == 0 ? NAN : static_cast<double>(i % 100)));
    x_ints.push_back(static_cast<double>(i % 100));
    y_values.push_back(-static_cast<double>(i % 50) - 1);
  }
  Tensor mask = make(mask_values, {n}, ScalarType::Bool);
  for (ScalarType t : {ScalarType::Float32, ScalarType::Float64, ScalarType::Float16,
                       ScalarType::Int16, ScalarType::Int8}) {
    const bool floating =
        t == ScalarType::Float32 || t == ScalarType::Float64 || t == ScalarType::Float16;
    Tensor x = make(floating ? x_floats : x_ints, {n}, t);
    Tensor y = make(y_values, {n}, t);
    Values picked = values(where(mask, x, y)), filled = values(masked_fill(x, mask, 2));
    Values xs = values(x), ys = values(y);
    for (int64_t i = 0; i < n; ++i) {
      const double want = mask_values[i] != 0 ? xs[i] : ys[i];
      const double fill = mask_values[i] != 0 ? 2.0 : xs[i];
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(picked[i])) << i;
      } else {
        EXPECT_EQ(picked[i], want) << i;
        EXPECT_EQ(std::signbit(picked[i]), std::signbit(want)) << i;
      }
      if (std::isnan(fill)) {
        EXPECT_TRUE(std::isnan(filled[i])) << i;
      } else {
        EXPECT_EQ(filled[i], fill) << i;
        EXPECT_EQ(std::signbit(filled[i]), std::signbit(fill)) << i;
      }
    }
  }
}

TEST_F(Ternary, LerpAddcmulAddcdiv) {
  Tensor a = make({0, 10}, {2}), b = make({10, 20}, {2});
  expect_close(values(lerp(a, b, 0.25)), {2.5, 12.5});
  EXPECT_EQ(values(lerp(a, b, 1.0)), (Values{10, 20}));  // exact at weight 1
  expect_close(values(lerp(a, b, make({0.5, 1}, {2}))), {5, 20});
  Tensor s = make({1, 1}, {2});
  expect_close(values(addcmul(s, a, b, 0.5)), {1, 101});
  expect_close(values(addcdiv(s, b, make({2, 4}, {2}), 2)), {11, 11});
  EXPECT_EQ(values(addcmul(make({1}, {1}, ScalarType::Int32), make({2, 3}, {2}, ScalarType::Int32),
                           make({4}, {1}, ScalarType::Int32), 2)),
            (Values{17, 25}));
  Tensor inplace = make({1, 2}, {2}, ScalarType::Float64);
  inplace.addcmul_(inplace, inplace);
  EXPECT_EQ(values(inplace), (Values{2, 6}));
}

TEST_F(Ternary, DivRoundingModes) {
  Tensor x = make({7, -7, 7, -7}, {4}, ScalarType::Int64);
  Tensor y = make({2, 2, -2, -2}, {4}, ScalarType::Int64);
  EXPECT_EQ(values(div(x, y, std::string("trunc"))), (Values{3, -3, -3, 3}));
  EXPECT_EQ(values(div(x, y, std::string("floor"))), (Values{3, -4, -4, 3}));
  EXPECT_EQ(div(x, y, std::string("floor")).dtype(), ScalarType::Int64);
  Tensor true_div = div(x, y, std::nullopt);
  EXPECT_EQ(true_div.dtype(), ScalarType::Float32);
  EXPECT_EQ(values(true_div), (Values{3.5, -3.5, -3.5, 3.5}));
  Tensor fx = make({7.5, -7.5}, {2}, ScalarType::Float32);
  EXPECT_EQ(values(div(fx, make({2}, {1}), std::string("floor"))), (Values{3, -4}));
  EXPECT_EQ(values(div(fx, make({2}, {1}), std::string("trunc"))), (Values{3, -3}));
}

// Floor division of floats is Python's (PyTorch's div_floor_floating), values from
// torch.div(a, b, rounding_mode="floor") with the same a and b.
TEST_F(Ternary, DivFloorEdgeCasesMatchPython) {
  const double inf = INFINITY;
  Tensor a = make({inf, -inf, 5, -5, 1, -0.0, 5, 1, -1, 0}, {10}, ScalarType::Float64);
  Tensor b = make({2, 2, inf, inf, 0.1, 5, -inf, 0, 0, 0}, {10}, ScalarType::Float64);
  const Values floor = values(div(a, b, std::string("floor")));
  const Values expected = {NAN, NAN, 0, -1, 9, -0.0, -1, inf, -inf, NAN};
  ASSERT_EQ(floor.size(), expected.size());
  for (size_t i = 0; i < floor.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(floor[i])) << i << ": " << floor[i];
    } else {
      EXPECT_EQ(floor[i], expected[i]) << i;
      EXPECT_EQ(std::signbit(floor[i]), std::signbit(expected[i])) << i;  // -0.0 stays -0.0
    }
  }
  // trunc of inf / 2 stays inf (torch: inf); float32 gives the same as float64 here.
  EXPECT_EQ(values(div(make({inf}, {1}), make({2}, {1}), std::string("trunc"))), (Values{inf}));
  EXPECT_TRUE(std::isnan(values(div(make({inf}, {1}), make({2}, {1}), std::string("floor")))[0]));
}

TEST_F(Ternary, DivIntegerOverflowAndZeroRaise) {
  // The lowest int64 / -1 does not fit: loom raises where PyTorch's process dies of SIGFPE.
  Tensor lowest = make({-9223372036854775808.0}, {1}, ScalarType::Int64);
  Tensor minus_one = make({-1}, {1}, ScalarType::Int64);
  for (const char* mode : {"floor", "trunc"}) {
    expect_error([&] { div(lowest, minus_one, std::string(mode)); }, "loom::div.Tensor_mode",
                 "integer overflow: the lowest int64 divided by -1 does not fit the dtype");
  }
  expect_error(
      [&] {
        div(make({-2147483648.0}, {1}, ScalarType::Int32), make({-1}, {1}, ScalarType::Int32),
            std::string("floor"));
      },
      "loom::div.Tensor_mode", "the lowest int32 divided by -1");
  // int8 wraps, as in PyTorch: torch.div(torch.tensor([-128], dtype=torch.int8), -1,
  // rounding_mode="floor") -> tensor([-128])
  EXPECT_EQ(values(div(make({-128}, {1}, ScalarType::Int8), make({-1}, {1}, ScalarType::Int8),
                       std::string("floor"))),
            (Values{-128}));
  expect_error(
      [&] {
        div(make({1}, {1}, ScalarType::Int64), make({0}, {1}, ScalarType::Int64),
            std::string("trunc"));
      },
      "loom::div.Tensor_mode", "integer division by zero");
  // True division of integers by zero is a float division: torch.div(1, 0) -> inf.
  EXPECT_EQ(values(div(make({1}, {1}, ScalarType::Int64), make({0}, {1}, ScalarType::Int64),
                       std::nullopt)),
            (Values{INFINITY}));
}

TEST_F(Ternary, ZeroSizeAndMeta) {
  EXPECT_EQ(shape(where(empty({0, 2}, TensorOptions().dtype(ScalarType::Bool)), zeros({2}),
                        ones({0, 1}))),
            (Shape{0, 2}));
  Device meta{kMeta, -1};
  Tensor m = empty({3, 1}, TensorOptions().device(meta));
  EXPECT_EQ(shape(addcmul(m, empty({4}, TensorOptions().device(meta)), m)), (Shape{3, 4}));
}

TEST_F(Ternary, BadInputs) {
  Tensor x = make({1, 2}, {2});
  expect_error([&] { where(x, x, x); }, "loom::where.self", "expected a bool mask, found float32");
  expect_error(
      [&] {
        masked_fill(x, make({1, 0, 1}, {3}, ScalarType::Bool), 0);
      },
      "loom::masked_fill.Scalar", "cannot be broadcast");
  expect_error(
      [&] {
        div(make({1}, {1}, ScalarType::Int32), make({0}, {1}, ScalarType::Int32),
            std::string("trunc"));
      },
      "loom::div.Tensor_mode", "integer division by zero");
  expect_error([&] { div(x, x, std::string("round")); }, "loom::div.Tensor_mode",
               "expected rounding_mode None");
  expect_error(
      [&] {
        masked_fill(make({1}, {1}, ScalarType::Int32), make({1}, {1}, ScalarType::Bool), 0.5);
      },
      "loom::masked_fill.Scalar", "cannot be converted");
  expect_error(
      [&] { lerp(make({1}, {1}, ScalarType::Int32), make({1}, {1}, ScalarType::Int32), 0.5); },
      "loom::lerp.Scalar", "does not support dtype int32");
}

TEST_F(Ternary, MaskedFillRefusesValuesTheDtypeCannotHold) {
  // torch.zeros(2, dtype=torch.uint8).masked_fill(mask, 300) -> "value cannot be converted to
  // type uint8_t without overflow"
  Tensor u8 = loom::zeros({2}, TensorOptions().dtype(ScalarType::UInt8));
  Tensor mask = make({1, 0}, {2}, ScalarType::Bool);
  expect_error([&] { masked_fill(u8, mask, 300); }, "loom::masked_fill.Scalar",
               "value 300 of argument 'value' cannot be converted to type uint8 without overflow");
  expect_error([&] { masked_fill_(u8, mask, 300); }, "loom::masked_fill_.Scalar", "overflow");
  EXPECT_EQ(values(masked_fill(u8, mask, 255)), (Values{255, 0}));
}

}  // namespace
}  // namespace loom::testing
