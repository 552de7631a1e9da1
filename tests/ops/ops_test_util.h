// Shared helpers of the op tests (tests/ops/, one file per op family): the runtime with the
// default plugins, tensors from and to doubles in any dtype, error assertions, and the
// inputs and references the tests of several families use.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "loom/loom.h"
#include "loom/random.h"

namespace loom::testing {

using Values = std::vector<double>;
using Shape = std::vector<int64_t>;

class OpsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    setenv("LOOM_PLUGIN_PATH", LOOM_PLUGIN_DIR, 1);
    Runtime::load_default();
  }
};

// A tensor of `shape` holding `values` (row-major) converted to `dtype`.
inline Tensor make(const Values& values, const Shape& shape,
                   ScalarType dtype = ScalarType::Float32) {
  Tensor f64 =
      empty({static_cast<int64_t>(values.size())}, TensorOptions().dtype(ScalarType::Float64));
  if (!values.empty()) std::memcpy(f64.data_ptr(), values.data(), values.size() * sizeof(double));
  Tensor out = empty(shape, TensorOptions().dtype(dtype));
  copy_(out, f64.view(shape));
  return out;
}

// The elements of `t` in row-major order, as doubles.
inline Values values(const Tensor& t) {
  Tensor f64 = empty(t.sizes(), TensorOptions().dtype(ScalarType::Float64));
  copy_(f64, t);
  const double* p = static_cast<const double*>(f64.data_ptr());
  return Values(p, p + f64.numel());
}

inline Shape shape(const Tensor& t) {
  return Shape(t.sizes().begin(), t.sizes().end());
}

// Element-wise closeness with NaN == NaN.
inline void expect_close(const Values& actual, const Values& expected, double tol = 1e-6) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(actual[i])) << "element " << i << " is " << actual[i];
    } else if (std::isinf(expected[i])) {
      EXPECT_EQ(actual[i], expected[i]) << "element " << i;
    } else {
      EXPECT_NEAR(actual[i], expected[i], tol * std::max(1.0, std::abs(expected[i])))
          << "element " << i;
    }
  }
}

// Runs f and expects a loom::Error whose message starts with "[prefix] " and holds `part`.
template <typename F>
void expect_error(F&& f, const std::string& prefix, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "expected loom::Error [" << prefix << "] ..." << part;
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_EQ(m.rfind("[" + prefix + "] ", 0), 0u) << m;
    EXPECT_NE(m.find(part), std::string::npos) << m;
  }
}

// --- inputs and references shared by several families' tests ---

inline const Values k23 = {1, 2, 3, 4, 5, 6};  // [[1, 2, 3], [4, 5, 6]]

// shape(t), for tests with a local variable named shape.
inline Shape shape_of(const Tensor& t) {
  return shape(t);
}

// Uniform values in [-1, 1) from loom's generator.
inline Values random_values(int64_t n) {
  Values v = values(rand({n}, TensorOptions().dtype(ScalarType::Float64)));
  for (double& x : v) x = 2 * x - 1;
  return v;
}

// A tensor of `shape` holding random_values, converted to `dtype`.
inline Tensor random(const Shape& shape, ScalarType dtype = ScalarType::Float32) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return make(random_values(n), shape, dtype);
}

// Deterministic, irregular values in about [-3, 3].
inline Values wave(size_t n, double phase = 0) {
  Values v(n);
  for (size_t i = 0; i < n; ++i) v[i] = 3 * std::sin(1.3 * static_cast<double>(i) + phase);
  return v;
}

// The values of `x` after rounding to `dtype` (what the kernel actually sees).
inline Values rounded(const Values& x, ScalarType dtype) {
  return values(make(x, {static_cast<int64_t>(x.size())}, dtype));
}

// The floating dtypes, each with the tolerance of results computed in it.
struct Precision {
  ScalarType dtype;
  double tol;
};
inline const Precision kFloatingTypes[] = {{ScalarType::Float64, 1e-12},
                                           {ScalarType::Float32, 1e-5},
                                           {ScalarType::Float16, 4e-3},
                                           {ScalarType::BFloat16, 3e-2}};

// Row-major softmax (log_softmax when `log`) over dim `d` of a tensor of `shape`.
inline Values softmax_ref(const Values& x, const Shape& shape, int64_t d, bool log) {
  int64_t inner = 1, outer = 1;
  for (size_t k = d + 1; k < shape.size(); ++k) inner *= shape[k];
  for (int64_t k = 0; k < d; ++k) outer *= shape[k];
  const int64_t n = shape[d];
  Values out(x.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t j) { return o * n * inner + j * inner + i; };
      double m = -INFINITY, s = 0;
      for (int64_t j = 0; j < n; ++j) m = std::max(m, x[at(j)]);
      for (int64_t j = 0; j < n; ++j) s += std::exp(x[at(j)] - m);
      for (int64_t j = 0; j < n; ++j) {
        out[at(j)] = log ? x[at(j)] - m - std::log(s) : std::exp(x[at(j)] - m) / s;
      }
    }
  }
  return out;
}

}  // namespace loom::testing
