// loom/loom.h is the whole app-facing API, and it keeps the plugin C ABI (loom/plugin.h)
// and the dispatcher (loom/dispatcher/dispatcher.h, which includes the ABI) behind
// libloom: the typed op functions are compiled into libloom_ops (Note [The typed op API
// is out of line] in ops/opgen/opgen.cc) and autograd is reached through its table. This
// file fails to compile when an app header starts exposing them again.
#include "loom/loom.h"

#ifdef LOOM_PLUGIN_H_
#error "loom/loom.h exposes loom/plugin.h (the plugin C ABI, or the dispatcher) to apps"
#endif

#include <gtest/gtest.h>

#include "frontend_test_util.h"

namespace loom {
namespace {

class AppHeaders : public test::LoadedRuntimeTest {};

TEST_F(AppHeaders, TheTypedOpsTensorMethodsAndAutogradWorkFromLoomHAlone) {
  Tensor x = ones({2, 2}).requires_grad_();
  Tensor y = add(x, x, 2.0).sum();  // x + 2x
  EXPECT_DOUBLE_EQ(y.item<double>(), 12.0);
  y.backward();
  EXPECT_EQ(x.grad().sum().item<double>(), 12.0);
  EXPECT_EQ(x.mul(x).sum().item<double>(), 4.0);
}

}  // namespace
}  // namespace loom
