// The CPU plugin's pointwise kernels end to end through the dispatcher: every structured
// op of ops.def against a float64 reference computed here with <cmath>, on every dtype
// it supports, through the functional, in-place and out= variants, on broadcast, strided
// and zero-size inputs, with type promotion by the core, and the kernels' errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "../dispatcher/dispatch_test_util.h"
#include "loom/dispatcher/plugin_host.h"

namespace loom::testing {
namespace {

using dispatch::box;
using dispatch::Dispatcher;
using Shape = std::vector<int64_t>;
using Values = std::vector<double>;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

constexpr ScalarType kFloatTypes[] = {ScalarType::Float32, ScalarType::Float64, ScalarType::Float16,
                                      ScalarType::BFloat16};
constexpr ScalarType kSignedTypes[] = {ScalarType::Int8, ScalarType::Int16, ScalarType::Int32,
                                       ScalarType::Int64};
constexpr ScalarType kIntTypes[] = {ScalarType::UInt8, ScalarType::Int8, ScalarType::Int16,
                                    ScalarType::Int32, ScalarType::Int64};

// --- float16 / bfloat16 decoding, written independently of the plugin ---

double half_to_double(uint16_t h) {
  const int e = (h >> 10) & 0x1f;
  const int m = h & 0x3ff;
  double v = e == 0    ? std::ldexp(m, -24)
             : e == 31 ? (m != 0 ? kNaN : kInf)
                       : std::ldexp(m + 1024, e - 25);
  return (h & 0x8000) ? -v : v;
}

double bfloat16_to_double(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// The bit pattern of a value exactly representable in float16 / bfloat16.
uint16_t encode_exact(ScalarType t, double v) {
  static const auto tables = [] {
    std::pair<std::map<double, uint16_t>, std::map<double, uint16_t>> maps;
    for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
      double h = half_to_double(static_cast<uint16_t>(bits));
      double b = bfloat16_to_double(static_cast<uint16_t>(bits));
      if (!std::isnan(h)) maps.first.emplace(h, static_cast<uint16_t>(bits));
      if (!std::isnan(b)) maps.second.emplace(b, static_cast<uint16_t>(bits));
    }
    return maps;
  }();
  const bool half = t == ScalarType::Float16;
  if (std::isnan(v)) return half ? 0x7e00 : 0x7fc0;
  const auto& table = half ? tables.first : tables.second;
  auto it = table.find(v);
  if (it == table.end()) {
    ADD_FAILURE() << v << " is not exactly representable in " << scalar_type_name(t);
    return 0;
  }
  return it->second;
}

// --- tensors from and to doubles ---

void store(const Tensor& t, int64_t offset, double v) {
  void* p = t.data_ptr();
  switch (t.dtype()) {
    case ScalarType::Bool:
      static_cast<bool*>(p)[offset] = v != 0;
      break;
    case ScalarType::UInt8:
      static_cast<uint8_t*>(p)[offset] = static_cast<uint8_t>(v);
      break;
    case ScalarType::Int8:
      static_cast<int8_t*>(p)[offset] = static_cast<int8_t>(v);
      break;
    case ScalarType::Int16:
      static_cast<int16_t*>(p)[offset] = static_cast<int16_t>(v);
      break;
    case ScalarType::Int32:
      static_cast<int32_t*>(p)[offset] = static_cast<int32_t>(v);
      break;
    case ScalarType::Int64:
      static_cast<int64_t*>(p)[offset] = static_cast<int64_t>(v);
      break;
    case ScalarType::Float16:
    case ScalarType::BFloat16:
      static_cast<uint16_t*>(p)[offset] = encode_exact(t.dtype(), v);
      break;
    case ScalarType::Float32:
      static_cast<float*>(p)[offset] = static_cast<float>(v);
      break;
    case ScalarType::Float64:
      static_cast<double*>(p)[offset] = v;
      break;
    default:
      ADD_FAILURE() << "unexpected dtype";
  }
}

double load(const Tensor& t, int64_t offset) {
  const void* p = t.data_ptr();
  switch (t.dtype()) {
    case ScalarType::Bool:
      return static_cast<const bool*>(p)[offset];
    case ScalarType::UInt8:
      return static_cast<const uint8_t*>(p)[offset];
    case ScalarType::Int8:
      return static_cast<const int8_t*>(p)[offset];
    case ScalarType::Int16:
      return static_cast<const int16_t*>(p)[offset];
    case ScalarType::Int32:
      return static_cast<const int32_t*>(p)[offset];
    case ScalarType::Int64:
      return static_cast<double>(static_cast<const int64_t*>(p)[offset]);
    case ScalarType::Float16:
      return half_to_double(static_cast<const uint16_t*>(p)[offset]);
    case ScalarType::BFloat16:
      return bfloat16_to_double(static_cast<const uint16_t*>(p)[offset]);
    case ScalarType::Float32:
      return static_cast<const float*>(p)[offset];
    case ScalarType::Float64:
      return static_cast<const double*>(p)[offset];
    default:
      ADD_FAILURE() << "unexpected dtype";
      return 0;
  }
}

// A contiguous tensor holding `values` in row-major order.
Tensor make(ScalarType dtype, const Shape& sizes, const Values& values) {
  Tensor t = empty(sizes, dtype);
  EXPECT_EQ(t.numel(), static_cast<int64_t>(values.size()));
  const size_t n = std::min(values.size(), static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < n; ++i) store(t, static_cast<int64_t>(i), values[i]);
  return t;
}

// The elements of t in row-major order of its logical shape (any strides).
Values values(const Tensor& t) {
  Values out;
  const int64_t n = t.numel();
  out.reserve(static_cast<size_t>(n));
  Shape index(static_cast<size_t>(t.dim()), 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t offset = 0;
    for (int64_t d = 0; d < t.dim(); ++d) offset += index[d] * t.stride(d);
    out.push_back(load(t, offset));
    for (int64_t d = t.dim() - 1; d >= 0; --d) {
      if (++index[d] < t.size(d)) break;
      index[d] = 0;
    }
  }
  return out;
}

Shape shape_of(const Tensor& t) {
  return Shape(t.sizes().begin(), t.sizes().end());
}

bool is_float(ScalarType t) {
  return t == ScalarType::Float16 || t == ScalarType::BFloat16 || t == ScalarType::Float32 ||
         t == ScalarType::Float64;
}

// The tolerance of a result dtype: |got - want| <= tol * (|want| + 1).
double tolerance(ScalarType t) {
  switch (t) {
    case ScalarType::Float64:
      return 1e-12;
    case ScalarType::Float32:
      return 1e-6;
    case ScalarType::Float16:
    case ScalarType::BFloat16:
      return 1e-2;
    default:
      return 0;
  }
}

void expect_close(double got, double want, ScalarType t, const std::string& what) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << what << ": got " << got << ", want NaN";
  } else if (std::isinf(want)) {
    EXPECT_EQ(got, want) << what;
  } else {
    const double tol = tolerance(t);
    const double scale = t == ScalarType::Float16 || t == ScalarType::BFloat16 ? 1e-2 : 1.0;
    EXPECT_LE(std::abs(got - want), tol * (std::abs(want) + scale))
        << what << ": got " << got << ", want " << want << " (" << scalar_type_name(t) << ")";
  }
}

