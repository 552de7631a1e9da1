// Exercises the ABI 1.2 services through the SDK (loom/sdk/extension.hpp), for
// tests/host/abi_1_2_test.cc: a per-tensor slot holding an int, the Autograd key bit,
// the version counter, a thread-local key guard around a call, an allocation observer,
// and a kernel registered with a dtype claim and a state pointer; ABI 1.4's and 1.6's
// services with bad input, and 1.6's redispatch under changed keys.
#include <atomic>

#include "loom/sdk/plugin.hpp"
#include "loom/sdk/trace.hpp"

namespace {

namespace sdk = loom::sdk;

std::atomic<int64_t> g_destroyed{0};
std::atomic<int64_t> g_allocations{0}, g_frees{0};

struct PluginState {
  int32_t tag_slot = -1;
  int64_t scale = 0;
};
PluginState g_state;  // handed to the kernels that need it as their registration state

void destroy_tag(void* value) {
  delete static_cast<int64_t*>(value);
  g_destroyed.fetch_add(1);
}

void set_tag(const sdk::DispatchContext& ctx, const sdk::Tensor& self, int64_t value) {
  sdk::set_slot_value(self, ctx.state<PluginState>().tag_slot, new int64_t(value), &destroy_tag);
}

int64_t get_tag(const sdk::DispatchContext& ctx, const sdk::Tensor& self) {
  void* v = sdk::slot_value(self, ctx.state<PluginState>().tag_slot);
  return v == nullptr ? -1 : *static_cast<int64_t*>(v);
}

int64_t destroyed() {
  return g_destroyed.load();
}

bool set_autograd_bit(const sdk::Tensor& self, bool on) {
  sdk::set_key(self, LOOM_KEY_AUTOGRAD, on);
  return sdk::has_key(self, LOOM_KEY_AUTOGRAD);
}

int64_t version(const sdk::Tensor& self, int64_t bump) {
  return static_cast<int64_t>(sdk::version(self, static_cast<uint64_t>(bump)));
}

// Calls loom::neg from the top, through the ABI.
sdk::Tensor neg_top(const sdk::Tensor& self) {
  const LoomOperator* neg = nullptr;
  sdk::check(sdk::host().find_op("loom::neg", &neg));
  LoomValue args[1] = {};
  args[0].tag = LOOM_VALUE_TENSOR;
  args[0].u.tensor = self.get();
  LoomValue out[1] = {};
  sdk::check(sdk::host().call_op(neg, args, 1, out, 1));
  return sdk::Tensor::adopt(out[0].u.tensor);
}

// Calls loom::neg with the Profiler key included on this thread.
sdk::Tensor neg_profiled(const sdk::Tensor& self) {
  sdk::LocalKeyGuard guard({LOOM_KEY_PROFILER}, {});
  return neg_top(self);
}

int64_t allocations() {
  return g_allocations.load();
}

int64_t frees() {
  return g_frees.load();
}

void observe(void*, const LoomAllocationEvent* event) {
  (event->is_free ? g_frees : g_allocations).fetch_add(1);
}

// A float-only kernel whose claim the host enforces; it multiplies by the state's scale.
sdk::Tensor scaled(const sdk::DispatchContext& ctx, const sdk::Tensor& self) {
  sdk::Tensor out = sdk::empty(self.sizes(), self.dtype());
  const int64_t n = self.numel();
  const double scale = static_cast<double>(ctx.state<PluginState>().scale);
  if (self.dtype() == LOOM_DTYPE_FLOAT32) {
    for (int64_t i = 0; i < n; ++i) out.data<float>()[i] = self.data<float>()[i] * scale;
  } else {
    for (int64_t i = 0; i < n; ++i) out.data<double>()[i] = self.data<double>()[i] * scale;
  }
  return out;
}

// ABI 1.4 services called with bad input, one case per name; the host's error becomes the
// op's. "extension_roundtrip" publishes a table and finds it again.
void abi_1_4_call(std::string_view which) {
  const LoomHostApi& h = sdk::host();
  static const int kTable = 0;
  LoomExtensionArgs ext{};
  ext.struct_size = sizeof(ext);
  ext.plugin = sdk::plugin_state().context;
  ext.table = &kTable;
  if (which == "extension_name") {
    ext.name = "Bad Name!";
    sdk::check(h.extension_publish(&ext));
  } else if (which == "extension_twice" || which == "extension_roundtrip") {
    ext.name = "test_ext.table";
    LoomExtensionArgs found = ext;
    sdk::check(h.extension_find(&found));
    if (found.out_table == nullptr || which == "extension_twice")
      sdk::check(h.extension_publish(&ext));
    sdk::check(h.extension_find(&found));
    if (found.out_table != &kTable)
      throw sdk::Error("[test_ext] extension_find found another table");
  } else if (which == "process_key_backend" || which == "process_key_not_included") {
    LoomProcessKeysArgs a{};
    a.struct_size = sizeof(a);
    a.dispatch_key = which == "process_key_backend" ? LOOM_KEY_CPU : LOOM_KEY_TRACER;
    a.include = which == "process_key_backend" ? 1 : 0;
    sdk::check(h.process_keys_include(&a));
  } else if (which == "range_kind") {
    LoomTraceRangeArgs a{};
    a.struct_size = sizeof(a);
    a.name = "r";
    a.kind = 7;
    sdk::check(h.trace_range_begin(&a));
  } else if (which == "device_event_backwards") {
    sdk::trace::DeviceEvent e;
    e.name = "k";
    e.start_ns = 10;
    e.end_ns = 5;
    sdk::trace::device_event(e);
  } else if (which == "set_tracer_null") {
    LoomTracerArgs a{};
    a.struct_size = sizeof(a);
    a.plugin = sdk::plugin_state().context;
    sdk::check(h.set_tracer(&a));
  } else if (which == "args_size") {
    LoomTraceStateArgs a{};
    sdk::check(h.trace_state(&a));
  } else {
    throw sdk::Error("[test_ext] unknown case " + std::string(which));
  }
}

// ABI 1.6: the Tracer kernel of test_ext::probed runs the op below itself with Profiler
// included and Autocast excluded; its CPU kernel calls loom::neg from the top (which the
// test's Profiler fallback sees) and fails when asked to, after that call.
LoomError* probed_tracer(void*, const LoomKernelCall* call) noexcept {
  return sdk::catch_all(
      [&] { sdk::redispatch_with_keys(*call, {LOOM_KEY_PROFILER}, {LOOM_KEY_AUTOCAST}); });
}

sdk::Tensor probed(const sdk::Tensor& self, bool fail) {
  sdk::Tensor out = neg_top(self);
  if (fail) throw sdk::Error("[test_ext::probed] failing on purpose");
  return out;
}

// ABI 1.6 calls with bad input; "slot_key" sets a slot value with the Autograd key.
void abi_1_6_call(const sdk::Tensor& self, std::string_view which) {
  const LoomHostApi& h = sdk::host();
  if (which == "slot_key") {
    sdk::set_slot_value(self, g_state.tag_slot, new int64_t(5), &destroy_tag, LOOM_KEY_AUTOGRAD);
  } else if (which == "slot_backend_key") {
    auto* value = new int64_t(6);
    try {
      sdk::set_slot_value(self, g_state.tag_slot, value, &destroy_tag, LOOM_KEY_CPU);
    } catch (...) {
      delete value;  // refused before the host took it
      throw;
    }
  } else if (which == "redispatch_backend_key" || which == "redispatch_no_op") {
    LoomKernelCall call{};
    call.struct_size = sizeof(call);
    const LoomOperator* neg = nullptr;
    sdk::check(h.find_op("loom::neg", &neg));
    call.op = which == "redispatch_no_op" ? nullptr : neg;
    sdk::redispatch_with_keys(call, {LOOM_KEY_CPU}, {});
  } else if (which == "redispatch_args_size") {
    LoomRedispatchArgs a{};
    sdk::check(h.redispatch_with_keys(&a));
  } else {
    throw sdk::Error("[test_ext] unknown case " + std::string(which));
  }
}

void init(sdk::Registrar& r) {
  g_state.tag_slot = sdk::slot_of("test_extension");
  g_state.scale = 3;
  r.def("test_ext::set_tag(Tensor self, int value) -> ()");
  r.def("test_ext::get_tag(Tensor self) -> int");
  r.def("test_ext::destroyed() -> int");
  r.def("test_ext::set_autograd_bit(Tensor self, bool on) -> bool");
  r.def("test_ext::version(Tensor self, int bump) -> int");
  r.def("test_ext::neg_profiled(Tensor self) -> Tensor");
  r.def("test_ext::allocations() -> int");
  r.def("test_ext::frees() -> int");
  r.def("test_ext::scaled(Tensor self) -> Tensor");
  r.def("test_ext::abi_1_4_call(str which) -> ()");
  r.impl<&abi_1_4_call>("test_ext::abi_1_4_call", LOOM_KEY_CPU);
  r.def("test_ext::probed(Tensor self, bool fail) -> Tensor");
  r.impl("test_ext::probed", LOOM_KEY_TRACER, &probed_tracer);
  r.impl<&probed>("test_ext::probed", LOOM_KEY_CPU);
  r.def("test_ext::abi_1_6_call(Tensor self, str which) -> ()");
  r.impl<&abi_1_6_call>("test_ext::abi_1_6_call", LOOM_KEY_CPU);
  r.impl<&set_tag>("test_ext::set_tag", LOOM_KEY_CPU, &g_state);
  r.impl<&get_tag>("test_ext::get_tag", LOOM_KEY_CPU, &g_state);
  r.impl<&destroyed>("test_ext::destroyed", LOOM_KEY_CPU);
  r.impl<&set_autograd_bit>("test_ext::set_autograd_bit", LOOM_KEY_CPU);
  r.impl<&version>("test_ext::version", LOOM_KEY_CPU);
  r.impl<&neg_profiled>("test_ext::neg_profiled", LOOM_KEY_CPU);
  r.impl<&allocations>("test_ext::allocations", LOOM_KEY_CPU);
  r.impl<&frees>("test_ext::frees", LOOM_KEY_CPU);
  r.impl<&scaled>("test_ext::scaled", LOOM_KEY_CPU, sdk::dtypes::float32_64, &g_state);
  r.allocation_observer(&observe);
}

}  // namespace

LOOM_PLUGIN("test_extension", "0.1.0", init)
