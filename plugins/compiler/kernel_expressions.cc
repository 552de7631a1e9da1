// The expressions of the fusible operators (kernel_expressions.h).
#include "kernel_expressions.h"

#include <cmath>
#include <cstdio>

#include "loom/sdk/dtype.hpp"
#include "loom/sdk/error.hpp"

namespace loom::compiler {

bool is_float(LoomDType t) {
  return t == LOOM_DTYPE_FLOAT32 || t == LOOM_DTYPE_FLOAT64;
}

const char* ctype(LoomDType t) {
  switch (t) {
    case LOOM_DTYPE_BOOL:
      return "bool";
    case LOOM_DTYPE_UINT8:
      return "uint8_t";
    case LOOM_DTYPE_INT8:
      return "int8_t";
    case LOOM_DTYPE_INT16:
      return "int16_t";
    case LOOM_DTYPE_INT32:
      return "int32_t";
    case LOOM_DTYPE_INT64:
      return "int64_t";
    case LOOM_DTYPE_FLOAT32:
      return "float";
    case LOOM_DTYPE_FLOAT64:
      return "double";
    default:
      return nullptr;
  }
}

const char* storage_type(LoomDType t) {
  return t == LOOM_DTYPE_BOOL ? "uint8_t" : ctype(t);
}

const std::set<std::string>& vector_math() {
  static const std::set<std::string> names = {
      "sin",  "cos",   "tan", "asin", "acos",  "atan",  "sinh", "cosh",  "tanh", "exp",
      "exp2", "expm1", "log", "log2", "log10", "log1p", "erf",  "atan2", "pow"};
  return names;
}

namespace {

std::string clamp_expr(const Emit& e, const std::string& x, size_t lo, size_t hi) {
  std::string r = x;
  if (!e.is_none(lo)) r = e.sel(r + " < " + e.arg(lo), e.arg(lo), r);
  if (!e.is_none(hi)) r = e.sel(r + " > " + e.arg(hi), e.arg(hi), r);
  return r;
}

// x * alpha for add/sub's alpha (nothing for 1).
std::string scaled(const Emit& e, size_t value, size_t alpha) {
  if (e.is_constant(alpha, 1)) return e.arg(value);
  return "(" + e.arg(alpha) + " * " + e.arg(value) + ")";
}

std::string maximum_expr(const Emit& e, bool max) {
  const std::string x = e.arg(0), y = e.arg(1);
  const std::string pick = max ? x + " > " + y : x + " < " + y;
  if (!e.floating()) return e.sel(pick, x, y);
  return e.sel("(" + pick + ") | (" + x + " != " + x + ")", x, y);  // NaN propagates
}

std::string pow_expr(const Emit& e) {
  if (e.is_constant(1, 2)) return "(" + e.arg(0) + " * " + e.arg(0) + ")";
  if (e.is_constant(1, 1)) return e.arg(0);
  if (e.is_constant(1, 0.5)) return e.builtin("sqrt") + "(" + e.arg(0) + ")";
  return e.fn("pow") + "(" + e.arg(0) + ", " + e.arg(1) + ")";
}

std::string remainder_expr(const Emit& e) {
  // Python's modulo: the result takes the divisor's sign.
  const std::string x = e.arg(0), y = e.arg(1);
  const std::string r = e.builtin("fmod") + "(" + x + ", " + y + ")";
  return "[&]{ const " + e.ct() + " r = " + r + "; return " +
         e.sel("(r != 0) & ((r < 0) != (" + y + " < 0))", "r + " + y, "r") + "; }()";
}

std::string lerp_expr(const Emit& e, const std::string& w) {
  const std::string a = e.arg(0), b = e.arg(1);
  return e.sel(e.builtin("fabs") + "(" + w + ") < " + e.lit(0.5),
               a + " + " + w + " * (" + b + " - " + a + ")",
               b + " - (" + b + " - " + a + ") * (" + e.lit(1) + " - " + w + ")");
}

}  // namespace

const std::unordered_map<std::string, OpEntry>& op_table() {
  static const std::unordered_map<std::string, OpEntry> table = [] {
    std::unordered_map<std::string, OpEntry> t;
    auto unary_math = [&t](const char* op, Gen gen) { t[op] = {kFloat, gen}; };
#define LOOM_MATH(NAME) \
  unary_math("loom::" #NAME, [](const Emit& e) { return e.fn(#NAME) + "(" + e.arg(0) + ")"; })
    LOOM_MATH(exp);
    LOOM_MATH(exp2);
    LOOM_MATH(expm1);
    LOOM_MATH(log);
    LOOM_MATH(log2);
    LOOM_MATH(log10);
    LOOM_MATH(log1p);
    LOOM_MATH(sin);
    LOOM_MATH(cos);
    LOOM_MATH(tan);
    LOOM_MATH(asin);
    LOOM_MATH(acos);
    LOOM_MATH(atan);
    LOOM_MATH(sinh);
    LOOM_MATH(cosh);
    LOOM_MATH(tanh);
    LOOM_MATH(erf);
#undef LOOM_MATH
    unary_math("loom::sqrt",
               [](const Emit& e) { return e.builtin("sqrt") + "(" + e.arg(0) + ")"; });
    unary_math("loom::rsqrt", [](const Emit& e) {
      return e.lit(1) + " / " + e.builtin("sqrt") + "(" + e.arg(0) + ")";
    });
    unary_math("loom::reciprocal", [](const Emit& e) { return e.lit(1) + " / " + e.arg(0); });
    unary_math("loom::sigmoid", [](const Emit& e) {
      return e.lit(1) + " / (" + e.lit(1) + " + " + e.fn("exp") + "(-" + e.arg(0) + "))";
    });
    unary_math("loom::silu", [](const Emit& e) {
      return e.arg(0) + " / (" + e.lit(1) + " + " + e.fn("exp") + "(-" + e.arg(0) + "))";
    });
    unary_math("loom::gelu", [](const Emit& e) {
      const std::string x = e.arg(0);
      if (e.text(1) == "tanh") {
        return e.lit(0.5) + " * " + x + " * (" + e.lit(1) + " + " + e.fn("tanh") + "(" +
               e.lit(0.7978845608028654) + " * (" + x + " + " + e.lit(0.044715) + " * " + x +
               " * " + x + " * " + x + ")))";
      }
      if (e.text(1) != "none")
        e.fail("approximate must be \"none\" or \"tanh\", found \"" + e.text(1) + "\"");
      return e.lit(0.5) + " * " + x + " * (" + e.lit(1) + " + " + e.fn("erf") + "(" + x + " * " +
             e.lit(0.7071067811865476) + "))";
    });
    unary_math("loom::mish", [](const Emit& e) {
      return e.arg(0) + " * " + e.fn("tanh") + "(" + e.fn("log1p") + "(" + e.fn("exp") + "(" +
             e.arg(0) + ")))";
    });
    unary_math("loom::log_sigmoid", [](const Emit& e) {
      const std::string x = e.arg(0);
      return e.sel(x + " < 0", x, e.lit(0)) + " - " + e.fn("log1p") + "(" + e.fn("exp") + "(-" +
             e.builtin("fabs") + "(" + x + ")))";
    });
    unary_math("loom::softplus", [](const Emit& e) {
      const std::string bx = "(" + e.arg(1) + " * " + e.arg(0) + ")";
      return e.sel(bx + " > " + e.arg(2), e.arg(0),
                   e.fn("log1p") + "(" + e.fn("exp") + "(" + bx + ")) / " + e.arg(1));
    });
    // hardsigmoid and hardswish clamp x + 3 to [0, 6]
    t["loom::hardsigmoid"] = {kFloat, [](const Emit& e) {
                                const std::string s = "(" + e.arg(0) + " + " + e.lit(3) + ")";
                                const std::string lo = e.sel(s + " < 0", e.lit(0), s);
                                return e.sel(lo + " > " + e.lit(6), e.lit(6), lo) + " / " +
                                       e.lit(6);
                              }};
    t["loom::hardswish"] = {kFloat, [](const Emit& e) {
                              const std::string s = "(" + e.arg(0) + " + " + e.lit(3) + ")";
                              const std::string lo = e.sel(s + " < 0", e.lit(0), s);
                              return e.arg(0) + " * " + e.sel(lo + " > " + e.lit(6), e.lit(6), lo) +
                                     " / " + e.lit(6);
                            }};
    unary_math("loom::floor",
               [](const Emit& e) { return e.builtin("floor") + "(" + e.arg(0) + ")"; });
    unary_math("loom::ceil",
               [](const Emit& e) { return e.builtin("ceil") + "(" + e.arg(0) + ")"; });
    unary_math("loom::trunc",
               [](const Emit& e) { return e.builtin("trunc") + "(" + e.arg(0) + ")"; });
    unary_math("loom::round",
               [](const Emit& e) { return e.builtin("rint") + "(" + e.arg(0) + ")"; });
    unary_math("loom::atan2", [](const Emit& e) {
      return e.fn("atan2") + "(" + e.arg(0) + ", " + e.arg(1) + ")";
    });
    unary_math("loom::div.Tensor", [](const Emit& e) { return e.arg(0) + " / " + e.arg(1); });
    unary_math("loom::div.Scalar", [](const Emit& e) { return e.arg(0) + " / " + e.arg(1); });
    unary_math("loom::pow.Tensor_Tensor", &pow_expr);
    unary_math("loom::pow.Tensor_Scalar", &pow_expr);
    unary_math("loom::pow.Scalar", &pow_expr);
    unary_math("loom::remainder.Tensor", &remainder_expr);
    unary_math("loom::remainder.Scalar", &remainder_expr);
    unary_math("loom::fmod.Tensor", [](const Emit& e) {
      return e.builtin("fmod") + "(" + e.arg(0) + ", " + e.arg(1) + ")";
    });
    unary_math("loom::fmod.Scalar", [](const Emit& e) {
      return e.builtin("fmod") + "(" + e.arg(0) + ", " + e.arg(1) + ")";
    });
    unary_math("loom::lerp.Scalar", [](const Emit& e) { return lerp_expr(e, e.arg(2)); });
    unary_math("loom::lerp.Tensor", [](const Emit& e) { return lerp_expr(e, e.arg(2)); });
    unary_math("loom::leaky_relu", [](const Emit& e) {
      return e.sel(e.arg(0) + " > 0", e.arg(0), e.arg(0) + " * " + e.arg(1));
    });

    // integers too
    auto any = [&t](const char* op, uint8_t kinds, Gen gen) { t[op] = {kinds, gen}; };
    const uint8_t kNumber = kFloat | kInt;
    any("loom::neg", kNumber, [](const Emit& e) { return "-" + e.arg(0); });
    any("loom::abs", kNumber, [](const Emit& e) {
      if (e.floating()) return e.builtin("fabs") + "(" + e.arg(0) + ")";
      return e.sel(e.arg(0) + " < 0", "-" + e.arg(0), e.arg(0));
    });
    any("loom::sign", kNumber, [](const Emit& e) {
      const std::string x = e.arg(0);
      const std::string s = "(" + e.ct() + ")((" + x + " > 0) - (" + x + " < 0))";
      return e.floating() ? e.sel(x + " != " + x, x, s) : s;
    });
    any("loom::relu", kNumber,
        [](const Emit& e) { return e.sel(e.arg(0) + " < 0", e.lit(0), e.arg(0)); });
    // relu's gradient: grad_output where self > threshold, else 0 (NaN in self passes it)
    t["loom::threshold_backward"] = {
        kFloat,
        [](const Emit& e) { return e.sel(e.arg(1) + " <= " + e.arg(2), e.lit(0), e.arg(0)); }};
    any("loom::clamp", kNumber, [](const Emit& e) { return clamp_expr(e, e.arg(0), 1, 2); });
    any("loom::clamp_min", kNumber,
        [](const Emit& e) { return e.sel(e.arg(0) + " < " + e.arg(1), e.arg(1), e.arg(0)); });
    any("loom::clamp_max", kNumber,
        [](const Emit& e) { return e.sel(e.arg(0) + " > " + e.arg(1), e.arg(1), e.arg(0)); });
    any("loom::add.Tensor", kNumber,
        [](const Emit& e) { return e.arg(0) + " + " + scaled(e, 1, 2); });
    any("loom::add.Scalar", kNumber,
        [](const Emit& e) { return e.arg(0) + " + " + scaled(e, 1, 2); });
    any("loom::sub.Tensor", kNumber,
        [](const Emit& e) { return e.arg(0) + " - " + scaled(e, 1, 2); });
    any("loom::sub.Scalar", kNumber,
        [](const Emit& e) { return e.arg(0) + " - " + scaled(e, 1, 2); });
    any("loom::mul.Tensor", kAll, [](const Emit& e) {
      return e.is_bool() ? e.arg(0) + " & " + e.arg(1) : e.arg(0) + " * " + e.arg(1);
    });
    any("loom::mul.Scalar", kNumber, [](const Emit& e) { return e.arg(0) + " * " + e.arg(1); });
    any("loom::maximum", kNumber, [](const Emit& e) { return maximum_expr(e, true); });
    any("loom::minimum", kNumber, [](const Emit& e) { return maximum_expr(e, false); });
    any("loom::addcmul", kNumber, [](const Emit& e) {
      return e.arg(0) + " + " + e.arg(3) + " * " + e.arg(1) + " * " + e.arg(2);
    });
    t["loom::addcdiv"] = {kFloat, [](const Emit& e) {
                            return e.arg(0) + " + " + e.arg(3) + " * (" + e.arg(1) + " / " +
                                   e.arg(2) + ")";
                          }};
    const char* comparisons[][2] = {{"eq", "=="}, {"ne", "!="}, {"lt", "<"},
                                    {"le", "<="}, {"gt", ">"},  {"ge", ">="}};
    for (const auto& c : comparisons) {
      for (const char* overload : {".Tensor", ".Scalar"}) {
        t[std::string("loom::") + c[0] + overload] = {kAll, nullptr};
      }
    }
    any("loom::logical_not", kAll, [](const Emit& e) { return "!" + e.condition(0); });
    any("loom::logical_and", kAll,
        [](const Emit& e) { return e.condition(0) + " & " + e.condition(1); });
    any("loom::logical_or", kAll,
        [](const Emit& e) { return e.condition(0) + " | " + e.condition(1); });
    any("loom::logical_xor", kAll,
        [](const Emit& e) { return e.condition(0) + " ^ " + e.condition(1); });
    any("loom::isnan", kAll, [](const Emit& e) {
      return e.floating() ? "(" + e.arg(0) + " != " + e.arg(0) + ")" : std::string("false");
    });
    any("loom::isinf", kAll, [](const Emit& e) {
      return e.floating()
                 ? "(" + e.builtin("fabs") + "(" + e.arg(0) + ") == " + e.lit(INFINITY) + ")"
                 : std::string("false");
    });
    any("loom::isfinite", kAll, [](const Emit& e) {
      return e.floating()
                 ? "(" + e.builtin("fabs") + "(" + e.arg(0) + ") < " + e.lit(INFINITY) + ")"
                 : std::string("true");
    });
    any("loom::where.self", kAll,
        [](const Emit& e) { return e.sel(e.condition(0), e.arg(1), e.arg(2)); });
    any("loom::masked_fill.Scalar", kAll,
        [](const Emit& e) { return e.sel(e.condition(1), e.arg(2), e.arg(0)); });
    for (const char* op : {"bitwise_and", "bitwise_or", "bitwise_xor"}) {
      for (const char* overload : {".Tensor", ".Scalar"}) {
        t[std::string("loom::") + op + overload] = {kInt | kBool, nullptr};
      }
    }
    return t;
  }();
  return table;
}

namespace {

// The operators whose expression is one C operator between their two arguments.
std::string infix(const Emit& e) {
  static const std::unordered_map<std::string, std::string> ops = {
      {"eq", "=="}, {"ne", "!="},         {"lt", "<"},         {"le", "<="},        {"gt", ">"},
      {"ge", ">="}, {"bitwise_and", "&"}, {"bitwise_or", "|"}, {"bitwise_xor", "^"}};
  std::string name = e.statement().op.substr(6);  // after "loom::"
  name = name.substr(0, name.find('.'));
  return "(" + e.arg(0) + " " + ops.at(name) + " " + e.arg(1) + ")";
}

uint8_t kind_of(LoomDType t) {
  if (is_float(t)) return kFloat;
  if (t == LOOM_DTYPE_BOOL) return kBool;
  return kInt;
}

}  // namespace

std::string expression(const Program& p, const Statement& s, std::set<std::string>& math,
                       const std::vector<std::string>* names, Target target) {
  auto it = op_table().find(s.op);
  if (it == op_table().end()) {
    throw sdk::Error("[compiler] kernel program: operator '" + s.op + "' cannot be fused",
                     LOOM_STATUS_UNIMPLEMENTED);
  }
  if (ctype(s.compute) == nullptr || ctype(s.dtype) == nullptr ||
      (it->second.kinds & kind_of(s.compute)) == 0) {
    throw sdk::Error(std::string("[compiler] kernel program: operator '") + s.op +
                         "' cannot be fused computing in " + sdk::dtype_name(s.compute),
                     LOOM_STATUS_UNIMPLEMENTED);
  }
  Emit e(p, s, math, names, target);
  return it->second.gen != nullptr ? it->second.gen(e) : infix(e);
}

void check_input_dtypes(const Program& p) {
  for (const ProgramInput& in : p.inputs) {
    if (ctype(in.dtype) == nullptr) {
      throw sdk::Error(std::string("[compiler] kernel program: inputs of dtype ") +
                           sdk::dtype_name(in.dtype) + " cannot be fused",
                       LOOM_STATUS_UNIMPLEMENTED);
    }
  }
}

}  // namespace loom::compiler