// Checks t's elements; the tolerance is that of `computed_in` (default: t's dtype).
void expect_values(const Tensor& t, const Values& want, const std::string& what,
                   std::optional<ScalarType> computed_in = std::nullopt) {
  Values got = values(t);
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    expect_close(got[i], want[i], computed_in.value_or(t.dtype()),
                 what + " [" + std::to_string(i) + "]");
  }
}

// --- calling ops by name ---

Tensor call(const std::string& op, std::vector<LoomValue> args) {
  Dispatcher& d = Dispatcher::instance();
  LoomValue ret[1];
  d.call(d.find_defined(op), args.data(), args.size(), ret, 1);
  return dispatch::unbox_tensor(ret[0], op);
}

// The variant names of a structured op given its functional name ("loom::add.Tensor").
struct OpNames {
  std::string functional, inplace, out;
};
OpNames names_of(const std::string& functional) {
  const size_t dot = functional.find('.');
  const std::string base = functional.substr(0, dot);
  const std::string overload = dot == std::string::npos ? "" : functional.substr(dot + 1);
  OpNames n;
  n.functional = functional;
  n.inplace = base + "_" + (overload.empty() ? "" : "." + overload);
  n.out = base + "." + (overload.empty() || overload == "Tensor" ? "out" : overload + "_out");
  return n;
}

