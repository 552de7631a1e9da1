// Test ops: a no-op kernel (dispatch benchmark), test::value (the stress test's base
// kernel), and a Tracer fallback that counts calls and redispatches through the ABI.
#include <atomic>

#include "loom/sdk/plugin.hpp"

namespace {

std::atomic<int64_t> g_tracer_calls{0};

void noop(const loom::sdk::Tensor&) {}

int64_t value(const loom::sdk::Tensor&) {
  return 1;
}

int64_t tracer_calls() {
  return g_tracer_calls.load();
}

// Counts, then hands the call to the next key.
LoomError* counting_fallback(void*, const LoomKernelCall* call) {
  return loom::sdk::catch_all([&] {
    g_tracer_calls.fetch_add(1);
    loom::sdk::DispatchContext(call).redispatch();
  });
}

void init(loom::sdk::Registrar& r) {
  r.def("test::noop(Tensor self) -> ()");
  r.def("test::value(Tensor self) -> int");
  r.def("test::tracer_calls() -> int");
  r.impl<&noop>("test::noop", LOOM_KEY_CPU);
  r.impl<&value>("test::value", LOOM_KEY_CPU);
  r.impl<&tracer_calls>("test::tracer_calls", LOOM_KEY_CPU);
  r.fallback(LOOM_KEY_TRACER, &counting_fallback);
  r.attribute("purpose", "tests");
}

}  // namespace

LOOM_PLUGIN("test_ops", "1.2.3", init)
