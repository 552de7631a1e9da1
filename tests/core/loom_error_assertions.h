// Test assertions on loom::Error: the bracketed component and a part of the message.
#pragma once

#include <exception>
#include <string>

#include "gtest/gtest.h"
#include "loom/core/error.h"

namespace loom {

// Succeeds when `fn` throws a loom::Error whose message starts with "[component] " and
// contains `substring`.
template <typename Fn>
::testing::AssertionResult ThrowsLoomError(Fn&& fn, const std::string& component,
                                           const std::string& substring) {
  try {
    fn();
  } catch (const Error& e) {
    const std::string what = e.what();
    const std::string prefix = "[" + component + "] ";
    if (what.rfind(prefix, 0) != 0) {
      return ::testing::AssertionFailure()
             << "message \"" << what << "\" does not start with \"" << prefix << "\"";
    }
    if (e.component() != component) {
      return ::testing::AssertionFailure() << "component() is \"" << e.component() << "\"";
    }
    if (what.find(substring) == std::string::npos) {
      return ::testing::AssertionFailure()
             << "message \"" << what << "\" does not contain \"" << substring << "\"";
    }
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw a non-loom exception: " << e.what();
  }
  return ::testing::AssertionFailure() << "did not throw";
}

#define EXPECT_LOOM_ERROR(stmt, component, substring) \
  EXPECT_TRUE(::loom::ThrowsLoomError([&] { (void)(stmt); }, component, substring))

}  // namespace loom
