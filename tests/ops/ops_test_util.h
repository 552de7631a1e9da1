// Shared helpers of the op tests (tests/ops/): the runtime with the default plugins,
// tensors from and to doubles in any dtype, and error assertions.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "loom/loom.h"

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

}  // namespace loom::testing