// Arguments: the tensors followed by `extra` (scalars, strings).
std::vector<LoomValue> args_of(std::initializer_list<Tensor> tensors,
                               const std::vector<LoomValue>& extra) {
  std::vector<LoomValue> args;
  for (const Tensor& t : tensors) args.push_back(box(t));
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

class CpuPointwise : public ::testing::Test {
 protected:
  void SetUp() override {
    dispatch::PluginHost::instance().load(std::string(LOOM_PLUGIN_DIR) + "/libloom_plugin_cpu.so");
  }
};

// ============================== unary, floating ==============================

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
               {"dtype bool is not supported"});
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
  }
}

TEST_F(CpuPointwise, ClampOnIntegers) {
  for (ScalarType dtype : kSignedTypes) {
    SCOPED_TRACE(scalar_type_name(dtype));
    Tensor x = make(dtype, {5}, {-100, -3, 0, 4, 100});
    Tensor y = call("loom::clamp", {box(x), box(int64_t{-2}), box(int64_t{5})});
    EXPECT_EQ(y.dtype(), dtype);
    expect_values(y, {-2, -2, 0, 4, 5}, "clamp");
    // float bounds on an integer tensor keep the tensor's dtype
    expect_values(call("loom::clamp", {box(x), box(-2.5), box(4.5)}), {-2, -2, 0, 4, 4},
                  "clamp float bounds");
    expect_values(call("loom::hardtanh", {box(x), box(int64_t{-1}), box(int64_t{1})}),
                  {-1, -1, 0, 1, 1}, "hardtanh");
  }
  // bounds outside the dtype's range saturate instead of wrapping
  Tensor i8 = make(ScalarType::Int8, {3}, {-128, 0, 127});
  expect_values(call("loom::clamp", {box(i8), box(int64_t{-1000}), box(int64_t{1000})}),
                {-128, 0, 127}, "clamp int8 wide bounds");
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
  expect_error(
      [&] {
        call("loom::clamp", {box(make(ScalarType::Bool, {1}, {1})), box(0.0), box(1.0)});
      },
      "loom::clamp", {"dtype bool is not supported"});
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

// ============================== binary, arithmetic ==============================

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
      "loom::add.Tensor", {"alpha must be an integer for integer tensors, found 0.5"});
  Tensor out = empty(Shape{2}, ScalarType::Int32);
  expect_error(
      [&] {
        call("loom::add.out", {box(a), box(a), box(0.5), box(out)});
      },
      "loom::add.out", {"alpha must be an integer for integer tensors, found 0.5", "plugin 'cpu'"});
  expect_error(
      [&] {
        call("loom::sub_.Tensor", {box(a), box(a), box(2.0)});
      },
      "loom::sub_.Tensor", {"alpha must be an integer", "found 2"});
  Tensor b = make(ScalarType::Bool, {2}, {1, 0});
  expect_error(
      [&] {
        call("loom::add.Tensor", {box(b), box(b), box(0.5)});
      },
      "loom::add.Tensor", {"alpha must be an integer"});
}

TEST_F(CpuPointwise, SubtractingBoolsIsAnError) {
  Tensor b = make(ScalarType::Bool, {2}, {1, 0});
  expect_error(
      [&] {
        call("loom::sub.Tensor", {box(b), box(b), box(int64_t{1})});
      },
      "loom::sub.Tensor", {"subtraction with bool tensors is not supported"});
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

TEST_F(CpuPointwise, IntegersToNegativePowersAreAnError) {
  Tensor a = make(ScalarType::Int64, {2}, {2, 3});
  Tensor e = make(ScalarType::Int64, {2}, {2, -1});
  expect_error(
      [&] {
        call("loom::pow.Tensor_Tensor", {box(a), box(e)});
      },
      "loom::pow.Tensor_Tensor", {"integers to negative integer powers are not allowed"});
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
          {"dtype " + std::string(scalar_type_name(dtype)) +
           " is not supported (expected bool or an integer type)"});
    }
  }
  // an int tensor with a float tensor promotes to float: also an error
  expect_error(
      [&] {
        call("loom::bitwise_or.Tensor",
             {box(make(ScalarType::Int32, {1}, {1})), box(make(ScalarType::Float32, {1}, {1}))});
      },
      "loom::bitwise_or.Tensor", {"dtype float32 is not supported"});
}

