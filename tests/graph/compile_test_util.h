// What the tests of loom::compile share: a fixture whose every test builds kernels into a
// cache directory of its own (so none depends on what another built), and a comparison of
// compiled and eager results.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "../frontend/frontend_test_util.h"
#include "loom/loom.h"

namespace loom::test {

class CompileCacheTest : public LoadedRuntimeTest {
 protected:
  void SetUp() override {
    cache_ = std::filesystem::temp_directory_path() /
             ("loom-compile-test-" + std::to_string(::getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(cache_);
    setenv("LOOM_CACHE_DIR", cache_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("LOOM_CACHE_DIR");
    std::filesystem::remove_all(cache_);
  }
  std::filesystem::path cache_;
};

// a and b have the same sizes and dtype and agree within `tol` (relative to b), NaN where
// b is NaN.
inline void expect_near(const Tensor& a, const Tensor& b, double tol = 1e-5) {
  ASSERT_EQ(std::vector<int64_t>(a.sizes().begin(), a.sizes().end()),
            std::vector<int64_t>(b.sizes().begin(), b.sizes().end()));
  ASSERT_EQ(a.dtype(), b.dtype());
  std::vector<double> x = values(a), y = values(b);
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(y[i])) {
      EXPECT_TRUE(std::isnan(x[i])) << "element " << i;
      continue;
    }
    ASSERT_NEAR(x[i], y[i], tol * (1 + std::abs(y[i]))) << "element " << i;
  }
}

}  // namespace loom::test
