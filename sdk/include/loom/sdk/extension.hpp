// The ABI 1.2 services plugins build functionality on (autograd, profiler, quantization):
// per-tensor extension slots, a tensor's functionality key bits and version counter,
// thread-local key guards and allocation observers; and 1.3's detached aliases. Each
// throws loom::sdk::Error when the host is older than the service.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "loom/plugin.h"
#include "loom/sdk/error.hpp"
#include "loom/sdk/host.hpp"
#include "loom/sdk/tensor.hpp"

namespace loom::sdk {
namespace detail {

[[noreturn]] __attribute__((noinline, cold)) inline void throw_host_too_old(const LoomHostApi& h,
                                                                            const char* service) {
  throw Error(std::string("[sdk] ") + service + " needs a loom host with ABI 1.2, found " +
                  std::to_string(h.abi_major) + "." + std::to_string(h.abi_minor),
              LOOM_STATUS_VERSION_MISMATCH);
}

// Throws unless the host's table has the ABI 1.2 services.
inline const LoomHostApi& host_1_2(const char* service) {
  const LoomHostApi& h = host();
  if (!LOOM_HAS_FIELD(&h, LoomHostApi, add_allocation_observer)) [[unlikely]]
    throw_host_too_old(h, service);
  return h;
}

template <typename Args>
Args args_struct() {
  Args a{};
  a.struct_size = sizeof(Args);
  return a;
}

}  // namespace detail

// A per-tensor slot claimed by name (idempotent): slot_of("autograd").
inline int32_t slot_of(const char* name) {
  auto a = detail::args_struct<LoomSlotClaimArgs>();
  a.plugin = plugin_state().context;
  a.name = name;
  check(detail::host_1_2("slot_of").slot_claim(&a));
  return a.out_slot;
}

// The value `t` holds in `slot` (nullptr when unset).
inline void* slot_value(const Tensor& t, int32_t slot) {
  auto a = detail::args_struct<LoomTensorSlotArgs>();
  a.tensor = t.get();
  a.slot = slot;
  check(detail::host_1_2("slot_value").tensor_slot_get(&a));
  return a.value;
}

// Gives `value` to `t`'s slot; `destroy(value)` runs when it is replaced or `t` dies (the
// plugin stays loaded until then). A null value clears the slot. A `key` other than
// LOOM_KEY_UNDEFINED is also added to t's key set (as set_key(t, key, true)): one host
// call on a host with ABI 1.6, two on older ones.
inline void set_slot_value(const Tensor& t, int32_t slot, void* value, void (*destroy)(void*),
                           uint32_t key = LOOM_KEY_UNDEFINED) {
  const LoomHostApi& h = detail::host_1_2("set_slot_value");
  const bool one_call =
      key == LOOM_KEY_UNDEFINED || LOOM_HAS_FIELD(&h, LoomHostApi, redispatch_with_keys);
  if (!one_call) {
    // The key first: when this throws, the value is still the caller's to free. When the
    // slot set below fails instead, the key stays without a value, which the plugin's
    // readers see as no value (autograd: no metadata, so no history).
    auto k = detail::args_struct<LoomTensorKeyArgs>();
    k.tensor = t.get();
    k.dispatch_key = key;
    k.present = 1;
    check(h.tensor_key_set(&k));
  }
  auto a = detail::args_struct<LoomTensorSlotArgs>();
  a.tensor = t.get();
  a.slot = slot;
  a.value = value;
  a.destroy = destroy;
  a.plugin = plugin_state().context;
  a.key = one_call ? key : uint32_t{LOOM_KEY_UNDEFINED};
  check(h.tensor_slot_set(&a));
}

// Whether `t`'s key set holds functionality key `key` (LOOM_KEY_AUTOGRAD, ...).
inline bool has_key(const Tensor& t, uint32_t key) {
  auto a = detail::args_struct<LoomTensorKeyArgs>();
  a.tensor = t.get();
  a.dispatch_key = key;
  check(detail::host_1_2("has_key").tensor_key_get(&a));
  return a.present != 0;
}

inline void set_key(const Tensor& t, uint32_t key, bool present) {
  auto a = detail::args_struct<LoomTensorKeyArgs>();
  a.tensor = t.get();
  a.dispatch_key = key;
  a.present = present ? 1 : 0;
  check(detail::host_1_2("set_key").tensor_key_set(&a));
}

// The version counter of `t`'s storage, after adding `bump` (Note [Version counter]).
inline uint64_t version(const Tensor& t, uint64_t bump = 0) {
  auto a = detail::args_struct<LoomTensorVersionArgs>();
  a.tensor = t.get();
  a.bump = bump;
  check(detail::host_1_2("version").tensor_version(&a));
  return a.out_version;
}

// A new tensor over t's storage and layout, sharing its version counter, with no view
// base, slot values or key bits (LoomHostApi::tensor_alias; needs a host with ABI 1.3).
inline Tensor detached_alias(const Tensor& t) {
  const LoomHostApi& h = host();
  if (!LOOM_HAS_FIELD(&h, LoomHostApi, tensor_alias)) {
    throw Error("[sdk] detached_alias needs a loom host with ABI 1.3, found " +
                    std::to_string(h.abi_major) + "." + std::to_string(h.abi_minor),
                LOOM_STATUS_VERSION_MISMATCH);
  }
  auto a = detail::args_struct<LoomTensorAliasArgs>();
  a.tensor = t.get();
  check(h.tensor_alias(&a));
  return Tensor::adopt(a.out_alias);
}

// Adds `include` keys to, and excludes `exclude` keys from, every dispatch on this
// thread while alive: LocalKeyGuard guard({}, {LOOM_KEY_AUTOGRAD}) is no-grad.
class LocalKeyGuard {
 public:
  // At most kMaxKeys of each (there are 6 functionality keys); the keys are kept inline,
  // so a guard allocates nothing.
  static constexpr size_t kMaxKeys = 8;
  LocalKeyGuard(std::initializer_list<uint32_t> include, std::initializer_list<uint32_t> exclude) {
    if (include.size() > kMaxKeys || exclude.size() > kMaxKeys) {
      throw Error("[sdk] LocalKeyGuard takes at most 8 keys to include and 8 to exclude");
    }
    // Only the given keys are copied and the arguments are set field by field: zeroing the
    // arrays and copying a zeroed struct in cost more than the host call (the guard is on
    // every recorded op's path).
    std::copy(include.begin(), include.end(), include_.begin());
    std::copy(exclude.begin(), exclude.end(), exclude_.begin());
    args_.struct_size = sizeof(LoomLocalKeysArgs);
    args_.include = include_.data();
    args_.num_include = include.size();
    args_.exclude = exclude_.data();
    args_.num_exclude = exclude.size();
    args_.out_saved[0] = args_.out_saved[1] = 0;
    check(detail::host_1_2("LocalKeyGuard").local_keys_push(&args_));
  }
  ~LocalKeyGuard() {
    if (LoomError* err = host().local_keys_restore(&args_)) err->destroy(err);
  }
  LocalKeyGuard(const LocalKeyGuard&) = delete;
  LocalKeyGuard& operator=(const LocalKeyGuard&) = delete;