// ============================== promotion through the core ==============================

TEST_F(CpuPointwise, TypePromotion) {
  Tensor i32 = make(ScalarType::Int32, {3}, {7, -3, 2});
  Tensor f32 = make(ScalarType::Float32, {3}, {0.5, 0.25, -1});
  Tensor sum = call("loom::add.Tensor", {box(i32), box(f32), box(int64_t{1})});
  EXPECT_EQ(sum.dtype(), ScalarType::Float32);
  expect_values(sum, {7.5, -2.75, 1}, "int32 + float32");

  Tensor two = make(ScalarType::Int32, {3}, {2, 2, 4});
  Tensor q = call("loom::div.Tensor", {box(i32), box(two)});
  EXPECT_EQ(q.dtype(), ScalarType::Float32);
  expect_values(q, {3.5, -1.5, 0.5}, "int32 / int32");

  Tensor eq = call("loom::eq.Tensor", {box(i32), box(make(ScalarType::Float32, {3}, {7, 3, 2.5}))});
  EXPECT_EQ(eq.dtype(), ScalarType::Bool);
  expect_values(eq, {1, 0, 0}, "int32 == float32");

  // a 0-dim float64 tensor with an int32 tensor: a higher category, so its dtype wins
  Tensor zero_dim = make(ScalarType::Float64, {}, {0.5});
  Tensor m = call("loom::mul.Tensor", {box(i32), box(zero_dim)});
  EXPECT_EQ(m.dtype(), ScalarType::Float64);
  expect_values(m, {3.5, -1.5, 1}, "int32 * 0-dim float64");
  // a 0-dim int64 with an int32 tensor: same category, the dimensioned tensor wins
  Tensor zero_i64 = make(ScalarType::Int64, {}, {10});
  Tensor s = call("loom::add.Tensor", {box(i32), box(zero_i64), box(int64_t{1})});
  EXPECT_EQ(s.dtype(), ScalarType::Int32);
  expect_values(s, {17, 7, 12}, "int32 + 0-dim int64");
  // a 0-dim float64 with a float16 tensor: the dimensioned float16 wins
  Tensor h = make(ScalarType::Float16, {2}, {1.5, -2});
  Tensor hs = call("loom::mul.Tensor", {box(h), box(zero_dim)});
  EXPECT_EQ(hs.dtype(), ScalarType::Float16);
  expect_values(hs, {0.75, -1}, "float16 * 0-dim float64");

  Tensor mixed =
      call("loom::sub.Tensor", {box(make(ScalarType::Int8, {2}, {-5, 100})),
                                box(make(ScalarType::UInt8, {2}, {200, 3})), box(int64_t{1})});
  EXPECT_EQ(mixed.dtype(), ScalarType::Int16);
  expect_values(mixed, {-205, 97}, "int8 - uint8");

  Tensor hf = call("loom::add.Tensor",
                   {box(h), box(make(ScalarType::Float32, {2}, {0.1, 0.2})), box(int64_t{1})});
  EXPECT_EQ(hf.dtype(), ScalarType::Float32);
  expect_values(hf, {1.5 + static_cast<float>(0.1), -2 + static_cast<float>(0.2)},
                "float16 + float32");

  Tensor bf = call("loom::atan2", {box(make(ScalarType::BFloat16, {1}, {1})),
                                   box(make(ScalarType::Int64, {1}, {1}))});
  EXPECT_EQ(bf.dtype(), ScalarType::BFloat16);
  expect_values(bf, {std::atan2(1.0, 1.0)}, "atan2 bfloat16, int64");

  Tensor bi =
      call("loom::add.Tensor", {box(make(ScalarType::Bool, {2}, {1, 0})),
                                box(make(ScalarType::Int32, {2}, {5, 5})), box(int64_t{1})});
  EXPECT_EQ(bi.dtype(), ScalarType::Int32);
  expect_values(bi, {6, 5}, "bool + int32");
}

