// Writing a plugin in C++: the Registrar handed to your init function and the
// LOOM_PLUGIN macro that defines the one exported entry symbol.
//
//   static loom::sdk::Tensor my_add(const loom::sdk::Tensor& a, const loom::sdk::Tensor& b,
//                                   loom::sdk::Scalar alpha) { ... }
//   static void init(loom::sdk::Registrar& r) {
//     r.impl<&my_add>("loom::add.Tensor", LOOM_KEY_CPU, loom::sdk::dtypes::floating);
//   }
//   LOOM_PLUGIN("my_backend", "1.0.0", init)
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "loom/plugin.h"
#include "loom/sdk/dtype.hpp"
#include "loom/sdk/error.hpp"
#include "loom/sdk/extension.hpp"
#include "loom/sdk/host.hpp"
#include "loom/sdk/kernel.hpp"
#include "loom/sdk/tensor.hpp"

namespace loom::sdk {

class Registrar {
 public:
  Registrar(const LoomKeyValue* options, size_t num_options)
      : options_(options), num_options_(num_options) {}

  // Defines an operator owned by this plugin.
  const LoomOperator* def(const char* schema) {
    const LoomOperator* op = nullptr;
    check(host().define_op(context(), schema, &op));
    return op;
  }
  // An operator defined by anyone; throws when it does not exist.
  const LoomOperator* op(const char* qualified_name) {
    const LoomOperator* op = nullptr;
    check(host().find_op(qualified_name, &op));
    if (op == nullptr) {
      throw Error(std::string("[sdk] operator '") + qualified_name +
                      "' is not defined (is the plugin that defines it loaded first?)",
                  LOOM_STATUS_NOT_FOUND);
    }
    return op;
  }
  // Registers a boxed kernel.
  void impl(const char* qualified_name, uint32_t dispatch_key, LoomKernelFn fn,
            void* ctx = nullptr) {
    check(host().register_kernel(context(), op(qualified_name), dispatch_key, fn, ctx, nullptr));
  }
  // Registers a typed kernel (boxed at compile time). `state` reaches it through its
  // DispatchContext (ctx.state<T>()).
  template <auto Fn>
  void impl(const char* qualified_name, uint32_t dispatch_key, void* state = nullptr) {
    impl(qualified_name, dispatch_key, &boxed<Fn>, state);
  }
  // Registers a typed kernel with the dtypes it claims: the host refuses calls in other
  // dtypes with "[op] backend B does not support dtype D (claims: ...)" before the kernel
  // runs, and `loom dispatch OP` lists the claim.
  template <auto Fn>
  void impl(const char* qualified_name, uint32_t dispatch_key, DTypeSet dtypes,
            void* state = nullptr) {
    impl(qualified_name, dispatch_key, &boxed<Fn>, state);
    check(host().declare_capability(context(), op(qualified_name), dispatch_key, dtypes.mask()));
  }
  void fallback(uint32_t dispatch_key, LoomKernelFn fn, void* ctx = nullptr) {
    check(host().register_fallback(context(), dispatch_key, fn, ctx, nullptr));
  }
  void fallthrough(uint32_t dispatch_key) {
    check(host().register_fallthrough(context(), dispatch_key, nullptr));
  }
  // A vendor backend slot for `name`; returns its dispatch key.
  uint32_t backend(const char* name) {
    uint32_t key = 0;
    check(host().register_backend(context(), name, &key));
    return key;
  }
  int16_t device_type(const char* name, uint32_t backend_key, const LoomDeviceInterface* device) {
    int16_t type = -1;
    check(host().register_device_type(context(), name, backend_key, device, &type));
    return type;
  }
  // Declares the dtypes of an already registered kernel (impl with a DTypeSet does both).
  void capability(const char* qualified_name, uint32_t dispatch_key, DTypeSet dtypes) {
    check(host().declare_capability(context(), op(qualified_name), dispatch_key, dtypes.mask()));
  }
  // Calls fn(ctx, event) for every allocation and free (ABI 1.2); removed at unload.
  LoomRegistration* allocation_observer(LoomAllocationObserverFn fn, void* ctx = nullptr) {
    auto a = detail::args_struct<LoomAllocationObserverArgs>();
    a.plugin = context();
    a.fn = fn;
    a.ctx = ctx;
    check(detail::host_1_2("allocation_observer").add_allocation_observer(&a));
    return a.out_registration;
  }
  void attribute(const char* key, const char* value) {
    check(host().set_attribute(context(), key, value));
  }
  // The manifest's option for this plugin, or `fallback` when absent.
  std::string_view option(std::string_view key, std::string_view fallback = {}) const {
    for (size_t i = 0; i < num_options_; ++i) {
      if (key == options_[i].key) return options_[i].value;
    }
    return fallback;
  }

