// Shared helpers of the CPU plugin's kernel tests (tests/cpu/): tensors from and to doubles
// on every dtype (float16/bfloat16 decoded independently of the plugin), tolerances,
// calling ops by name, the variant names of structured ops, and the fixture loading the
// cpu plugin.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "../dispatcher/dispatch_test_util.h"
#include "loom/dispatcher/boxing.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/dispatcher/plugin_host.h"
#include "loom/loom.h"
#include "loom/ops/standard_library.h"

namespace loom::testing {

using dispatch::box;
using dispatch::Dispatcher;
using Shape = std::vector<int64_t>;
using Values = std::vector<double>;

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

inline constexpr ScalarType kFloatTypes[] = {ScalarType::Float32, ScalarType::Float64,
                                             ScalarType::Float16, ScalarType::BFloat16};
inline constexpr ScalarType kSignedTypes[] = {ScalarType::Int8, ScalarType::Int16,
                                              ScalarType::Int32, ScalarType::Int64};
inline constexpr ScalarType kIntTypes[] = {ScalarType::UInt8, ScalarType::Int8, ScalarType::Int16,
                                           ScalarType::Int32, ScalarType::Int64};

// --- float16 / bfloat16 decoding, written independently of the plugin ---

inline double half_to_double(uint16_t h) {
  const int e = (h >> 10) & 0x1f;
  const int m = h & 0x3ff;
  double v = e == 0    ? std::ldexp(m, -24)
             : e == 31 ? (m != 0 ? kNaN : kInf)
                       : std::ldexp(m + 1024, e - 25);
  return (h & 0x8000) ? -v : v;
}

inline double bfloat16_to_double(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// The bit pattern of a value exactly representable in float16 / bfloat16.
inline uint16_t encode_exact(ScalarType t, double v) {
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

inline void store(const Tensor& t, int64_t offset, double v) {
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

inline double load(const Tensor& t, int64_t offset) {
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
inline Tensor make(ScalarType dtype, const Shape& sizes, const Values& values) {
  Tensor t = empty(sizes, dtype);
  EXPECT_EQ(t.numel(), static_cast<int64_t>(values.size()));
  const size_t n = std::min(values.size(), static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < n; ++i) store(t, static_cast<int64_t>(i), values[i]);
  return t;
}

// The elements of t in row-major order of its logical shape (any strides).
inline Values values(const Tensor& t) {
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

inline Shape shape_of(const Tensor& t) {
  return Shape(t.sizes().begin(), t.sizes().end());
}

inline bool is_float(ScalarType t) {
  return t == ScalarType::Float16 || t == ScalarType::BFloat16 || t == ScalarType::Float32 ||
         t == ScalarType::Float64;
}

// The tolerance of a result dtype: |got - want| <= tol * (|want| + 1).
inline double tolerance(ScalarType t) {
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

inline void expect_close(double got, double want, ScalarType t, const std::string& what) {
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
inline void expect_values(const Tensor& t, const Values& want, const std::string& what,
                          std::optional<ScalarType> computed_in = std::nullopt) {
  Values got = values(t);
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    expect_close(got[i], want[i], computed_in.value_or(t.dtype()),
                 what + " [" + std::to_string(i) + "]");
  }
}

// --- calling ops by name ---

inline Tensor call(const std::string& op, std::vector<LoomValue> args) {
  Dispatcher& d = Dispatcher::instance();
  LoomValue ret[1];
  d.call(d.find_defined(op), args.data(), args.size(), ret, 1);
  return dispatch::unbox_tensor(ret[0], op);
}

// The variant names of a structured op given its functional name ("loom::add.Tensor").
struct OpNames {
  std::string functional, inplace, out;
};
inline OpNames names_of(const std::string& functional) {
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
inline std::vector<LoomValue> args_of(std::initializer_list<Tensor> tensors,
                                      const std::vector<LoomValue>& extra) {
  std::vector<LoomValue> args;
  for (const Tensor& t : tensors) args.push_back(box(t));
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// Whether this CPU runs the cpu plugin's ISA level `isa` (LOOM_CPU_ISA's values).
inline bool cpu_runs_isa(const std::string& isa) {
  __builtin_cpu_init();
  if (isa == "avx512") {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }
  if (isa == "avx2") return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return isa == "generic";
}

// Loads the cpu plugin; skips the test when LOOM_CPU_ISA forces a level this CPU lacks
// (the ctest entries that rerun these tests under each level).
class CpuPointwise : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* isa = std::getenv("LOOM_CPU_ISA"); isa != nullptr && *isa != '\0') {
      if (!cpu_runs_isa(isa)) GTEST_SKIP() << "LOOM_CPU_ISA=" << isa << ": this CPU lacks it";
    }
    ops::load_standard_library();
    dispatch::PluginHost::instance().load(std::string(LOOM_PLUGIN_DIR) + "/libloom_plugin_cpu.so");
  }
};

}  // namespace loom::testing