TEST_F(CpuPointwise, InPlaceAndOutCheckTheResultDtype) {
  Tensor i = make(ScalarType::Int32, {2}, {1, 2});
  Tensor f = make(ScalarType::Float32, {2}, {0.5, 0.5});
  // float result into an int self cannot be cast
  expect_error(
      [&] {
        call("loom::add_.Tensor", {box(i), box(f), box(int64_t{1})});
      },
      "loom::add_.Tensor", {"can't be cast"});
  expect_error([&] { call("loom::exp_", {box(i)}); }, "loom::exp_", {"can't be cast"});
  // an int other into a float self is fine
  call("loom::mul_.Tensor", {box(f), box(i)});
  expect_values(f, {0.5, 1.0}, "mul_ float32 by int32");
  // out= of a wider dtype receives the cast result
  Tensor out = empty(Shape{2}, ScalarType::Float64);
  call("loom::add.out", {box(i), box(i), box(int64_t{3}), box(out)});
  expect_values(out, {4, 8}, "add.out int32 into float64");
  // out= of the wrong shape
  Tensor small = empty(Shape{3}, ScalarType::Int32);
  expect_error(
      [&] {
        call("loom::add.out", {box(i), box(i), box(int64_t{1}), box(small)});
      },
      "loom::add.out", {"shape"});
}

// ============================== layouts ==============================

TEST_F(CpuPointwise, ZeroSizeInputs) {
  Tensor e = empty(Shape{0, 3}, ScalarType::Float32);
  Tensor y = call("loom::exp", {box(e)});
  EXPECT_EQ(shape_of(y), (Shape{0, 3}));
  EXPECT_EQ(y.dtype(), ScalarType::Float32);
  Tensor row = make(ScalarType::Float32, {3}, {1, 2, 3});
  Tensor s = call("loom::add.Tensor", {box(e), box(row), box(int64_t{1})});
  EXPECT_EQ(shape_of(s), (Shape{0, 3}));
  Tensor c = call("loom::lt.Tensor", {box(row), box(e)});
  EXPECT_EQ(shape_of(c), (Shape{0, 3}));
  EXPECT_EQ(c.dtype(), ScalarType::Bool);
  Tensor ei = empty(Shape{0}, ScalarType::Int32);
  EXPECT_EQ(call("loom::remainder.Tensor", {box(ei), box(ei)}).numel(), 0);  // no div-by-0
  EXPECT_EQ(call("loom::pow.Tensor_Tensor", {box(ei), box(ei)}).numel(), 0);
  EXPECT_EQ(call("loom::neg", {box(ei)}).numel(), 0);
  call("loom::sigmoid_", {box(e)});
  Tensor out = empty(Shape{0, 3}, ScalarType::Float32);
  call("loom::mul.out", {box(e), box(row), box(out)});
  EXPECT_EQ(call("loom::clamp", {box(empty(Shape{2, 0}, ScalarType::Float16)), box(0.0), box(1.0)})
                .numel(),
            0);
}

TEST_F(CpuPointwise, ZeroDimInputs) {
  Tensor x = make(ScalarType::Float64, {}, {0.5});
  Tensor y = call("loom::exp", {box(x)});
  EXPECT_EQ(y.dim(), 0);
  expect_values(y, {std::exp(0.5)}, "exp 0-dim");
  Tensor z = call("loom::sub.Tensor", {box(x), box(x), box(int64_t{1})});
  EXPECT_EQ(z.dim(), 0);
  expect_values(z, {0.0}, "sub 0-dim");
}

