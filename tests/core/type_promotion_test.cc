// Tests of type promotion and broadcasting: the promote_types lattice against PyTorch's
// table, result_type's operand tiers (dimensioned / zero-dim / scalar), broadcast_shapes,
// broadcast_strides and shape_to_string, and which Scalars fit a dtype.
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "loom/core/error.h"
#include "loom/core/scalar.h"
#include "loom/core/type_promotion.h"
#include "loom_error_assertions.h"

namespace loom {
namespace {

using Shape = std::vector<int64_t>;
using Tier = PromotionOperand::Tier;

Shape ToVec(IntArrayRef r) {
  return Shape(r.begin(), r.end());
}

std::string Name(ScalarType t) {
  return std::string(scalar_type_name(t));
}

constexpr ScalarType b1 = ScalarType::Bool;
constexpr ScalarType u1 = ScalarType::UInt8;
constexpr ScalarType i1 = ScalarType::Int8;
constexpr ScalarType i2 = ScalarType::Int16;
constexpr ScalarType i4 = ScalarType::Int32;
constexpr ScalarType i8 = ScalarType::Int64;
constexpr ScalarType f2 = ScalarType::Float16;
constexpr ScalarType bf = ScalarType::BFloat16;
constexpr ScalarType f4 = ScalarType::Float32;
constexpr ScalarType f8 = ScalarType::Float64;

// The ten non-quantized types, in enum order.
constexpr std::array<ScalarType, 10> kTypes = {b1, u1, i1, i2, i4, i8, f2, bf, f4, f8};

// PyTorch's promoteTypes table (c10/core/ScalarType.cpp) restricted to these types,
// rows and columns in kTypes order.
constexpr ScalarType kTable[10][10] = {
    /*       b1  u1  i1  i2  i4  i8  f2  bf  f4  f8 */
    /* b1 */ {b1, u1, i1, i2, i4, i8, f2, bf, f4, f8},
    /* u1 */ {u1, u1, i2, i2, i4, i8, f2, bf, f4, f8},
    /* i1 */ {i1, i2, i1, i2, i4, i8, f2, bf, f4, f8},
    /* i2 */ {i2, i2, i2, i2, i4, i8, f2, bf, f4, f8},
    /* i4 */ {i4, i4, i4, i4, i4, i8, f2, bf, f4, f8},
    /* i8 */ {i8, i8, i8, i8, i8, i8, f2, bf, f4, f8},
    /* f2 */ {f2, f2, f2, f2, f2, f2, f2, f4, f4, f8},
    /* bf */ {bf, bf, bf, bf, bf, bf, f4, bf, f4, f8},
    /* f4 */ {f4, f4, f4, f4, f4, f4, f4, f4, f4, f8},
    /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8, f8, f8},
};

// ---------------------------------------------------------------------------------------
// promote_types

TEST(PromoteTypes, PyTorchFacts) {
  EXPECT_EQ(promote_types(b1, i1), i1);
  EXPECT_EQ(promote_types(u1, i1), i2);
  EXPECT_EQ(promote_types(u1, i2), i2);
  EXPECT_EQ(promote_types(i4, i8), i8);
  EXPECT_EQ(promote_types(i8, f2), f2);
  EXPECT_EQ(promote_types(f2, bf), f4);
  EXPECT_EQ(promote_types(f4, f8), f8);
  EXPECT_EQ(promote_types(b1, b1), b1);
  EXPECT_EQ(promote_types(u1, b1), u1);
  EXPECT_EQ(promote_types(i8, bf), bf);
  EXPECT_EQ(promote_types(bf, f4), f4);
}

TEST(PromoteTypes, MatchesPyTorchTableForAllPairs) {
  for (size_t r = 0; r < kTypes.size(); ++r) {
    for (size_t c = 0; c < kTypes.size(); ++c) {
      EXPECT_EQ(promote_types(kTypes[r], kTypes[c]), kTable[r][c])
          << Name(kTypes[r]) << " + " << Name(kTypes[c]) << " gave "
          << Name(promote_types(kTypes[r], kTypes[c]));
    }
  }
}

TEST(PromoteTypes, SymmetricIdempotentAndAssociative) {
  for (ScalarType a : kTypes) {
    EXPECT_EQ(promote_types(a, a), a) << Name(a);
    EXPECT_EQ(promote_types(b1, a), a) << Name(a);   // bool is the bottom
    EXPECT_EQ(promote_types(f8, a), f8) << Name(a);  // float64 is the top
    for (ScalarType b : kTypes) {
      ScalarType ab = promote_types(a, b);
      EXPECT_EQ(ab, promote_types(b, a)) << Name(a) << " + " << Name(b);
      // The result holds both: promoting it with either operand changes nothing.
      EXPECT_EQ(promote_types(ab, a), ab) << Name(a) << " + " << Name(b);
      EXPECT_EQ(promote_types(ab, b), ab) << Name(a) << " + " << Name(b);
      // Order of folding inside a tier does not matter.
      for (ScalarType c : kTypes) {
        EXPECT_EQ(promote_types(ab, c), promote_types(a, promote_types(b, c)))
            << Name(a) << " + " << Name(b) << " + " << Name(c);
      }
    }
  }
}

TEST(PromoteTypes, IntegerWithFloatGivesTheFloat) {
  for (ScalarType i : {u1, i1, i2, i4, i8}) {
    for (ScalarType f : {f2, bf, f4, f8}) {
      EXPECT_EQ(promote_types(i, f), f) << Name(i) << " + " << Name(f);
    }
  }
}

// PyTorch's table for the complex types: complex with any real type stays complex, and
// becomes complex128 when either side is double precision.
TEST(PromoteTypes, ComplexWithEveryType) {
  constexpr ScalarType c8 = ScalarType::ComplexFloat, c16 = ScalarType::ComplexDouble;
  for (ScalarType t : kTypes) {
    const ScalarType wide = t == f8 ? c16 : c8;
    EXPECT_EQ(promote_types(c8, t), wide) << Name(t);
    EXPECT_EQ(promote_types(t, c8), wide) << Name(t);
    EXPECT_EQ(promote_types(c16, t), c16) << Name(t);
  }
  EXPECT_EQ(promote_types(c8, c16), c16);
  EXPECT_EQ(promote_types(c8, c8), c8);
}

TEST(PromoteTypes, RejectsQuantizedTypes) {
  EXPECT_LOOM_ERROR(promote_types(ScalarType::QInt8, f4), "type-promotion",
                    "cannot promote qint8 with float32: quantized types do not take part");
  EXPECT_LOOM_ERROR(promote_types(f4, ScalarType::QUInt8), "type-promotion",
                    "cannot promote float32 with quint8");
  EXPECT_LOOM_ERROR(promote_types(ScalarType::QInt32, ScalarType::QInt32), "type-promotion",
                    "qint32");
  for (ScalarType q : {ScalarType::QInt8, ScalarType::QUInt8, ScalarType::QInt32}) {
    for (ScalarType t : kTypes) {
      EXPECT_THROW(promote_types(q, t), Error);
      EXPECT_THROW(promote_types(t, q), Error);
    }
  }
}

// ---------------------------------------------------------------------------------------
// result_type

ScalarType Result(std::initializer_list<PromotionOperand> ops) {
  std::vector<PromotionOperand> v(ops);
  return result_type(v, "add");
}
PromotionOperand Dim(ScalarType t) {
  return {t, Tier::Dimensioned};
}
PromotionOperand Zero(ScalarType t) {
  return {t, Tier::ZeroDim};
}
PromotionOperand Scal(const Scalar& s) {
  return {s.natural_dtype(), Tier::Scalar};
}

TEST(ResultType, SingleOperandIsItsOwnType) {
  for (ScalarType t : kTypes) {
    EXPECT_EQ(Result({Dim(t)}), t);
    EXPECT_EQ(Result({Zero(t)}), t);
  }
  EXPECT_EQ(Result({Scal(1.5)}), f4);
  EXPECT_EQ(Result({Scal(int64_t{3})}), i8);
  EXPECT_EQ(Result({Scal(true)}), b1);
}

TEST(ResultType, SameTierPromotes) {
  EXPECT_EQ(Result({Dim(u1), Dim(i1)}), i2);
  EXPECT_EQ(Result({Dim(i8), Dim(f4)}), f4);
  EXPECT_EQ(Result({Dim(f2), Dim(bf)}), f4);
  EXPECT_EQ(Result({Dim(i4), Dim(b1), Dim(i2)}), i4);
  EXPECT_EQ(Result({Zero(i4), Zero(f8)}), f8);
  EXPECT_EQ(Result({Scal(int64_t{1}), Scal(2.0)}), f4);  // int + float scalars
  EXPECT_EQ(Result({Scal(true), Scal(int64_t{1})}), i8);
}

TEST(ResultType, ZeroDimOfSameOrLowerCategoryDoesNotWiden) {
  EXPECT_EQ(Result({Dim(f4), Zero(i8)}), f4);
  EXPECT_EQ(Result({Dim(i4), Zero(i8)}), i4);  // int_tensor + long_zerodim -> int32
  EXPECT_EQ(Result({Dim(f2), Zero(f8)}), f2);  // same category: the tensor's type
  EXPECT_EQ(Result({Dim(u1), Zero(i1)}), u1);
  EXPECT_EQ(Result({Dim(i8), Zero(b1)}), i8);
  EXPECT_EQ(Result({Dim(bf), Zero(f4)}), bf);
}

TEST(ResultType, ZeroDimOfHigherCategoryDecides) {
  EXPECT_EQ(Result({Dim(i4), Zero(f8)}), f8);  // its own dtype, not the default float
  EXPECT_EQ(Result({Dim(i8), Zero(f2)}), f2);
  EXPECT_EQ(Result({Dim(b1), Zero(f8)}), f8);
  EXPECT_EQ(Result({Dim(b1), Zero(i1)}), i1);
  EXPECT_EQ(Result({Dim(b1), Zero(u1)}), u1);
}

TEST(ResultType, ScalarsUseTheirCategoryDefault) {
  EXPECT_EQ(Result({Dim(i4), Scal(1.0)}), f4);  // float scalar: float32, not float64
  EXPECT_EQ(Result({Dim(u1), Scal(int64_t{1000})}), u1);
  EXPECT_EQ(Result({Dim(i1), Scal(1)}), i1);
  EXPECT_EQ(Result({Dim(b1), Scal(5)}), i8);  // bool tensor + int scalar -> int64
  EXPECT_EQ(Result({Dim(b1), Scal(false)}), b1);
  EXPECT_EQ(Result({Dim(b1), Scal(0.5)}), f4);
  EXPECT_EQ(Result({Dim(f2), Scal(1.0)}), f2);
  EXPECT_EQ(Result({Dim(f8), Scal(1.0)}), f8);
  EXPECT_EQ(Result({Dim(i8), Scal(1.0)}), f4);
  // Zero-dim tensors outrank scalars the same way.
  EXPECT_EQ(Result({Zero(i4), Scal(7)}), i4);
  EXPECT_EQ(Result({Zero(i4), Scal(7.0)}), f4);
  EXPECT_EQ(Result({Zero(f8), Scal(7.0)}), f8);
  EXPECT_EQ(Result({Zero(b1), Scal(7)}), i8);
}

TEST(ResultType, ThreeTiers) {
  // bool tensor, int8 zero-dim, float scalar: the scalar's category wins -> float32.
  EXPECT_EQ(Result({Dim(b1), Zero(i1), Scal(1.0)}), f4);
  // A zero-dim float16 outranks the float scalar; both beat the bool tensor.
  EXPECT_EQ(Result({Dim(b1), Zero(f2), Scal(1.0)}), f2);
  EXPECT_EQ(Result({Dim(i2), Zero(i8), Scal(3)}), i2);
  EXPECT_EQ(Result({Dim(i2), Zero(i8), Scal(3.0)}), f4);
  EXPECT_EQ(Result({Dim(f2), Zero(f8), Scal(3.0)}), f2);
  // Operand order within the list does not matter.
  EXPECT_EQ(Result({Scal(3.0), Zero(i8), Dim(i2)}), f4);
  EXPECT_EQ(Result({Zero(f8), Dim(i4), Dim(u1)}), f8);
}

TEST(ResultType, Errors) {
  EXPECT_LOOM_ERROR(result_type(std::vector<PromotionOperand>{}, "add"), "add",
                    "result_type needs at least one operand");
  EXPECT_LOOM_ERROR(Result({Dim(f4), Zero(ScalarType::QUInt8)}), "add",
                    "quantized operand of type quint8 cannot take part in type promotion");
  std::vector<PromotionOperand> q = {Dim(ScalarType::QInt8)};
  EXPECT_LOOM_ERROR(result_type(q, "mul"), "mul", "qint8");
}

// ---------------------------------------------------------------------------------------
// Broadcasting

Shape Broadcast(const Shape& a, const Shape& b) {
  return ToVec(broadcast_shapes(a, b, "add"));
}

TEST(BroadcastShapes, ValidShapes) {
  EXPECT_EQ(Broadcast({2, 3}, {2, 3}), (Shape{2, 3}));
  EXPECT_EQ(Broadcast({2, 3}, {3}), (Shape{2, 3}));
  EXPECT_EQ(Broadcast({2, 1}, {1, 3}), (Shape{2, 3}));
  EXPECT_EQ(Broadcast({5, 1, 4}, {3, 1}), (Shape{5, 3, 4}));
  EXPECT_EQ(Broadcast({8, 1, 6, 1}, {7, 1, 5}), (Shape{8, 7, 6, 5}));
  // Scalars (0-dim) broadcast to anything.
  EXPECT_EQ(Broadcast({}, {}), (Shape{}));
  EXPECT_EQ(Broadcast({}, {2, 3}), (Shape{2, 3}));
  EXPECT_EQ(Broadcast({4}, {}), (Shape{4}));
  EXPECT_EQ(Broadcast({1, 1}, {}), (Shape{1, 1}));
  // Size 0 behaves like any size other than 1: it only stretches from 1.
  EXPECT_EQ(Broadcast({0}, {1}), (Shape{0}));
  EXPECT_EQ(Broadcast({1}, {0}), (Shape{0}));
  EXPECT_EQ(Broadcast({2, 0}, {2, 1}), (Shape{2, 0}));
  EXPECT_EQ(Broadcast({0, 3}, {4, 1, 3}), (Shape{4, 0, 3}));
  EXPECT_EQ(Broadcast({0}, {0}), (Shape{0}));
}

TEST(BroadcastShapes, Symmetric) {
  const std::vector<Shape> shapes = {{}, {1}, {3}, {0}, {2, 1}, {1, 3}, {2, 3}, {4, 1, 3}};
  for (const Shape& a : shapes) {
    for (const Shape& b : shapes) {
      bool ab_ok = true, ba_ok = true;
      Shape ab, ba;
      try {
        ab = Broadcast(a, b);
      } catch (const Error&) {
        ab_ok = false;
      }
      try {
        ba = Broadcast(b, a);
      } catch (const Error&) {
        ba_ok = false;
      }
      EXPECT_EQ(ab_ok, ba_ok);
      EXPECT_EQ(ab, ba);
    }
  }
}

TEST(BroadcastShapes, ErrorMessagesAreExact) {
  try {
    broadcast_shapes(Shape{2, 3}, Shape{4}, "add");
    FAIL() << "expected a loom::Error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "[add] shapes [2, 3] and [4] cannot be broadcast (dim 1: 3 vs 4)");
    EXPECT_EQ(e.component(), "add");
  }
  EXPECT_LOOM_ERROR(broadcast_shapes(Shape{0}, Shape{3}, "mul"), "mul",
                    "shapes [0] and [3] cannot be broadcast (dim 0: 0 vs 3)");
  // The dim is counted in the broadcast shape, after rank alignment.
  EXPECT_LOOM_ERROR(broadcast_shapes(Shape{2, 3}, Shape{4, 1, 2}, "where"), "where",
                    "shapes [2, 3] and [4, 1, 2] cannot be broadcast (dim 2: 3 vs 2)");
  EXPECT_LOOM_ERROR(broadcast_shapes(Shape{5, 2}, Shape{3, 1}, "add"), "add", "(dim 0: 5 vs 3)");
}

Shape BStrides(const Shape& sizes, const Shape& strides, const Shape& target) {
  return ToVec(broadcast_strides(sizes, strides, target, "expand"));
}

TEST(BroadcastStrides, StretchedDimsGetStrideZero) {
  EXPECT_EQ(BStrides({3}, {1}, {2, 3}), (Shape{0, 1}));
  EXPECT_EQ(BStrides({2, 1}, {1, 1}, {2, 4}), (Shape{1, 0}));
  EXPECT_EQ(BStrides({1, 3}, {3, 1}, {5, 4, 3}), (Shape{0, 0, 1}));
  EXPECT_EQ(BStrides({}, {}, {2, 2}), (Shape{0, 0}));
  // Unstretched dims keep their strides, even size-1 dims that stay size 1.
  EXPECT_EQ(BStrides({2, 3}, {3, 1}, {2, 3}), (Shape{3, 1}));
  EXPECT_EQ(BStrides({1, 1}, {5, 7}, {1, 1}), (Shape{5, 7}));
  EXPECT_EQ(BStrides({2, 3}, {1, 2}, {4, 2, 3}), (Shape{0, 1, 2}));
  // Stretching a size-1 dim to 0.
  EXPECT_EQ(BStrides({1}, {1}, {0}), (Shape{0}));
}

TEST(BroadcastStrides, Errors) {
  EXPECT_LOOM_ERROR(BStrides({2, 3}, {3, 1}, {3}), "expand",
                    "shape [2, 3] cannot be broadcast to [3] (more dims than the target)");
  EXPECT_LOOM_ERROR(BStrides({3}, {1}, {4}), "expand",
                    "shape [3] cannot be broadcast to [4] (dim 0: 3 vs 4)");
  EXPECT_LOOM_ERROR(BStrides({3}, {1}, {2, 4}), "expand", "(dim 1: 3 vs 4)");
  EXPECT_LOOM_ERROR(BStrides({2}, {1}, {0}), "expand", "(dim 0: 2 vs 0)");
}

TEST(ShapeToString, Formats) {
  EXPECT_EQ(shape_to_string(Shape{}), "[]");
  EXPECT_EQ(shape_to_string(Shape{5}), "[5]");
  EXPECT_EQ(shape_to_string(Shape{2, 3}), "[2, 3]");
  EXPECT_EQ(shape_to_string(Shape{0, -1, 1234567890123}), "[0, -1, 1234567890123]");
}

// Note [Scalars that overflow]: PyTorch's c10::overflows rule.
TEST(ScalarFits, FollowsPyTorchsOverflowRule) {
  EXPECT_TRUE(fits_without_overflow(Scalar(255), ScalarType::UInt8));
  EXPECT_FALSE(fits_without_overflow(Scalar(256), ScalarType::UInt8));
  EXPECT_TRUE(fits_without_overflow(Scalar(-255), ScalarType::UInt8));  // wraps
  EXPECT_FALSE(fits_without_overflow(Scalar(-256), ScalarType::UInt8));
  EXPECT_FALSE(fits_without_overflow(Scalar(-0.5), ScalarType::UInt8));  // floats do not wrap
  EXPECT_TRUE(fits_without_overflow(Scalar(-128), ScalarType::Int8));
  EXPECT_FALSE(fits_without_overflow(Scalar(128), ScalarType::Int8));
  EXPECT_TRUE(fits_without_overflow(Scalar(1), ScalarType::Bool));
  EXPECT_TRUE(fits_without_overflow(Scalar(-1), ScalarType::Bool));
  EXPECT_FALSE(fits_without_overflow(Scalar(2), ScalarType::Bool));
  EXPECT_TRUE(fits_without_overflow(Scalar(true), ScalarType::UInt8));
  EXPECT_TRUE(fits_without_overflow(Scalar(INT64_MIN), ScalarType::Int64));
  EXPECT_FALSE(fits_without_overflow(Scalar(0x1p63), ScalarType::Int64));
  EXPECT_TRUE(fits_without_overflow(Scalar(-0x1p63), ScalarType::Int64));
  EXPECT_FALSE(fits_without_overflow(Scalar(NAN), ScalarType::Int32));
  EXPECT_FALSE(fits_without_overflow(Scalar(INFINITY), ScalarType::Int64));
  EXPECT_TRUE(fits_without_overflow(Scalar(65504.0), ScalarType::Float16));
  EXPECT_FALSE(fits_without_overflow(Scalar(65505.0), ScalarType::Float16));
  EXPECT_FALSE(fits_without_overflow(Scalar(int64_t{100000}), ScalarType::Float16));
  EXPECT_TRUE(fits_without_overflow(Scalar(INFINITY), ScalarType::Float16));
  EXPECT_TRUE(fits_without_overflow(Scalar(NAN), ScalarType::BFloat16));
  EXPECT_FALSE(fits_without_overflow(Scalar(1e39), ScalarType::Float32));
  EXPECT_TRUE(fits_without_overflow(Scalar(1e39), ScalarType::Float64));
}

}  // namespace
}  // namespace loom
