// The expression of each fusible operator in C++ (the CPU's generator, cpp_codegen.cc)
// or CUDA C++ (cuda_codegen.cc, which HIP reads as is): the op table, and Emit, which
// renders one statement's operands, literals and selects for a target.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernel_program.h"
#include "loom/sdk/error.hpp"

namespace loom::compiler {

// The dtype classes an operator's compute dtype may be in.
enum Kinds : uint8_t { kFloat = 1, kInt = 2, kBool = 4, kAll = 7 };

bool is_float(LoomDType t);
// The C type of a dtype ("float"), or null for a dtype kernels do not compute in.
const char* ctype(LoomDType t);
// How an element is stored (bool as one byte).
const char* storage_type(LoomDType t);
// libm's functions that glibc's libmvec has vector variants of.
const std::set<std::string>& vector_math();

// One statement rendered for a target: its operands in the compute dtype, literals, libm
// calls and selects (the CPU's lk_sel blends bit patterns: Note [Vectorised kernel loops]).
class Emit {
 public:
  // `names`: each slot's expression where the statement is computed ("v<slot>" when null).
  Emit(const Program& p, const Statement& s, std::set<std::string>& math,
       const std::vector<std::string>* names = nullptr, Target target = Target::Cpu)
      : p_(p), s_(s), math_(math), ct_(ctype(s.compute)), names_(names), target_(target) {}

  const Statement& statement() const { return s_; }
  bool floating() const { return is_float(s_.compute); }
  bool is_bool() const { return s_.compute == LOOM_DTYPE_BOOL; }
  const std::string& ct() const { return ct_; }

  // Operand i in the compute dtype.
  std::string arg(size_t i) const {
    const Operand& o = operand(i);
    switch (o.kind) {
      case Operand::Kind::Value:
        if (p_.slot_dtype(o.value) == s_.compute) return name(o.value);
        return "((" + ct_ + ")" + name(o.value) + ")";
      case Operand::Kind::Int:
      case Operand::Kind::Bool:
        return lit(static_cast<double>(o.i), o.kind == Operand::Kind::Int ? o.i : o.i != 0);
      case Operand::Kind::Double:
        return lit(o.d, as_int(o.d));
      default:
        fail("argument " + std::to_string(i) + " is not a number or a value");
    }
  }
  // Operand i as a bool (a condition or mask).
  std::string condition(size_t i) const {
    const Operand& o = operand(i);
    if (o.kind == Operand::Kind::Value) return "(" + name(o.value) + " != 0)";
    if (o.kind == Operand::Kind::Bool || o.kind == Operand::Kind::Int)
      return o.i ? "true" : "false";
    fail("argument " + std::to_string(i) + " is not a condition");
  }
  bool is_none(size_t i) const { return operand(i).kind == Operand::Kind::None; }
  // A constant argument as a number (alpha, a slope); throws for a value.
  double number(size_t i) const {
    const Operand& o = operand(i);
    if (o.kind == Operand::Kind::Double) return o.d;
    if (o.kind == Operand::Kind::Int || o.kind == Operand::Kind::Bool)
      return static_cast<double>(o.i);
    fail("argument " + std::to_string(i) + " must be a constant number");
  }
  bool is_constant(size_t i, double v) const {
    const Operand& o = operand(i);
    return (o.kind == Operand::Kind::Double && o.d == v) ||
           ((o.kind == Operand::Kind::Int || o.kind == Operand::Kind::Bool) &&
            static_cast<double>(o.i) == v);
  }
  std::string text(size_t i) const {
    const Operand& o = operand(i);
    if (o.kind == Operand::Kind::None) return "";
    if (o.kind != Operand::Kind::String)
      fail("argument " + std::to_string(i) + " must be a string");
    return o.text;
  }
  // A literal in the compute dtype.
  std::string lit(double d, int64_t i) const {
    if (is_bool()) return i != 0 ? "true" : "false";
    if (!floating()) return "((" + ct_ + ")" + std::to_string(i) + "LL)";
    const bool f32 = s_.compute == LOOM_DTYPE_FLOAT32;
    const bool cuda = target_ == Target::Cuda;  // device code: bit patterns, no builtins
    if (std::isnan(d)) {
      if (cuda)
        return f32 ? "__int_as_float(0x7fc00000)" : "__longlong_as_double(0x7ff8000000000000LL)";
      return f32 ? "__builtin_nanf(\"\")" : "__builtin_nan(\"\")";
    }
    if (std::isinf(d)) {
      std::string inf = f32 ? "__builtin_inff()" : "__builtin_inf()";
      if (cuda)
        inf = f32 ? "__int_as_float(0x7f800000)" : "__longlong_as_double(0x7ff0000000000000LL)";
      return d < 0 ? "(-" + inf + ")" : inf;
    }
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.17g", d);
    std::string s = buf;
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    return "(" + s + (f32 ? "f" : "") + ")";
  }
  std::string lit(double d) const { return lit(d, as_int(d)); }
  // A double as an int literal's value: truncated, saturated, NaN as 0 (no UB on inf).
  static int64_t as_int(double d) {
    if (d != d) return 0;
    if (d >= 9.2e18) return INT64_MAX;
    if (d <= -9.2e18) return INT64_MIN;
    return static_cast<int64_t>(d);
  }
  // A libm function in the compute dtype ("sinf" for float32).
  std::string fn(const std::string& name) const {
    std::string full = name + (s_.compute == LOOM_DTYPE_FLOAT32 ? "f" : "");
    if (vector_math().count(name)) math_.insert(full);
    return full;
  }
  // sqrt, fabs, floor, fmod...: GCC's builtins on the CPU, CUDA's math functions on a GPU.
  std::string builtin(const std::string& name) const {
    return (target_ == Target::Cuda ? "" : "__builtin_") + name +
           (s_.compute == LOOM_DTYPE_FLOAT32 ? "f" : "");
  }
  std::string sel(const std::string& c, const std::string& a, const std::string& b) const {
    return "lk_sel((bool)(" + c + "), (" + ct_ + ")(" + a + "), (" + ct_ + ")(" + b + "))";
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw sdk::Error("[compiler] kernel program: " + s_.op + ": " + what);
  }

 private:
  const Operand& operand(size_t i) const {
    if (i >= s_.args.size()) {
      fail("expected at least " + std::to_string(i + 1) + " arguments, found " +
           std::to_string(s_.args.size()));
    }
    return s_.args[i];
  }
  std::string name(int32_t slot) const {
    return names_ != nullptr ? (*names_)[slot] : "v" + std::to_string(slot);
  }
  const Program& p_;
  const Statement& s_;
  std::set<std::string>& math_;
  std::string ct_;
  const std::vector<std::string>* names_;
  Target target_;
};

using Gen = std::string (*)(const Emit&);
struct OpEntry {
  uint8_t kinds;  // Kinds the operator computes in
  Gen gen;        // null: an infix operator (==, &, ...)
};

// The fusible element-wise operators by name.
const std::unordered_map<std::string, OpEntry>& op_table();

// The expression that computes statement `s` of `p` from its operands (named by `names`,
// per slot, or "v<slot>" when null), for `target`. Adds each libm function it calls to
// `math`. Throws sdk::Error "[compiler] ..." (UNIMPLEMENTED) for an operator or dtype it
// cannot generate.
std::string expression(const Program& p, const Statement& s, std::set<std::string>& math,
                       const std::vector<std::string>* names = nullptr,
                       Target target = Target::Cpu);

// Refuses (UNIMPLEMENTED) a program with an input of a dtype kernels do not compute in.
void check_input_dtypes(const Program& p);

}  // namespace loom::compiler