// A 3-d input in many layouts, with every kind of operand stride, against an
// elementwise reference: exercises the N-d walk (dim ordering, coalescing, tails).
TEST_F(CpuPointwise, NdLayouts) {
  const int64_t n0 = 5, n1 = 7, n2 = 9;  // odd sizes: vector loop tails
  Values base_values;
  for (int64_t i = 0; i < n0 * n1 * n2; ++i) base_values.push_back(std::ldexp(i % 97, -3) - 5.0);
  Tensor base = make(ScalarType::Float32, {n0, n1, n2}, base_values);
  const Tensor layouts[] = {
      base,
      base.permute(std::vector<int64_t>{2, 0, 1}),
      base.transpose(0, 2),
      base.slice(2, 1, std::nullopt, 2),
      base.slice(1, 0, std::nullopt, 3).transpose(1, 2),
      base.select(1, 3),
      base.diagonal(0, 1, 2),
  };
  for (const Tensor& view : layouts) {
    SCOPED_TRACE(view.describe());
    Values in = values(view);
    // unary
    Tensor y = call("loom::tanh", {box(view)});
    Values want;
    for (double v : in) want.push_back(std::tanh(v));
    expect_values(y, want, "tanh");
    // binary with itself, with a contiguous copy-like tensor and with a broadcast row
    Tensor s = call("loom::mul.Tensor", {box(view), box(view)});
    want.clear();
    for (double v : in) want.push_back(v * v);
    expect_values(s, want, "mul self");
    Shape sizes = shape_of(view);
    Shape row_shape{sizes.back()};
    Values row_values;
    for (int64_t j = 0; j < sizes.back(); ++j) row_values.push_back(j * 0.5);
    Tensor row = make(ScalarType::Float32, row_shape, row_values);
    Tensor r = call("loom::sub.Tensor", {box(row), box(view), box(int64_t{2})});
    want.clear();
    for (size_t k = 0; k < in.size(); ++k) want.push_back(row_values[k % sizes.back()] - 2 * in[k]);
    expect_values(r, want, "sub broadcast row");
    // a 0-dim operand broadcast everywhere (stride 0 on every dim)
    Tensor scalar = make(ScalarType::Float32, {}, {1.5});
    Tensor g = call("loom::maximum", {box(scalar), box(view)});
    want.clear();
    for (double v : in) want.push_back(std::max(1.5, v));
    expect_values(g, want, "maximum 0-dim");
    // in-place into the strided view of a scratch copy
    Tensor scratch = make(ScalarType::Float32, {n0, n1, n2}, base_values);
    Tensor scratch_view = scratch.as_strided(view.sizes(), view.strides(), view.storage_offset());
    call("loom::add_.Tensor", {box(scratch_view), box(scalar), box(int64_t{2})});
    want.clear();
    for (double v : in) want.push_back(v + 3.0);
    expect_values(scratch_view, want, "add_ strided self");
  }
}

TEST_F(CpuPointwise, LargeContiguousTensors) {
  const int64_t n = 1027;  // not a multiple of any vector width
  Values a, b;
  for (int64_t i = 0; i < n; ++i) {
    a.push_back(std::ldexp(i % 61, -2) - 7.0);
    b.push_back(std::ldexp(i % 13 + 1, -1));
  }
  for (ScalarType dtype : kFloatTypes) {
    SCOPED_TRACE(scalar_type_name(dtype));
    Tensor x = make(dtype, {n}, a), y = make(dtype, {n}, b);
    Values want;
    for (int64_t i = 0; i < n; ++i) want.push_back(a[i] * 3.0 + b[i]);
    expect_values(call("loom::add.Tensor", {box(y), box(x), box(int64_t{3})}), want, "add");
    want.clear();
    for (int64_t i = 0; i < n; ++i) want.push_back(a[i] / b[i]);
    expect_values(call("loom::div.Tensor", {box(x), box(y)}), want, "div");
    want.clear();
    for (int64_t i = 0; i < n; ++i) want.push_back(1.0 / (1.0 + std::exp(-a[i])));
    expect_values(call("loom::sigmoid", {box(x)}), want, "sigmoid");
  }
  Tensor xi = make(ScalarType::Int32, {n}, a);  // truncation of exact quarters is fine here
  Values vi = values(xi), want;
  for (double v : vi) want.push_back(v * v);
  expect_values(call("loom::mul.Tensor", {box(xi), box(xi)}), want, "int32 mul");
}

// ============================== float16 / bfloat16 conversions ==============================

