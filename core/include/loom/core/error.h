// loom::Error, the one exception type users see, and the LOOM_CHECK helpers that build
// its "[component] what was expected, what was found" messages.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

#include "loom/core/str_cat.h"

namespace loom {

// Note [Error messages]
// ~~~~~~~~~~~~~~~~~~~~~
// Every user-facing error starts with the op or component in brackets, then says what
// was expected and what was found: "[add] shapes [2, 3] and [4] cannot be broadcast".
// `component()` keeps the bracketed part separately so tests and tools can match on it.
// Kinds of error; the numbering equals the ABI's LoomStatusCode so codes cross the
// plugin boundary unchanged in both directions.
enum class ErrorCode : int32_t {
  InvalidArgument = 1,  // wrong shape, dtype, device, value
  NotFound = 2,         // unknown op, key, device type, file
  AlreadyExists = 3,    // duplicate definition or registration
  Unimplemented = 4,    // no kernel, unsupported dtype
  FailedPrecondition = 5,
  ResourceExhausted = 6,  // out of memory
  Internal = 7,
  VersionMismatch = 8,
};

class Error : public std::runtime_error {
 public:
  Error(std::string component, const std::string& detail,
        ErrorCode code = ErrorCode::InvalidArgument)
      : std::runtime_error(str_cat("[", component, "] ", detail)),
        component_(std::move(component)),
        code_(code) {}

  const std::string& component() const { return component_; }
  ErrorCode code() const { return code_; }

 private:
  std::string component_;
  ErrorCode code_;
};

template <typename... Args>
[[noreturn]] void fail(std::string component, const Args&... detail) {
  throw Error(std::move(component), str_cat(detail...));
}

template <typename... Args>
[[noreturn]] void fail_with(ErrorCode code, std::string component, const Args&... detail) {
  throw Error(std::move(component), str_cat(detail...), code);
}

}  // namespace loom

// LOOM_CHECK(cond, "component", detail...): throws loom::Error when cond is false. The
// detail pieces are only formatted on failure.
#define LOOM_CHECK(cond, component, ...)      \
  do {                                        \
    if (!(cond)) [[unlikely]] {               \
      ::loom::fail((component), __VA_ARGS__); \
    }                                         \
  } while (false)
