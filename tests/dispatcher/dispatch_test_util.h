// Helpers for dispatcher tests: kernels that report which one ran, tensor factories,
// and an assertion on loom::Error messages.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <string>

#include "loom/core/error.h"
#include "loom/core/tensor_base.h"
#include "loom/dispatcher/boxing.h"
#include "loom/dispatcher/dispatcher.h"

namespace loom::testing {

// A kernel returning the int64 its ctx points at: tells which kernel ran.
inline LoomError* returns_id(void* ctx, const LoomKernelCall* call) {
  call->returns[0].tag = LOOM_VALUE_INT;
  call->returns[0].u.i = *static_cast<const int64_t*>(ctx);
  return nullptr;
}

inline dispatch::KernelFunction id_kernel(const int64_t& id) {
  return {&returns_id, const_cast<int64_t*>(&id)};
}

// A kernel that runs a std::function (for fallbacks that redispatch, counters, ...).
using KernelBody = std::function<void(const LoomKernelCall*)>;
inline LoomError* run_body(void* ctx, const LoomKernelCall* call) {
  (*static_cast<KernelBody*>(ctx))(call);
  return nullptr;
}
inline dispatch::KernelFunction body_kernel(KernelBody& body) {
  return {&run_body, &body};
}

inline TensorBase cpu_tensor(std::initializer_list<int64_t> sizes,
                             ScalarType dtype = ScalarType::Float32) {
  return empty(IntArrayRef(sizes.begin(), sizes.size()), dtype);
}

// Calls an op taking one tensor and returning one int.
inline int64_t call_int(dispatch::OperatorHandle op, const TensorBase& t) {
  LoomValue args[] = {dispatch::box(t)};
  LoomValue ret[1];
  dispatch::Dispatcher::instance().call(op, args, 1, ret, 1);
  EXPECT_EQ(ret[0].tag, LOOM_VALUE_INT);
  return ret[0].u.i;
}

// Runs f, expects a loom::Error whose message starts with "[prefix] " and contains each
// of `parts`.
template <typename F>
void expect_error(F&& f, const std::string& prefix, std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "expected loom::Error [" << prefix << "]";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_EQ(message.rfind("[" + prefix + "] ", 0), 0u) << message;
    for (const std::string& part : parts) {
      EXPECT_NE(message.find(part), std::string::npos)
          << "missing '" << part << "' in: " << message;
    }
  }
}

}  // namespace loom::testing
