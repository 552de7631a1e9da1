// The CPU plugin's unary pointwise kernels against float64 references on every dtype they
// support, through the functional, in-place and out= variants, with their errors.
#include "cpu_test_util.h"
#include "loom/dispatcher/boxing.h"
#include "loom/dispatcher/dispatcher.h"

namespace loom::testing {
namespace {

using Ref1 = std::function<double(double)>;

struct FloatUnaryCase {
  std::string op;  // functional name
  Ref1 ref;
  Values inputs;  // 8 values, exact in float16 and bfloat16
  std::vector<LoomValue> extra;
};

const Values kGeneral = {-2.5, -1.25, -0.5, -0.125, 0.0, 0.25, 1.5, 3.0};
const Values kPositive = {0.125, 0.25, 0.5, 0.75, 1.0, 1.5, 3.0, 10.0};
const Values kUnit = {-0.875, -0.5, -0.25, 0.0, 0.125, 0.5, 0.75, 0.875};

double gelu_ref(double x) {
  return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}
double gelu_tanh_ref(double x) {
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

const std::string kNone = "none";
const std::string kTanh = "tanh";

std::vector<FloatUnaryCase> float_unary_cases() {
  return {
      {"loom::exp", [](double x) { return std::exp(x); }, kGeneral, {}},
      {"loom::exp2", [](double x) { return std::exp2(x); }, kGeneral, {}},
      {"loom::expm1", [](double x) { return std::expm1(x); }, kGeneral, {}},
      {"loom::log", [](double x) { return std::log(x); }, kPositive, {}},
      {"loom::log2", [](double x) { return std::log2(x); }, kPositive, {}},
      {"loom::log10", [](double x) { return std::log10(x); }, kPositive, {}},
      {"loom::log1p", [](double x) { return std::log1p(x); }, kUnit, {}},
      {"loom::sqrt", [](double x) { return std::sqrt(x); }, kPositive, {}},
      {"loom::rsqrt", [](double x) { return 1.0 / std::sqrt(x); }, kPositive, {}},
      {"loom::reciprocal", [](double x) { return 1.0 / x; }, kPositive, {}},
      {"loom::sin", [](double x) { return std::sin(x); }, kGeneral, {}},
      {"loom::cos", [](double x) { return std::cos(x); }, kGeneral, {}},
      {"loom::tan", [](double x) { return std::tan(x); }, kUnit, {}},
      {"loom::asin", [](double x) { return std::asin(x); }, kUnit, {}},
      {"loom::acos", [](double x) { return std::acos(x); }, kUnit, {}},
      {"loom::atan", [](double x) { return std::atan(x); }, kGeneral, {}},
      {"loom::sinh", [](double x) { return std::sinh(x); }, kGeneral, {}},
      {"loom::cosh", [](double x) { return std::cosh(x); }, kGeneral, {}},
      {"loom::tanh", [](double x) { return std::tanh(x); }, kGeneral, {}},
      {"loom::sigmoid", [](double x) { return 1.0 / (1.0 + std::exp(-x)); }, kGeneral, {}},
      {"loom::erf", [](double x) { return std::erf(x); }, kGeneral, {}},
      {"loom::silu", [](double x) { return x / (1.0 + std::exp(-x)); }, kGeneral, {}},
      {"loom::gelu", gelu_ref, kGeneral, {box(kNone)}},
      {"loom::gelu", gelu_tanh_ref, kGeneral, {box(kTanh)}},
      {"loom::leaky_relu", [](double x) { return x > 0 ? x : 0.25 * x; }, kGeneral, {box(0.25)}},
      {"loom::elu",
       [](double x) { return x > 0 ? 2.0 * x : 1.5 * 2.0 * std::expm1(0.5 * x); },
       kGeneral,
       {box(1.5), box(2.0), box(0.5)}},
      {"loom::softplus",
       [](double x) { return 2.0 * x > 3.0 ? x : std::log1p(std::exp(2.0 * x)) / 2.0; },
       kGeneral,
       {box(2.0), box(int64_t{3})}},
  };
}

TEST_F(CpuPointwise, FloatUnaryOpsMatchTheReferenceOnEveryFloatingDtype) {
  for (const FloatUnaryCase& c : float_unary_cases()) {
    for (ScalarType dtype : kFloatTypes) {
      SCOPED_TRACE(c.op + " " + std::string(scalar_type_name(dtype)));
      Tensor x = make(dtype, {2, 4}, c.inputs);
      Tensor y = call(c.op, args_of({x}, c.extra));
      EXPECT_EQ(y.dtype(), dtype);
      EXPECT_EQ(shape_of(y), (Shape{2, 4}));
      Values want;
      for (double v : values(x)) want.push_back(c.ref(v));
      expect_values(y, want, c.op);
    }
  }
}

TEST_F(CpuPointwise, FloatUnaryOpsComputeIntegersAndBoolsAsFloat32) {
  for (const FloatUnaryCase& c : float_unary_cases()) {
    for (ScalarType dtype : {ScalarType::Int32, ScalarType::Int64, ScalarType::UInt8}) {
      SCOPED_TRACE(c.op + " " + std::string(scalar_type_name(dtype)));
      Tensor x = make(dtype, {4}, {1, 2, 3, 7});
      Tensor y = call(c.op, args_of({x}, c.extra));
      EXPECT_EQ(y.dtype(), ScalarType::Float32);
      expect_values(y, {c.ref(1), c.ref(2), c.ref(3), c.ref(7)}, c.op);
    }
    Tensor b = make(ScalarType::Bool, {2}, {0, 1});
    Tensor y = call(c.op, args_of({b}, c.extra));
    EXPECT_EQ(y.dtype(), ScalarType::Float32);
    expect_values(y, {c.ref(0), c.ref(1)}, c.op + " bool");
  }
}

TEST_F(CpuPointwise, FloatUnaryOpsInPlaceAndOutVariants) {
  for (const FloatUnaryCase& c : float_unary_cases()) {
    const OpNames n = names_of(c.op);
    SCOPED_TRACE(c.op);
    Values want;
    for (double v : c.inputs) want.push_back(c.ref(static_cast<float>(v)));
    // in-place: writes self and returns it
    Tensor x = make(ScalarType::Float32, {8}, c.inputs);
    Tensor r = call(n.inplace, args_of({x}, c.extra));
    EXPECT_EQ(r.impl(), x.impl());
    expect_values(x, want, n.inplace);
    // out=: writes out and returns it
    Tensor src = make(ScalarType::Float32, {8}, c.inputs);
    Tensor out = empty(Shape{8}, ScalarType::Float32);
    std::vector<LoomValue> out_args = args_of({src}, c.extra);
    out_args.push_back(box(out));
    Tensor r2 = call(n.out, out_args);
    EXPECT_EQ(r2.impl(), out.impl());
    expect_values(out, want, n.out);
    // out= of a wider dtype: computed in float32, stored as float64
    Tensor out64 = empty(Shape{8}, ScalarType::Float64);
    out_args.back() = box(out64);
    call(n.out, out_args);
    expect_values(out64, want, n.out + " float64 out", ScalarType::Float32);
  }
}

TEST_F(CpuPointwise, FloatUnaryOpsHandleNanAndInfinity) {
  Tensor x = make(ScalarType::Float32, {3}, {kNaN, kInf, -kInf});
  expect_values(call("loom::exp", {box(x)}), {kNaN, kInf, 0.0}, "exp");
  expect_values(call("loom::sigmoid", {box(x)}), {kNaN, 1.0, 0.0}, "sigmoid");
  expect_values(call("loom::tanh", {box(x)}), {kNaN, 1.0, -1.0}, "tanh");
  Tensor z = make(ScalarType::Float64, {3}, {0.0, -1.0, -0.0});
  expect_values(call("loom::log", {box(z)}), {-kInf, kNaN, -kInf}, "log");
  expect_values(call("loom::reciprocal", {box(z)}), {kInf, -1.0, -kInf}, "reciprocal");
  expect_values(call("loom::sqrt", {box(z)}), {0.0, kNaN, 0.0}, "sqrt");
}

TEST_F(CpuPointwise, GeluRejectsAnUnknownApproximation) {
  Tensor x = make(ScalarType::Float32, {2}, {1, 2});
  const std::string bad = "fast";
  expect_error(
      [&] {
        call("loom::gelu", {box(x), box(bad)});
      },
      "loom::gelu", {"approximate must be 'none' or 'tanh', found 'fast'"});
  Tensor out = empty(Shape{2}, ScalarType::Float32);
  expect_error(
      [&] {
        call("loom::gelu.out", {box(x), box(bad), box(out)});
      },
      "loom::gelu.out", {"approximate must be 'none' or 'tanh', found 'fast'", "plugin 'cpu'"});
}

// ============================== unary, sign-like ==============================

TEST_F(CpuPointwise, NegAbsSignReluOnFloats) {
  const Values in = {-2.5, -0.0, 0.0, 0.5, 3.0, kNaN, kInf, -kInf};
  for (ScalarType dtype : kFloatTypes) {
    SCOPED_TRACE(scalar_type_name(dtype));
    Tensor x = make(dtype, {8}, in);
    Tensor neg = call("loom::neg", {box(x)});
    EXPECT_EQ(neg.dtype(), dtype);
    expect_values(neg, {2.5, 0.0, -0.0, -0.5, -3.0, kNaN, -kInf, kInf}, "neg");
    EXPECT_TRUE(std::signbit(values(neg)[2]));  // -(+0) is -0
    expect_values(call("loom::abs", {box(x)}), {2.5, 0.0, 0.0, 0.5, 3.0, kNaN, kInf, kInf}, "abs");
    expect_values(call("loom::sign", {box(x)}), {-1, 0, 0, 1, 1, kNaN, 1, -1}, "sign");
    expect_values(call("loom::relu", {box(x)}), {0, 0, 0, 0.5, 3, kNaN, kInf, 0}, "relu");
  }
}

TEST_F(CpuPointwise, NegAbsSignReluOnIntegers) {
  for (ScalarType dtype : kSignedTypes) {
    SCOPED_TRACE(scalar_type_name(dtype));
    Tensor x = make(dtype, {5}, {-7, -1, 0, 2, 100});
    Tensor neg = call("loom::neg", {box(x)});
    EXPECT_EQ(neg.dtype(), dtype);
    expect_values(neg, {7, 1, 0, -2, -100}, "neg");
    expect_values(call("loom::abs", {box(x)}), {7, 1, 0, 2, 100}, "abs");
    expect_values(call("loom::sign", {box(x)}), {-1, -1, 0, 1, 1}, "sign");
    expect_values(call("loom::relu", {box(x)}), {0, 0, 0, 2, 100}, "relu");
  }
  Tensor u = make(ScalarType::UInt8, {3}, {0, 1, 200});
  expect_values(call("loom::neg", {box(u)}), {0, 255, 56}, "neg uint8 wraps");
  expect_values(call("loom::abs", {box(u)}), {0, 1, 200}, "abs uint8");
  expect_values(call("loom::sign", {box(u)}), {0, 1, 1}, "sign uint8");
  expect_values(call("loom::relu", {box(u)}), {0, 1, 200}, "relu uint8");
  // wrapping at the lowest value, like torch
  Tensor low = make(ScalarType::Int8, {2}, {-128, 127});
  expect_values(call("loom::neg", {box(low)}), {-128, -127}, "neg int8 lowest");
  expect_values(call("loom::abs", {box(low)}), {-128, 127}, "abs int8 lowest");
}

TEST_F(CpuPointwise, SignLikeOpsOnBool) {
  Tensor b = make(ScalarType::Bool, {2}, {0, 1});
  Tensor a = call("loom::abs", {box(b)});
  EXPECT_EQ(a.dtype(), ScalarType::Bool);
  expect_values(a, {0, 1}, "abs bool");
  expect_values(call("loom::sign", {box(b)}), {0, 1}, "sign bool");
  expect_error([&] { call("loom::neg", {box(b)}); }, "loom::neg",
               {"negation on a bool tensor is not supported; use logical_not"});
  Tensor out = empty(Shape{2}, ScalarType::Bool);
  expect_error(
      [&] {
        call("loom::neg.out", {box(b), box(out)});
      },
      "loom::neg.out", {"negation on a bool tensor is not supported"});
  expect_error([&] { call("loom::relu", {box(b)}); }, "loom::relu",
               {"does not support dtype bool"});
}

// ============================== unary, rounding ==============================

TEST_F(CpuPointwise, RoundingOpsOnFloatsRoundHalfToEven) {
  const Values in = {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -1.25, 1.75, kNaN, kInf};
  const std::pair<const char*, Ref1> cases[] = {
      {"loom::floor", [](double x) { return std::floor(x); }},
      {"loom::ceil", [](double x) { return std::ceil(x); }},
      {"loom::round", [](double x) { return std::nearbyint(x); }},
      {"loom::trunc", [](double x) { return std::trunc(x); }},
  };
  for (const auto& [op, ref] : cases) {
    for (ScalarType dtype : kFloatTypes) {
      SCOPED_TRACE(std::string(op) + " " + std::string(scalar_type_name(dtype)));
      Tensor y = call(op, {box(make(dtype, {10}, in))});
      EXPECT_EQ(y.dtype(), dtype);
      Values want;
      for (double v : in) want.push_back(ref(v));
      expect_values(y, want, op);
    }
  }
  expect_values(call("loom::round",
                     {box(make(ScalarType::Float64, {6}, Values(in.begin(), in.begin() + 6)))}),
                {-2, -2, -0.0, 0, 2, 2}, "round half to even");
}

TEST_F(CpuPointwise, RoundingOpsCopyIntegers) {
  for (const char* op : {"loom::floor", "loom::ceil", "loom::round", "loom::trunc"}) {
    for (ScalarType dtype : kSignedTypes) {
      SCOPED_TRACE(std::string(op) + " " + std::string(scalar_type_name(dtype)));
      Tensor y = call(op, {box(make(dtype, {3}, {-3, 0, 7}))});
      EXPECT_EQ(y.dtype(), dtype);
      expect_values(y, {-3, 0, 7}, op);
    }
    Tensor b = call(op, {box(make(ScalarType::Bool, {2}, {1, 0}))});
    EXPECT_EQ(b.dtype(), ScalarType::Bool);
    expect_values(b, {1, 0}, op);
  }
}

// ============================== unary, predicates ==============================

TEST_F(CpuPointwise, PredicatesOnFloats) {
  const Values in = {0.0, -1.5, kNaN, kInf, -kInf, 2.0};
  for (ScalarType dtype : kFloatTypes) {
    SCOPED_TRACE(scalar_type_name(dtype));
    Tensor x = make(dtype, {6}, in);
    Tensor nan = call("loom::isnan", {box(x)});
    EXPECT_EQ(nan.dtype(), ScalarType::Bool);
    expect_values(nan, {0, 0, 1, 0, 0, 0}, "isnan");
    expect_values(call("loom::isinf", {box(x)}), {0, 0, 0, 1, 1, 0}, "isinf");
    expect_values(call("loom::isfinite", {box(x)}), {1, 1, 0, 0, 0, 1}, "isfinite");
    expect_values(call("loom::logical_not", {box(x)}), {1, 0, 0, 0, 0, 0}, "logical_not");
  }
}

TEST_F(CpuPointwise, PredicatesOnIntegersAndBool) {
  for (ScalarType dtype : kIntTypes) {
    SCOPED_TRACE(scalar_type_name(dtype));
    Tensor x = make(dtype, {3}, {0, 1, 5});
    expect_values(call("loom::isnan", {box(x)}), {0, 0, 0}, "isnan");
    expect_values(call("loom::isinf", {box(x)}), {0, 0, 0}, "isinf");
    expect_values(call("loom::isfinite", {box(x)}), {1, 1, 1}, "isfinite");
    Tensor n = call("loom::logical_not", {box(x)});
    EXPECT_EQ(n.dtype(), ScalarType::Bool);
    expect_values(n, {1, 0, 0}, "logical_not");
  }
  Tensor b = make(ScalarType::Bool, {2}, {0, 1});
  expect_values(call("loom::logical_not", {box(b)}), {1, 0}, "logical_not bool");
  expect_values(call("loom::isfinite", {box(b)}), {1, 1}, "isfinite bool");
  // out= with a non-bool out: computed as bool, then cast
  Tensor out = empty(Shape{2}, ScalarType::Float32);
  call("loom::logical_not.out", {box(b), box(out)});
  expect_values(out, {1, 0}, "logical_not.out float32");
}

// ============================== unary, clamp family ==============================

TEST_F(CpuPointwise, ClampOnFloats) {
  const Values in = {-3.0, -1.0, 0.0, 0.5, 2.0, kNaN};
  for (ScalarType dtype : kFloatTypes) {
    SCOPED_TRACE(scalar_type_name(dtype));
    Tensor x = make(dtype, {6}, in);
    Tensor both = call("loom::clamp", {box(x), box(-1.5), box(int64_t{1})});
    EXPECT_EQ(both.dtype(), dtype);
    expect_values(both, {-1.5, -1, 0, 0.5, 1, kNaN}, "clamp min max");
    expect_values(call("loom::clamp", {box(x), box(0.25), dispatch::none()}),
                  {0.25, 0.25, 0.25, 0.5, 2, kNaN}, "clamp min");
    expect_values(call("loom::clamp", {box(x), dispatch::none(), box(0.0)}),
                  {-3, -1, 0, 0, 0, kNaN}, "clamp max");
    // min > max gives max everywhere, like torch
    expect_values(call("loom::clamp", {box(x), box(1.0), box(-1.0)}), {-1, -1, -1, -1, -1, kNaN},
                  "clamp min > max");
    expect_values(call("loom::hardtanh", {box(x), box(-1.0), box(1.0)}), {-1, -1, 0, 0.5, 1, kNaN},
                  "hardtanh");
    // A NaN bound propagates: torch.clamp(torch.tensor([0.5, 2.]), min=nan, max=1) -> [nan, nan]
    expect_values(call("loom::clamp", {box(x), box(kNaN), box(1.0)}),
                  {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}, "clamp nan min");
    expect_values(call("loom::clamp", {box(x), dispatch::none(), box(kNaN)}),
                  {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}, "clamp nan max");
  }
  // In place the result must fit self: torch.tensor([1, 2]).clamp_(min=1.5) -> "result type
  // Float can't be cast to the desired output type Long".
  Tensor ints = make(ScalarType::Int64, {2}, {1, 2});
  expect_error(
      [&] {
        call("loom::clamp_", {box(ints), box(1.5), dispatch::none()});
      },
      "loom::clamp_", {"result type float32 can't be cast to the out dtype int64"});
}

TEST_F(CpuPointwise, ClampOnIntegers) {
  for (ScalarType dtype : kSignedTypes) {
    SCOPED_TRACE(scalar_type_name(dtype));
    Tensor x = make(dtype, {5}, {-100, -3, 0, 4, 100});
    Tensor y = call("loom::clamp", {box(x), box(int64_t{-2}), box(int64_t{5})});
    EXPECT_EQ(y.dtype(), dtype);
    expect_values(y, {-2, -2, 0, 4, 5}, "clamp");
    // float bounds promote an integer tensor to float32, as in PyTorch:
    // torch.clamp(torch.tensor([-100, -3, 0, 4, 100]), -2.5, 4.5) -> [-2.5, -2.5, 0., 4., 4.5]
    Tensor promoted = call("loom::clamp", {box(x), box(-2.5), box(4.5)});
    EXPECT_EQ(promoted.dtype(), ScalarType::Float32);
    expect_values(promoted, {-2.5, -2.5, 0, 4, 4.5}, "clamp float bounds");
    expect_values(call("loom::hardtanh", {box(x), box(int64_t{-1}), box(int64_t{1})}),
                  {-1, -1, 0, 1, 1}, "hardtanh");
  }
  // Bounds outside the dtype's range are refused, as in PyTorch (Note [Scalars that
  // overflow]): torch.clamp(int8 tensor, -1000, 1000) -> "value cannot be converted to type
  // int8_t without overflow".
  Tensor i8 = make(ScalarType::Int8, {3}, {-128, 0, 127});
  expect_error(
      [&] {
        call("loom::clamp", {box(i8), box(int64_t{-1000}), box(int64_t{1000})});
      },
      "loom::clamp",
      {"value -1000 of argument 'min' cannot be converted to type int8 without overflow"});
  // A negative bound within -255 passes PyTorch's check for uint8 (it would wrap there, to
  // 251); loom's kernel saturates it to 0 instead, the mathematically right clamp.
  Tensor u8 = make(ScalarType::UInt8, {3}, {0, 7, 255});
  expect_values(call("loom::clamp", {box(u8), box(int64_t{-5}), box(int64_t{8})}), {0, 7, 8},
                "clamp uint8");
  // in-place and out=
  Tensor x = make(ScalarType::Int32, {3}, {-5, 0, 5});
  call("loom::clamp_", {box(x), box(int64_t{-1}), box(int64_t{1})});
  expect_values(x, {-1, 0, 1}, "clamp_");
  Tensor out = empty(Shape{3}, ScalarType::Int64);
  call("loom::clamp.out", {box(make(ScalarType::Int32, {3}, {-5, 0, 5})), dispatch::none(),
                           box(int64_t{2}), box(out)});
  expect_values(out, {-5, 0, 2}, "clamp.out");
}

TEST_F(CpuPointwise, ClampNeedsABound) {
  Tensor x = make(ScalarType::Float32, {2}, {1, 2});
  expect_error(
      [&] {
        call("loom::clamp", {box(x), dispatch::none(), dispatch::none()});
      },
      "loom::clamp", {"at least one of min and max must be given"});
  Tensor out = empty(Shape{2}, ScalarType::Float32);
  expect_error(
      [&] {
        call("loom::clamp.out", {box(x), dispatch::none(), dispatch::none(), box(out)});
      },
      "loom::clamp.out", {"at least one of min and max must be given", "plugin 'cpu'"});
  // Bool bounds keep a bool input bool, which clamp does not compute (PyTorch:
  // "clamp_scalar_cpu" not implemented for 'Bool'); float bounds promote it to float32.
  Tensor flags = make(ScalarType::Bool, {2}, {1, 0});
  expect_error(
      [&] {
        call("loom::clamp", {box(flags), box(false), box(true)});
      },
      "loom::clamp", {"does not support dtype bool"});
  Tensor promoted = call("loom::clamp", {box(flags), box(0.5), box(1.0)});
  EXPECT_EQ(promoted.dtype(), ScalarType::Float32);
  expect_values(promoted, {1, 0.5}, "clamp bool with float bounds");
}

TEST_F(CpuPointwise, ClampWithTensorBounds) {
  // torch.clamp(torch.tensor([[-3., 0.5, 4.], [1., nan, -1.]]), min=torch.tensor([-1., 0., 1.]),
  //             max=torch.tensor([[2.], [0.]])) -> [[-1., 0.5, 2.], [0., nan, 0.]]
  Tensor x = make(ScalarType::Float32, {2, 3}, {-3, 0.5, 4, 1, kNaN, -1});
  Tensor lo = make(ScalarType::Float32, {3}, {-1, 0, 1});
  Tensor hi = make(ScalarType::Float32, {2, 1}, {2, 0});
  expect_values(call("loom::clamp.Tensor", {box(x), box(lo), box(hi)}), {-1, 0.5, 2, 0, kNaN, 0},
                "clamp.Tensor");
  // Promotion over all three: int64 input, float64 bound -> float64.
  Tensor ints = make(ScalarType::Int64, {3}, {-5, 0, 5});
  Tensor result = call("loom::clamp.Tensor",
                       {box(ints), dispatch::none(), box(make(ScalarType::Float64, {}, {2.5}))});
  EXPECT_EQ(result.dtype(), ScalarType::Float64);
  expect_values(result, {-5, 0, 2.5}, "clamp.Tensor promotes");
  call("loom::clamp_.Tensor", {box(x), box(lo), dispatch::none()});
  expect_values(x, {-1, 0.5, 4, 1, kNaN, 1}, "clamp_.Tensor");
  expect_error(
      [&] {
        call("loom::clamp.Tensor", {box(x), dispatch::none(), dispatch::none()});
      },
      "loom::clamp.Tensor", {"expected at least one of min and max"});
  expect_error(
      [&] {
        call("loom::clamp_.Tensor", {box(ints), box(lo), dispatch::none()});
      },
      "loom::clamp_.Tensor", {"result type float32 can't be cast to self's dtype int64"});
}

TEST_F(CpuPointwise, NanToNum) {
  const Values in = {kNaN, kInf, -kInf, 1.5, -2.0};
  const std::pair<ScalarType, double> maxima[] = {
      {ScalarType::Float32, std::numeric_limits<float>::max()},
      {ScalarType::Float64, std::numeric_limits<double>::max()},
      {ScalarType::Float16, 65504.0},
      {ScalarType::BFloat16, 3.3895313892515355e38},
  };
  for (const auto& [dtype, max] : maxima) {
    SCOPED_TRACE(scalar_type_name(dtype));
    Tensor x = make(dtype, {5}, in);
    Tensor y =
        call("loom::nan_to_num", {box(x), dispatch::none(), dispatch::none(), dispatch::none()});
    EXPECT_EQ(y.dtype(), dtype);
    Values got = values(y);
    EXPECT_EQ(got, (Values{0.0, max, -max, 1.5, -2.0}));
    expect_values(call("loom::nan_to_num", {box(x), box(7.0), box(100.0), box(-50.0)}),
                  {7, 100, -50, 1.5, -2}, "explicit replacements");
  }
  Tensor i = make(ScalarType::Int32, {2}, {3, -4});
  Tensor y = call("loom::nan_to_num", {box(i), box(1.0), box(2.0), box(3.0)});
  EXPECT_EQ(y.dtype(), ScalarType::Int32);
  expect_values(y, {3, -4}, "nan_to_num int copies");
  Tensor x = make(ScalarType::Float32, {2}, {kNaN, 1});
  call("loom::nan_to_num_", {box(x), box(-1.0), dispatch::none(), dispatch::none()});
  expect_values(x, {-1, 1}, "nan_to_num_");
}

}  // namespace
}  // namespace loom::testing
