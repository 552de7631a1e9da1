// Samples of the binary pointwise family: arithmetic, comparisons, logical and bitwise
// ops (div with a rounding mode is in ternary.cc; Note [Op samples] in loom/ops/samples.h).
#include "loom/ops/samples.h"

namespace loom::ops {
namespace {

using namespace sample_helpers;

// Same shapes, broadcasting both ways, 0-dim with 0-dim, a 0-dim float64 operand with a
// float32 matrix (a dimensioned operand's dtype wins), mixed int64 / float32, bfloat16,
// an empty tensor broadcast with a vector, and a large matrix with a broadcast row.
void arithmetic(std::vector<OpSample>& out, const char* op, Fill a, Fill b) {
  out.push_back({op, {T({2, 3}, kF32, a), T({2, 3}, kF32, b)}});
  out.push_back({op, {T({3, 1}, kF32, a), T({1, 4}, kF32, b)}});
  out.push_back({op, {T({2, 3}, kF64, a), T({3}, kF64, b)}});
  out.push_back({op, {T({}, kF32, a), T({}, kF32, b)}});
  out.push_back({op, {T({2, 3}, kF32, a), T({}, kF64, b)}});
  out.push_back({op, {T({2, 3}, kI64, a), T({2, 3}, kF32, b)}});
  out.push_back(OpSample{op, {T({2, 3}, kBF16, a), T({2, 3}, kBF16, b)}}.tol(2e-2));
  out.push_back({op, {T({0, 3}, kF32, a), T({3}, kF32, b)}});
  out.push_back({op, {T({129, 257}, kF32, a), T({257}, kF32, b)}});  // threaded, with a tail
}

// The same for integers: int64, int32 broadcast with int64, 0-dim, uint8 in [0, 8).
void integral(std::vector<OpSample>& out, const char* op, Fill a, Fill b) {
  out.push_back({op, {T({2, 3}, kI64, a), T({2, 3}, kI64, b)}});
  out.push_back({op, {T({3, 1}, kI32, a), T({4}, kI64, b)}});
  out.push_back({op, {T({}, kI32, a), T({}, kI32, b)}});
  out.push_back(
      {op, {Idx({2, 3}, 8, kU8), b == Fill::Positive ? T({3}, kU8, b) : Idx({3}, 8, kU8)}});
}

// The .Scalar overloads: a number of each kind, one that promotes an integer tensor to
// float32 (as a Python number does), a 0-dim and an empty tensor; their in-place forms
// where the result keeps self's dtype, and refuse a float number for an integer self.
void with_a_number(std::vector<OpSample>& s) {
  // The dividing ops get numbers away from zero and from integer quotients.
  struct Numbers {
    const char* op;
    bool divides;
  };
  for (const Numbers& n :
       {Numbers{"loom::add.Scalar", false}, Numbers{"loom::sub.Scalar", false},
        Numbers{"loom::mul.Scalar", false}, Numbers{"loom::div.Scalar", true},
        Numbers{"loom::remainder.Scalar", true}, Numbers{"loom::fmod.Scalar", true}}) {
    const char* op = n.op;
    const bool divides = n.divides;
    s.push_back({op, {T({2, 3}, kF32), D(divides ? 1.5 : -2.5)}});
    s.push_back({op, {T({2, 3}, kI64), I(3)}});
    s.push_back({op, {T({2, 3}, kI32), D(divides ? 0.75 : 0.5)}});  // int32 with a float: float32
    s.push_back({op, {T({}, kF64), I(2)}});
    s.push_back(OpSample{op, {T({2, 3}, kBF16), D(divides ? 1.25 : 0.25)}}.tol(2e-2));
    s.push_back({op, {T({0, 3}), D(2.0)}});
  }
  s.push_back({"loom::add.Scalar", {T({2, 3}), D(2.0), D(0.5)}});
  s.push_back({"loom::sub.Scalar", {T({2, 3}, kI64), I(4), I(3)}});
  s.push_back({"loom::add.Scalar", {T({2, 3}, kBool, Fill::Bool), B(true)}});
  for (const char* op : {"loom::add_.Scalar", "loom::sub_.Scalar", "loom::mul_.Scalar",
                         "loom::div_.Scalar", "loom::remainder_.Scalar", "loom::fmod_.Scalar"}) {
    s.push_back({op, {T({2, 3}, kF32), D(1.5)}});
    s.push_back({op, {T({}, kF64), I(2)}});
  }
  for (const char* op : {"loom::add_.Scalar", "loom::sub_.Scalar", "loom::mul_.Scalar",
                         "loom::remainder_.Scalar", "loom::fmod_.Scalar"}) {
    s.push_back({op, {T({2, 3}, kI64, Fill::Positive), I(3)}});
    s.push_back(OpSample{op, {T({2, 3}, kI64), D(0.5)}}.raises("can't be cast"));
  }
  s.push_back({"loom::add_.Scalar", {T({2, 3}), D(2.0), D(0.5)}});
  s.push_back(OpSample{"loom::div_.Scalar", {T({2, 3}, kI64), I(2)}}.raises("can't be cast"));
  for (const char* op :
       {"loom::bitwise_and.Scalar", "loom::bitwise_or.Scalar", "loom::bitwise_xor.Scalar",
        "loom::bitwise_and_.Scalar", "loom::bitwise_or_.Scalar", "loom::bitwise_xor_.Scalar"}) {
    s.push_back({op, {T({2, 3}, kI64), I(6)}});
    s.push_back({op, {T({3}, kI32), I(-3)}});
    s.push_back({op, {Idx({2, 3}, 8, kU8), I(5)}});
    s.push_back({op, {T({2, 3}, kBool, Fill::Bool), B(true)}});
  }
  for (const char* op : {"loom::eq.Scalar", "loom::ne.Scalar", "loom::lt.Scalar", "loom::le.Scalar",
                         "loom::gt.Scalar", "loom::ge.Scalar"}) {
    s.push_back({op, {T({2, 3}, kF32, Fill::SmallInt), I(1)}});
    s.push_back({op, {T({2, 3}, kI64, Fill::SmallInt), D(0.5)}});
    s.push_back({op, {T({}, kF64, Fill::SmallInt), I(0)}});
    s.push_back({op, {T({2, 3}, kBool, Fill::Bool), B(false)}});
  }
}

std::vector<OpSample> make() {
  std::vector<OpSample> s;
  for (const char* op : {"loom::add.Tensor", "loom::sub.Tensor", "loom::mul.Tensor",
                         "loom::maximum", "loom::minimum"}) {
    arithmetic(s, op, Fill::Normal, Fill::Normal);
    integral(s, op, Fill::Normal, Fill::Normal);
  }
  s.push_back({"loom::add.Tensor", {T({2, 3}), T({3})}, {{"alpha", D(0.5)}}});
  s.push_back({"loom::add.Tensor", {T({2, 3}, kI64), T({2, 3}, kI64)}, {{"alpha", I(3)}}});
  s.push_back({"loom::sub.Tensor", {T({}), T({2, 2})}, {{"alpha", I(2)}}});
  s.push_back({"loom::add.Tensor", {T({2, 3}, kBool, Fill::Bool), T({2, 3}, kBool, Fill::Bool)}});
  arithmetic(s, "loom::div.Tensor", Fill::Normal, Fill::Positive);
  integral(s, "loom::div.Tensor", Fill::Normal, Fill::Positive);
  for (const char* op : {"loom::remainder.Tensor", "loom::fmod.Tensor"}) {
    arithmetic(s, op, Fill::Normal, Fill::Positive);
    integral(s, op, Fill::Normal, Fill::Positive);
    s.push_back({op, {T({2, 3}), T({2, 3}, kF32, Fill::Normal)}});
  }
  arithmetic(s, "loom::pow.Tensor_Tensor", Fill::Positive, Fill::Normal);
  s.push_back({"loom::pow.Tensor_Tensor", {T({2, 3}, kI64, Fill::SmallInt), Idx({2, 3}, 4)}});
  s.push_back({"loom::pow.Tensor_Tensor", {T({3}, kI32, Fill::SmallInt), Idx({2, 1}, 3, kI32)}});
  s.push_back({"loom::pow.Tensor_Tensor", {T({2, 3}, kF32, Fill::Normal), Idx({3}, 3, kF32)}});
  // negative integer exponents in a tensor: 1 or 0 here, as PyTorch's integer pow
  s.push_back(
      {"loom::pow.Tensor_Tensor", {T({4, 5}, kI32, Fill::Positive), T({5}, kI32, Fill::SmallInt)}});
  s.push_back({"loom::pow.Tensor_Scalar", {T({2, 3}, kF32, Fill::Positive), D(1.5)}});
  s.push_back({"loom::pow.Tensor_Scalar", {T({2, 3}, kI64, Fill::SmallInt), I(3)}});
  s.push_back({"loom::pow.Tensor_Scalar", {T({2, 3}, kF16, Fill::Normal), I(2)}});
  s.push_back(OpSample{"loom::pow.Tensor_Scalar", {T({2, 3}, kI64, Fill::SmallInt), I(-1)}}.raises(
      "integers to negative integer powers are not allowed"));
  s.push_back({"loom::pow.Scalar", {D(2.5), T({2, 3}, kF32, Fill::Normal)}});
  s.push_back({"loom::pow.Scalar", {I(2), Idx({2, 3}, 5)}});
  arithmetic(s, "loom::atan2", Fill::Normal, Fill::Normal);
  s.push_back({"loom::atan2", {T({2, 3}, kI64), T({3}, kI32)}});
  for (const char* op :
       {"loom::bitwise_and.Tensor", "loom::bitwise_or.Tensor", "loom::bitwise_xor.Tensor"}) {
    integral(s, op, Fill::Normal, Fill::Normal);
    s.push_back({op, {T({2, 3}, kBool, Fill::Bool), T({3}, kBool, Fill::Bool)}});
  }
  for (const char* op : {"loom::eq.Tensor", "loom::ne.Tensor", "loom::lt.Tensor", "loom::le.Tensor",
                         "loom::gt.Tensor", "loom::ge.Tensor"}) {
    arithmetic(s, op, Fill::SmallInt, Fill::SmallInt);
    integral(s, op, Fill::SmallInt, Fill::SmallInt);
    s.push_back({op, {T({2, 3}, kBool, Fill::Bool), T({3}, kBool, Fill::Bool)}});
  }
  for (const char* op : {"loom::logical_and", "loom::logical_or", "loom::logical_xor"}) {
    s.push_back({op, {T({2, 3}, kBool, Fill::Bool), T({2, 3}, kBool, Fill::Bool)}});
    s.push_back({op, {T({3, 1}, kBool, Fill::Bool), T({4}, kBool, Fill::Bool)}});
    s.push_back({op, {T({2, 3}, kF32, Fill::SmallInt), T({3}, kI64, Fill::SmallInt)}});
    s.push_back({op, {T({}, kF64, Fill::SmallInt), T({}, kBool, Fill::Bool)}});
    s.push_back({op, {T({2, 3}, kF32, Fill::Special), T({2, 3}, kI32, Fill::Bool)}});
  }
  with_a_number(s);
  // Error inputs (Note [Op samples]): each must raise.
  s.push_back(OpSample{"loom::add.Tensor", {T({2, 3}), T({4})}}.raises("cannot be broadcast"));
  s.push_back(OpSample{"loom::mul.Tensor", {T({2, 3}), T({3, 2})}}.raises("cannot be broadcast"));
  return s;
}

}  // namespace

std::span<const OpSample> binary_samples() {
  static const std::vector<OpSample> samples = make();
  return samples;
}

}  // namespace loom::ops
