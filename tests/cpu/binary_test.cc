// The CPU plugin's binary pointwise kernels (arithmetic, comparison, logical, bitwise)
// against references on every dtype, broadcast and strided, with their errors.
#include "cpu_test_util.h"
#include "loom/dispatcher/boxing.h"

namespace loom::testing {
namespace {

using Ref2 = std::function<double(double, double)>;

double py_remainder(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

struct BinaryCase {
  std::string op;  // functional name
  Ref2 ref;
  std::vector<LoomValue> extra;
  bool positive_base = false;  // pow on floats
};

std::vector<BinaryCase> float_binary_cases() {
  return {
      {"loom::add.Tensor", [](double a, double b) { return a + b; }, {box(int64_t{1})}},
      {"loom::add.Tensor", [](double a, double b) { return a + 2.5 * b; }, {box(2.5)}},
      {"loom::sub.Tensor", [](double a, double b) { return a - b; }, {box(int64_t{1})}},
      {"loom::sub.Tensor", [](double a, double b) { return a - 0.5 * b; }, {box(0.5)}},
      {"loom::mul.Tensor", [](double a, double b) { return a * b; }, {}},
      {"loom::div.Tensor", [](double a, double b) { return a / b; }, {}},
      {"loom::remainder.Tensor", py_remainder, {}},
      {"loom::fmod.Tensor", [](double a, double b) { return std::fmod(a, b); }, {}},
      {"loom::pow.Tensor_Tensor", [](double a, double b) { return std::pow(a, b); }, {}, true},
      {"loom::maximum", [](double a, double b) { return std::max(a, b); }, {}},
      {"loom::minimum", [](double a, double b) { return std::min(a, b); }, {}},
      {"loom::atan2", [](double a, double b) { return std::atan2(a, b); }, {}},
  };
}

// a: [2, 3], b: [3] (broadcast over rows); values exact in float16 and bfloat16
const Values kA = {-3.5, -1.0, 0.0, 0.5, 2.0, 4.25};
const Values kB = {1.5, -2.0, 0.25};
const Values kPosA = {0.5, 1.0, 1.5, 2.0, 3.0, 0.25};

// Calls the op on a and b and checks every element against ref (on the broadcast inputs).
void expect_binary(const BinaryCase& c, const Tensor& a, const Tensor& b, ScalarType want_dtype) {
  Tensor y = call(c.op, args_of({a, b}, c.extra));
  EXPECT_EQ(y.dtype(), want_dtype);
  Values va = values(a.expand(y.sizes())), vb = values(b.expand(y.sizes()));
  Values want;
  for (size_t i = 0; i < va.size(); ++i) want.push_back(c.ref(va[i], vb[i]));
  expect_values(y, want, c.op);
}

TEST_F(CpuPointwise, FloatBinaryOpsBroadcastOnEveryFloatingDtype) {
  for (const BinaryCase& c : float_binary_cases()) {
    for (ScalarType dtype : kFloatTypes) {
      SCOPED_TRACE(c.op + " " + std::string(scalar_type_name(dtype)));
      Tensor a = make(dtype, {2, 3}, c.positive_base ? kPosA : kA);
      Tensor b = make(dtype, {3}, kB);
      expect_binary(c, a, b, dtype);
      expect_binary(c, b, a, dtype);  // broadcast on the other side
    }
  }
}

TEST_F(CpuPointwise, FloatBinaryOpsOnStridedInputs) {
  for (const BinaryCase& c : float_binary_cases()) {
    SCOPED_TRACE(c.op);
    // a transposed [2, 3] view (strides [1, 2]) with a column broadcast [2, 1]
    Tensor at = make(ScalarType::Float32, {3, 2}, c.positive_base ? kPosA : kA).t();
    Tensor col = make(ScalarType::Float32, {2, 1}, {0.75, -1.5});
    expect_binary(c, at, col, ScalarType::Float32);
    // both transposed, float64
    Tensor bt = make(ScalarType::Float64, {3, 2}, {1.5, -2.0, 0.25, 3.0, -0.5, 1.0}).t();
    Tensor a64 = make(ScalarType::Float64, {3, 2}, c.positive_base ? kPosA : kA).t();
    expect_binary(c, a64, bt, ScalarType::Float64);
  }
}

TEST_F(CpuPointwise, FloatBinaryOpsInPlaceAndOutVariants) {
  for (const BinaryCase& c : float_binary_cases()) {
    const OpNames n = names_of(c.op);
    SCOPED_TRACE(c.op);
    const Values& av = c.positive_base ? kPosA : kA;
    Values want;
    for (size_t i = 0; i < 6; ++i) want.push_back(c.ref(av[i], kB[i % 3]));
    // in-place with a broadcast other
    Tensor a = make(ScalarType::Float32, {2, 3}, av);
    Tensor b = make(ScalarType::Float32, {3}, kB);
    Tensor r = call(n.inplace, args_of({a, b}, c.extra));
    EXPECT_EQ(r.impl(), a.impl());
    expect_values(a, want, n.inplace);
    // in-place on a transposed (non-contiguous) self
    Tensor base = make(ScalarType::Float32, {3, 2}, {av[0], av[3], av[1], av[4], av[2], av[5]});
    Tensor view = base.t();  // logically av as [2, 3]
    call(n.inplace, args_of({view, b}, c.extra));
    expect_values(view, want, n.inplace + " strided self");
    // out=
    Tensor out = empty(Shape{2, 3}, ScalarType::Float32);
    Tensor src = make(ScalarType::Float32, {2, 3}, av);  // outlives the boxed arguments
    std::vector<LoomValue> out_args = args_of({src, b}, c.extra);
    out_args.push_back(box(out));
    Tensor r2 = call(n.out, out_args);
    EXPECT_EQ(r2.impl(), out.impl());
    expect_values(out, want, n.out);
  }
}

TEST_F(CpuPointwise, FloatBinaryOpsNanAndSpecialValues) {
  Tensor a = make(ScalarType::Float32, {4}, {kNaN, 1.0, kNaN, -0.0});
  Tensor b = make(ScalarType::Float32, {4}, {1.0, kNaN, kNaN, 0.0});
  expect_values(call("loom::maximum", {box(a), box(b)}), {kNaN, kNaN, kNaN, 0.0}, "maximum");
  expect_values(call("loom::minimum", {box(a), box(b)}), {kNaN, kNaN, kNaN, 0.0}, "minimum");
  for (ScalarType dtype : {ScalarType::Float16, ScalarType::BFloat16, ScalarType::Float64}) {
    Tensor x = make(dtype, {2}, {kNaN, 2.0});
    Tensor y = make(dtype, {2}, {3.0, kNaN});
    expect_values(call("loom::maximum", {box(x), box(y)}), {kNaN, kNaN}, "maximum");
    expect_values(call("loom::minimum", {box(x), box(y)}), {kNaN, kNaN}, "minimum");
  }
  Tensor num = make(ScalarType::Float64, {4}, {1.0, -1.0, 0.0, 5.0});
  Tensor den = make(ScalarType::Float64, {4}, {0.0, 0.0, 0.0, kInf});
  expect_values(call("loom::div.Tensor", {box(num), box(den)}), {kInf, -kInf, kNaN, 0.0}, "div");
  expect_values(call("loom::remainder.Tensor", {box(num), box(den)}), {kNaN, kNaN, kNaN, 5.0},
                "remainder");
  expect_values(call("loom::fmod.Tensor", {box(num), box(den)}), {kNaN, kNaN, kNaN, 5.0}, "fmod");
}

// ============================== binary, integers ==============================

int64_t int_pow(int64_t a, int64_t b) {
  int64_t r = 1;
  for (int64_t i = 0; i < b; ++i) r *= a;
  return r;
}

std::vector<BinaryCase> int_binary_cases() {
  return {
      {"loom::add.Tensor", [](double a, double b) { return a + b; }, {box(int64_t{1})}},
      {"loom::add.Tensor", [](double a, double b) { return a - 2 * b; }, {box(int64_t{-2})}},
      {"loom::sub.Tensor", [](double a, double b) { return a - b; }, {box(int64_t{1})}},
      {"loom::sub.Tensor", [](double a, double b) { return a - 3 * b; }, {box(int64_t{3})}},
      {"loom::mul.Tensor", [](double a, double b) { return a * b; }, {}},
      {"loom::remainder.Tensor", py_remainder, {}},
      {"loom::fmod.Tensor", [](double a, double b) { return std::fmod(a, b); }, {}},
      {"loom::maximum", [](double a, double b) { return std::max(a, b); }, {}},
      {"loom::minimum", [](double a, double b) { return std::min(a, b); }, {}},
      {"loom::bitwise_and.Tensor",
       [](double a, double b) { return static_cast<double>(int64_t(a) & int64_t(b)); },
       {}},
      {"loom::bitwise_or.Tensor",
       [](double a, double b) { return static_cast<double>(int64_t(a) | int64_t(b)); },
       {}},
      {"loom::bitwise_xor.Tensor",
       [](double a, double b) { return static_cast<double>(int64_t(a) ^ int64_t(b)); },
       {}},
  };
}

TEST_F(CpuPointwise, IntegerBinaryOpsOnEverySignedDtype) {
  for (const BinaryCase& c : int_binary_cases()) {
    for (ScalarType dtype : kSignedTypes) {
      SCOPED_TRACE(c.op + " " + std::string(scalar_type_name(dtype)));
      Tensor a = make(dtype, {2, 3}, {-7, -1, 0, 3, 5, 15});
      Tensor b = make(dtype, {3}, {3, -2, 7});
      expect_binary(c, a, b, dtype);
      // strided: a transposed view
      Tensor at = make(dtype, {3, 2}, {-7, 3, -1, 5, 0, 15}).t();
      expect_binary(c, at, b, dtype);
    }
  }
}

TEST_F(CpuPointwise, IntegerBinaryOpsOnUInt8) {
  for (const BinaryCase& c : int_binary_cases()) {
    if (c.op == "loom::sub.Tensor" || (c.extra.size() == 1 && c.extra[0].u.i != 1)) continue;
    SCOPED_TRACE(c.op);
    Tensor a = make(ScalarType::UInt8, {2, 3}, {7, 1, 0, 30, 5, 200});
    Tensor b = make(ScalarType::UInt8, {3}, {3, 2, 7});
    Tensor y = call(c.op, args_of({a, b}, c.extra));
    EXPECT_EQ(y.dtype(), ScalarType::UInt8);
    Values va = values(a), want;
    for (size_t i = 0; i < 6; ++i) {
      want.push_back(std::fmod(c.ref(va[i], values(b)[i % 3]) + 256.0, 256.0));
    }
    expect_values(y, want, c.op);
  }
}

TEST_F(CpuPointwise, IntegerPowIsExact) {
  for (ScalarType dtype : {ScalarType::Int32, ScalarType::Int64}) {
    SCOPED_TRACE(scalar_type_name(dtype));
    Tensor a = make(dtype, {6}, {-3, -1, 0, 2, 7, 10});
    Tensor b = make(dtype, {6}, {3, 5, 0, 10, 4, 9});
    Tensor y = call("loom::pow.Tensor_Tensor", {box(a), box(b)});
    EXPECT_EQ(y.dtype(), dtype);
    expect_values(y, {-27, -1, 1, 1024, 2401, static_cast<double>(int_pow(10, 9))}, "pow");
  }
  Tensor big = make(ScalarType::Int64, {1}, {3});
  Tensor e = make(ScalarType::Int64, {1}, {39});
  EXPECT_EQ(call("loom::pow.Tensor_Tensor", {box(big), box(e)}).data<int64_t>()[0],
            int_pow(3, 39));  // 4052555153018976267, beyond double's exact range
  Tensor u = make(ScalarType::UInt8, {2}, {2, 3});
  expect_values(
      call("loom::pow.Tensor_Tensor", {box(u), box(make(ScalarType::UInt8, {2}, {7, 5}))}),
      {128, 243}, "pow uint8");
  // in-place and out=
  Tensor x = make(ScalarType::Int16, {3}, {2, -3, 5});
  Tensor p = make(ScalarType::Int16, {1}, {3});
  call("loom::pow_.Tensor_Tensor", {box(x), box(p)});
  expect_values(x, {8, -27, 125}, "pow_");
  Tensor out = empty(Shape{3}, ScalarType::Int16);
  call("loom::pow.Tensor_Tensor_out",
       {box(make(ScalarType::Int16, {3}, {2, -3, 5})), box(p), box(out)});
  expect_values(out, {8, -27, 125}, "pow.out");
}

// Note [pow's shortcuts]: one exponent of 2, 3, -1, -2, 0.5 or -0.5 for every element is
// computed by products, a division or a square root; the values (zeros, negatives, inf and
// NaN included) are pow()'s, except where PyTorch's shortcut differs (sqrt(-inf) is NaN).
TEST_F(CpuPointwise, PowWithOneCommonExponentTakesPyTorchsShortcuts) {
  const double inf = std::numeric_limits<double>::infinity();
  const Values base = {0.0, 1.5, -2.0, 3.0, 0.125, -inf, inf, kNaN};  // exact in bfloat16
  for (ScalarType dtype : {ScalarType::Float32, ScalarType::Float64, ScalarType::BFloat16}) {
    for (double e : {2.0, 3.0, -1.0, -2.0, 0.5, -0.5, 1.75}) {
      const std::string what =
          "pow " + std::string(scalar_type_name(dtype)) + " ^ " + std::to_string(e);
      Tensor x = make(dtype, {static_cast<int64_t>(base.size())}, base);
      Tensor exponent = make(dtype, {}, {e});  // broadcast: stride 0
      Values want;
      for (double b : base) {
        double v = std::pow(b, e);
        if (e == 0.5) v = std::sqrt(b);
        if (e == -0.5) v = 1.0 / std::sqrt(b);
        want.push_back(v);
      }
      expect_values(call("loom::pow.Tensor_Tensor", {box(x), box(exponent)}), want, what);
    }
  }
  // Signed zeros keep their sign where the shortcut's arithmetic keeps it.
  Tensor zero = make(ScalarType::Float32, {1}, {-0.0});
  EXPECT_EQ(values(call("loom::pow.Tensor_Tensor",
                        {box(zero), box(make(ScalarType::Float32, {}, {-1.0}))}))[0],
            -inf);
  // An exponent tensor of several elements takes pow() per element.
  Tensor x = make(ScalarType::Float32, {2}, {2.0, 2.0});
  expect_values(
      call("loom::pow.Tensor_Tensor", {box(x), box(make(ScalarType::Float32, {2}, {2.0, 0.5}))}),
      {4.0, std::sqrt(2.0)}, "pow per element");
}

TEST_F(CpuPointwise, IntegerArithmeticWraps) {
  Tensor a = make(ScalarType::Int8, {2}, {100, -128});
  Tensor b = make(ScalarType::Int8, {2}, {100, 1});
  expect_values(call("loom::add.Tensor", {box(a), box(b), box(int64_t{1})}), {-56, -127},
                "int8 add");
  expect_values(call("loom::mul.Tensor", {box(a), box(b)}), {16, -128}, "int8 mul");
  expect_values(call("loom::sub.Tensor", {box(b), box(a), box(int64_t{1})}), {0, -127}, "int8 sub");
  Tensor m = make(ScalarType::Int32, {1}, {2147483647});
  Tensor one = make(ScalarType::Int32, {1}, {1});
  expect_values(call("loom::add.Tensor", {box(m), box(one), box(int64_t{1})}), {-2147483648.0},
                "int32 add");
  // lowest % -1 and lowest / -1 must not trap
  Tensor low = make(ScalarType::Int64, {1}, {static_cast<double>(INT64_MIN)});
  Tensor neg1 = make(ScalarType::Int64, {1}, {-1});
  expect_values(call("loom::remainder.Tensor", {box(low), box(neg1)}), {0}, "remainder");
  expect_values(call("loom::fmod.Tensor", {box(low), box(neg1)}), {0}, "fmod");
}

TEST_F(CpuPointwise, BoolBinaryOps) {
  Tensor a = make(ScalarType::Bool, {4}, {0, 0, 1, 1});
  Tensor b = make(ScalarType::Bool, {4}, {0, 1, 0, 1});
  const std::pair<const char*, Values> cases[] = {
      {"loom::mul.Tensor", {0, 0, 0, 1}},
      {"loom::maximum", {0, 1, 1, 1}},
      {"loom::minimum", {0, 0, 0, 1}},
      {"loom::pow.Tensor_Tensor", {1, 0, 1, 1}},
      {"loom::bitwise_and.Tensor", {0, 0, 0, 1}},
      {"loom::bitwise_or.Tensor", {0, 1, 1, 1}},
      {"loom::bitwise_xor.Tensor", {0, 1, 1, 0}},
  };
  for (const auto& [op, want] : cases) {
    Tensor y = call(op, {box(a), box(b)});
    EXPECT_EQ(y.dtype(), ScalarType::Bool) << op;
    expect_values(y, want, op);
  }
  Tensor sum = call("loom::add.Tensor", {box(a), box(b), box(int64_t{1})});
  EXPECT_EQ(sum.dtype(), ScalarType::Bool);
  expect_values(sum, {0, 1, 1, 1}, "add bool is or");
  expect_values(call("loom::add.Tensor", {box(a), box(b), box(true)}), {0, 1, 1, 1},
                "add bool alpha=True");
  expect_values(call("loom::add.Tensor", {box(a), box(b), box(false)}), {0, 0, 1, 1},
                "add bool alpha=False");
  expect_values(call("loom::div.Tensor", {box(a), box(b)}), {kNaN, 0, kInf, 1}, "bool div");
}

// ============================== comparisons and logical ops ==============================

TEST_F(CpuPointwise, ComparisonsOnEveryDtype) {
  const std::pair<const char*, Ref2> cases[] = {
      {"loom::eq.Tensor", [](double a, double b) -> double { return a == b; }},
      {"loom::ne.Tensor", [](double a, double b) -> double { return a != b; }},
      {"loom::lt.Tensor", [](double a, double b) -> double { return a < b; }},
      {"loom::le.Tensor", [](double a, double b) -> double { return a <= b; }},
      {"loom::gt.Tensor", [](double a, double b) -> double { return a > b; }},
      {"loom::ge.Tensor", [](double a, double b) -> double { return a >= b; }},
      {"loom::logical_and", [](double a, double b) -> double { return a != 0 && b != 0; }},
      {"loom::logical_or", [](double a, double b) -> double { return a != 0 || b != 0; }},
      {"loom::logical_xor", [](double a, double b) -> double { return (a != 0) != (b != 0); }},
  };
  const ScalarType all[] = {ScalarType::Bool,    ScalarType::UInt8,    ScalarType::Int8,
                            ScalarType::Int16,   ScalarType::Int32,    ScalarType::Int64,
                            ScalarType::Float16, ScalarType::BFloat16, ScalarType::Float32,
                            ScalarType::Float64};
  for (const auto& [op, ref] : cases) {
    for (ScalarType dtype : all) {
      SCOPED_TRACE(std::string(op) + " " + std::string(scalar_type_name(dtype)));
      const bool b = dtype == ScalarType::Bool;
      const bool f = is_float(dtype);
      Values av = b ? Values{0, 1, 1, 0, 1, 0} : Values{0, 2, 5, 3, 1, 0};
      Values bv = b ? Values{1, 1, 0} : Values{2, 0, 5};
      if (f) av[5] = kNaN;  // NaN compares unequal to everything
      BinaryCase c{op, ref, {}};
      Tensor at = make(dtype, {3, 2}, {av[0], av[3], av[1], av[4], av[2], av[5]}).t();
      expect_binary(c, at, make(dtype, {3}, bv), ScalarType::Bool);
    }
  }
  // out= with a float out: computed as bool, stored as 0 / 1
  Tensor out = empty(Shape{2}, ScalarType::Float32);
  call("loom::lt.out", {box(make(ScalarType::Int32, {2}, {1, 5})),
                        box(make(ScalarType::Int32, {2}, {3, 3})), box(out)});
  expect_values(out, {1, 0}, "lt.out float32");
}

// ============================== errors ==============================

TEST_F(CpuPointwise, AlphaMustBeIntegralForIntegerTensors) {
  Tensor a = make(ScalarType::Int32, {2}, {1, 2});
  expect_error(
      [&] {
        call("loom::add.Tensor", {box(a), box(a), box(0.5)});
      },
      "loom::add.Tensor",
      {"for integral input tensors, argument alpha must not be a floating point number, found "
       "0.5"});
  Tensor out = empty(Shape{2}, ScalarType::Int32);
  expect_error(
      [&] {
        call("loom::add.out", {box(a), box(a), box(0.5), box(out)});
      },
      "loom::add.out", {"argument alpha must not be a floating point number, found 0.5"});
  expect_error(
      [&] {
        call("loom::sub_.Tensor", {box(a), box(a), box(2.0)});
      },
      "loom::sub_.Tensor", {"argument alpha must not be a floating point number", "found 2"});
  Tensor b = make(ScalarType::Bool, {2}, {1, 0});
  expect_error(
      [&] {
        call("loom::add.Tensor", {box(b), box(b), box(0.5)});
      },
      "loom::add.Tensor", {"argument alpha must not be a floating point number"});
  // torch.add(torch.ones(2), torch.ones(2), alpha=True) -> "Boolean alpha only supported for
  // Boolean results."
  Tensor f = make(ScalarType::Float32, {2}, {1, 2});
  expect_error(
      [&] {
        call("loom::add.Tensor", {box(f), box(f), box(true)});
      },
      "loom::add.Tensor",
      {"a bool alpha is only supported for bool results, found a float32 result"});
  // An alpha the compute dtype cannot hold: torch.add(int8, int8, alpha=1000) -> "value cannot
  // be converted to type int8_t without overflow".
  Tensor i8 = make(ScalarType::Int8, {2}, {1, 2});
  expect_error(
      [&] {
        call("loom::add.Tensor", {box(i8), box(i8), box(int64_t{1000})});
      },
      "loom::add.Tensor",
      {"value 1000 of argument 'alpha' cannot be converted to type int8 without overflow"});
}

TEST_F(CpuPointwise, SubtractingBoolsIsAnError) {
  // torch.sub(b, b) for bool b -> "Subtraction, the `-` operator, with two bool tensors is not
  // supported. Use the `^` or `logical_xor()` operator instead."
  Tensor b = make(ScalarType::Bool, {2}, {1, 0});
  expect_error(
      [&] {
        call("loom::sub.Tensor", {box(b), box(b), box(int64_t{1})});
      },
      "loom::sub.Tensor", {"subtraction of two bool tensors is not supported; use logical_xor"});
  // torch.sub(b, torch.tensor([1, 2])) -> "Subtraction, the `-` operator, with a bool tensor
  // is not supported. If you are trying to invert a mask, use the `~` or `logical_not()`
  // operator instead." Also with the bool on the right, and in place.
  Tensor i = make(ScalarType::Int64, {2}, {1, 2});
  expect_error(
      [&] {
        call("loom::sub.Tensor", {box(b), box(i), box(int64_t{1})});
      },
      "loom::sub.Tensor", {"subtraction with a bool tensor is not supported"});
  expect_error(
      [&] {
        call("loom::sub.Tensor", {box(i), box(b), box(int64_t{1})});
      },
      "loom::sub.Tensor", {"use logical_not"});
  expect_error(
      [&] {
        call("loom::sub_.Tensor", {box(i), box(b), box(int64_t{1})});
      },
      "loom::sub_.Tensor", {"subtraction with a bool tensor"});
  EXPECT_EQ(values(i), (Values{1, 2}));
}

TEST_F(CpuPointwise, IntegerDivisionByZeroIsAnError) {
  for (ScalarType dtype : kIntTypes) {
    SCOPED_TRACE(scalar_type_name(dtype));
    Tensor a = make(dtype, {3}, {1, 2, 3});
    Tensor b = make(dtype, {3}, {1, 0, 1});
    expect_error(
        [&] {
          call("loom::remainder.Tensor", {box(a), box(b)});
        },
        "loom::remainder.Tensor", {"integer division by zero"});
    Tensor out = empty(Shape{3}, dtype);
    expect_error(
        [&] {
          call("loom::fmod.out", {box(a), box(b), box(out)});
        },
        "loom::fmod.out", {"integer division by zero", "plugin 'cpu'"});
  }
  // int / int promotes to float: no error, IEEE results
  Tensor i = make(ScalarType::Int32, {2}, {1, 0});
  Tensor z = make(ScalarType::Int32, {2}, {0, 0});
  Tensor q = call("loom::div.Tensor", {box(i), box(z)});
  EXPECT_EQ(q.dtype(), ScalarType::Float32);
  expect_values(q, {kInf, kNaN}, "int div by zero");
}

TEST_F(CpuPointwise, IntegerPowFollowsPyTorchForNegativeExponents) {
  // torch.pow(torch.tensor([2, 1, -1, -1, 3, 3], dtype=torch.int32),
  //           torch.tensor([-1, -3, -3, -2, 0, 2], dtype=torch.int32))
  // -> tensor([0, 1, -1, 1, 1, 9], dtype=torch.int32); only a number exponent is refused.
  Tensor a = make(ScalarType::Int32, {6}, {2, 1, -1, -1, 3, 3});
  Tensor e = make(ScalarType::Int32, {6}, {-1, -3, -3, -2, 0, 2});
  expect_values(call("loom::pow.Tensor_Tensor", {box(a), box(e)}), {0, 1, -1, 1, 1, 9},
                "integer pow");
  // torch.pow(torch.tensor([3], dtype=torch.int8), torch.tensor([5], dtype=torch.int8))
  // -> -13 (243 wraps)
  expect_values(call("loom::pow.Tensor_Tensor", {box(make(ScalarType::Int8, {1}, {3})),
                                                 box(make(ScalarType::Int8, {1}, {5}))}),
                {-13}, "int8 pow wraps");
  // floats are fine
  Tensor f = make(ScalarType::Float32, {2}, {2, 4});
  expect_values(
      call("loom::pow.Tensor_Tensor", {box(f), box(make(ScalarType::Float32, {2}, {-1, -0.5}))}),
      {0.5, 0.5}, "float pow");
}

TEST_F(CpuPointwise, BitwiseOpsRejectFloats) {
  for (const char* op :
       {"loom::bitwise_and.Tensor", "loom::bitwise_or.Tensor", "loom::bitwise_xor.Tensor"}) {
    for (ScalarType dtype : kFloatTypes) {
      Tensor x = make(dtype, {2}, {1, 2});
      expect_error(
          [&] {
            call(op, {box(x), box(x)});
          },
          op,
          {"backend CPU does not support dtype " + std::string(scalar_type_name(dtype)) +
           " (claims: bool, uint8, int8, int16, int32, int64)"});
    }
  }
  // an int tensor with a float tensor promotes to float: also an error
  expect_error(
      [&] {
        call("loom::bitwise_or.Tensor",
             {box(make(ScalarType::Int32, {1}, {1})), box(make(ScalarType::Float32, {1}, {1}))});
      },
      "loom::bitwise_or.Tensor", {"does not support dtype float32"});
}

// ============================== promotion through the core ==============================

}  // namespace
}  // namespace loom::testing