// float32 -> float16 / bfloat16 rounds to nearest even (through copy_, the dispatcher's
// cast); results checked against the independent decoders above.
TEST_F(CpuPointwise, ReducedFloatConversionRoundsToNearestEven) {
  auto convert = [](const Values& in, ScalarType to) {
    Tensor src = make(ScalarType::Float32, {static_cast<int64_t>(in.size())}, in);
    Tensor dst = empty(Shape{static_cast<int64_t>(in.size())}, to);
    LoomValue args[] = {box(dst), box(src), box(false)};
    LoomValue ret[1];
    Dispatcher::instance().call(Dispatcher::instance().find_defined("loom::copy_"), args, 3, ret,
                                1);
    dispatch::release_value(ret[0]);
    return values(dst);
  };
  const double h_ulp1 = std::ldexp(1.0, -10);  // float16 ulp at 1
  Values half = convert(
      {1.0 + h_ulp1 / 2, 1.0 + 3 * h_ulp1 / 2, 1.0 + h_ulp1 / 4, 1.0 + 3 * h_ulp1 / 4, 65504.0,
       65519.0, 65520.0, 1e6, -1e6, std::ldexp(1.0, -25), 3 * std::ldexp(1.0, -25),
       std::ldexp(1.0, -26), std::ldexp(1.0, -14), std::ldexp(1023.0, -24), kNaN, -kInf, -0.0},
      ScalarType::Float16);
  Values want_half = {1.0,
                      1.0 + 2 * h_ulp1,
                      1.0,
                      1.0 + h_ulp1,
                      65504.0,
                      65504.0,
                      kInf,
                      kInf,
                      -kInf,
                      0.0,
                      std::ldexp(2.0, -24),
                      0.0,
                      std::ldexp(1.0, -14),
                      std::ldexp(1023.0, -24),
                      kNaN,
                      -kInf,
                      -0.0};
  ASSERT_EQ(half.size(), want_half.size());
  for (size_t i = 0; i < half.size(); ++i) {
    if (std::isnan(want_half[i])) {
      EXPECT_TRUE(std::isnan(half[i]));
    } else {
      EXPECT_EQ(half[i], want_half[i]) << "float16 case " << i;
    }
  }
  EXPECT_TRUE(std::signbit(half.back()));

  const double b_ulp1 = std::ldexp(1.0, -7);  // bfloat16 ulp at 1
  Values bf = convert({1.0 + b_ulp1 / 2, 1.0 + 3 * b_ulp1 / 2, 1.0 + 3 * b_ulp1 / 4,
                       std::numeric_limits<float>::max(), kNaN, -kInf, 3.0},
                      ScalarType::BFloat16);
  Values want_bf = {1.0, 1.0 + 2 * b_ulp1, 1.0 + b_ulp1, kInf, kNaN, -kInf, 3.0};
  for (size_t i = 0; i < bf.size(); ++i) {
    if (std::isnan(want_bf[i])) {
      EXPECT_TRUE(std::isnan(bf[i]));
    } else {
      EXPECT_EQ(bf[i], want_bf[i]) << "bfloat16 case " << i;
    }
  }
  // every float16 value survives float16 -> float32 -> float16 exactly
  std::vector<uint16_t> all(0x10000);
  for (uint32_t i = 0; i <= 0xffff; ++i) all[i] = static_cast<uint16_t>(i);
  Tensor h = from_blob(all.data(), Shape{0x10000}, Shape{1}, ScalarType::Float16, Device{}, nullptr,
                       nullptr);
  Tensor f = empty(Shape{0x10000}, ScalarType::Float32);
  LoomValue args[] = {box(f), box(h), box(false)};
  LoomValue ret[1];
  Dispatcher::instance().call(Dispatcher::instance().find_defined("loom::copy_"), args, 3, ret, 1);
  dispatch::release_value(ret[0]);
  Tensor back = empty(Shape{0x10000}, ScalarType::Float16);
  LoomValue args2[] = {box(back), box(f), box(false)};
  Dispatcher::instance().call(Dispatcher::instance().find_defined("loom::copy_"), args2, 3, ret, 1);
  dispatch::release_value(ret[0]);
  int mismatches = 0;
  for (uint32_t i = 0; i <= 0xffff; ++i) {
    const double want = half_to_double(static_cast<uint16_t>(i));
    const double got_f = f.data<float>()[i];
    const uint16_t got_h = back.data<uint16_t>()[i];
    if (std::isnan(want)) {
      mismatches += !std::isnan(got_f) || (got_h & 0x7c00) != 0x7c00 || (got_h & 0x3ff) == 0;
    } else {
      mismatches += got_f != want || got_h != i;
    }
  }
  EXPECT_EQ(mismatches, 0);
}

}  // namespace
}  // namespace loom::testing