 private:
  std::array<uint32_t, kMaxKeys> include_, exclude_;
  LoomLocalKeysArgs args_;
};

// Calls the next kernel for `call` (its op, key set and arguments, writing its returns)
// with `include` keys added to and `exclude` keys removed from every dispatch on this
// thread until it returns: how a functionality kernel runs its op below itself without
// seeing the ops the kernels below call (autograd: redispatch_with_keys(call, {},
// {LOOM_KEY_AUTOGRAD})). One host call on a host with ABI 1.6 (redispatch_with_keys); a
// LocalKeyGuard around redispatch on older ones.
inline void redispatch_with_keys(const LoomKernelCall& call,
                                 std::initializer_list<uint32_t> include,
                                 std::initializer_list<uint32_t> exclude) {
  const LoomHostApi& h = host();
  if (!LOOM_HAS_FIELD(&h, LoomHostApi, redispatch_with_keys)) {
    LocalKeyGuard guard(include, exclude);
    check(h.redispatch(call.op, call.key_set, call.args, call.num_args, call.returns,
                       call.num_returns));
    return;
  }
  LoomRedispatchArgs a;
  a.struct_size = sizeof(LoomRedispatchArgs);
  a.op = call.op;
  a.key_set = call.key_set;
  a.args = call.args;
  a.num_args = call.num_args;
  a.returns = call.returns;
  a.num_returns = call.num_returns;
  a.include = include.begin();
  a.num_include = include.size();
  a.exclude = exclude.begin();
  a.num_exclude = exclude.size();
  check(h.redispatch_with_keys(&a));
}

// Publishes `table` (static, valid until this plugin unloads) as the extension table
// `name` for frontends and other plugins (ABI 1.4): publish_extension("loom.profiler", &kApi).
inline void publish_extension(const char* name, const void* table) {
  const LoomHostApi& h = host();
  if (!LOOM_HAS_FIELD(&h, LoomHostApi, extension_publish)) {
    throw Error(std::string("[sdk] publish_extension needs a loom host with ABI 1.4, found ") +
                    std::to_string(h.abi_major) + "." + std::to_string(h.abi_minor),
                LOOM_STATUS_VERSION_MISMATCH);
  }
  LoomExtensionArgs a{};
  a.struct_size = sizeof(a);
  a.plugin = plugin_state().context;
  a.name = name;
  a.table = table;
  check(h.extension_publish(&a));
}

// The table published as `name`, or nullptr (also on hosts older than ABI 1.4). Valid for
// the current call into the plugin only: find it again in the next.
template <typename Table>
const Table* find_extension(const char* name) {
  const LoomHostApi& h = host();
  if (!LOOM_HAS_FIELD(&h, LoomHostApi, extension_find)) return nullptr;
  LoomExtensionArgs a{};
  a.struct_size = sizeof(a);
  a.name = name;
  check(h.extension_find(&a));
  return static_cast<const Table*>(a.out_table);
}

}  // namespace loom::sdk