 private:
  LoomPluginContext* context() const { return plugin_state().context; }
  const LoomKeyValue* options_;
  size_t num_options_;
};

// The lowest host ABI minor version a plugin accepts. Conservative by default (the
// SDK's own minor); a plugin that checks LOOM_SDK_HOST_HAS() before using newer host
// services may define it lower before including this header to load into older hosts.
#ifndef LOOM_PLUGIN_REQUIRED_ABI_MINOR
#define LOOM_PLUGIN_REQUIRED_ABI_MINOR LOOM_ABI_VERSION_MINOR
#endif

using InitFn = void (*)(Registrar&);
using ShutdownFn = void (*)();

namespace detail {

struct PluginDescriptor {
  LoomPluginApi api{};
  InitFn init = nullptr;
  ShutdownFn shutdown = nullptr;
};

inline PluginDescriptor& descriptor() {
  static PluginDescriptor d;
  return d;
}

inline LoomError* initialize(LoomPluginContext* context, const LoomKeyValue* options,
                             size_t num_options) {
  return catch_all([&] {
    plugin_state().context = context;
    Registrar registrar(options, num_options);
    descriptor().init(registrar);
  });
}

inline LoomError* shutdown() {
  return catch_all([&] {
    if (descriptor().shutdown != nullptr) descriptor().shutdown();
    plugin_state().context = nullptr;
  });
}

// The body of the exported entry: version handshake, then hand back the table.
inline LoomError* plugin_entry(const LoomHostApi* host_api, const LoomPluginApi** out,
                               const char* name, const char* version, InitFn init,
                               ShutdownFn shutdown_fn) {
  if (host_api == nullptr || out == nullptr) {
    return make_error(LOOM_STATUS_INVALID_ARGUMENT, "[sdk] loom_plugin_entry got a null argument");
  }
  if (!LOOM_HAS_FIELD(host_api, LoomHostApi, abi_minor)) {
    return make_error(LOOM_STATUS_VERSION_MISMATCH, "[sdk] the host API table is too small");
  }
  if (host_api->abi_major != LOOM_ABI_VERSION_MAJOR) {
    return catch_all([&] {
      throw Error(std::string("[sdk] plugin '") + name + "' is built for loom ABI " +
                      std::to_string(LOOM_ABI_VERSION_MAJOR) + ".x but the host provides " +
                      std::to_string(host_api->abi_major) + "." +
                      std::to_string(host_api->abi_minor),
                  LOOM_STATUS_VERSION_MISMATCH);
    });
  }
  plugin_state().host = host_api;
  PluginDescriptor& d = descriptor();
  d.init = init;
  d.shutdown = shutdown_fn;
  d.api.struct_size = sizeof(LoomPluginApi);
  d.api.abi_major = LOOM_ABI_VERSION_MAJOR;
  d.api.abi_minor = LOOM_PLUGIN_REQUIRED_ABI_MINOR;
  d.api.name = name;
  d.api.version = version;
  d.api.initialize = &initialize;
  d.api.shutdown = &shutdown;
  *out = &d.api;
  return nullptr;
}

}  // namespace detail
}  // namespace loom::sdk

// Defines the plugin's exported entry point. INIT: void(loom::sdk::Registrar&).
#define LOOM_PLUGIN(NAME, VERSION, INIT) LOOM_PLUGIN_WITH_SHUTDOWN(NAME, VERSION, INIT, nullptr)

#define LOOM_PLUGIN_WITH_SHUTDOWN(NAME, VERSION, INIT, SHUTDOWN)                          \
  extern "C" LOOM_PLUGIN_EXPORT LoomError* loom_plugin_entry(const LoomHostApi* host,     \
                                                             const LoomPluginApi** out) { \
    return ::loom::sdk::detail::plugin_entry(host, out, NAME, VERSION, INIT, SHUTDOWN);   \
  }
