// Dispatch keys and the 64-bit DispatchKeySet. Lives in core because every tensor carries
// the key set of its device and dtype; the dispatcher owns the tables indexed by it.
#pragma once

#include <bit>
#include <cstdint>
#include <string>

namespace loom {

// Note [Dispatch key layout]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// A key set is a uint64_t. Bits 0..15 are *backend* bits (which device's Dense kernel
// runs); bits 16.. are *functionality* bits ordered by priority (a higher bit runs
// first). The Dense functionality (bit 16) is "run the backend kernel". Dispatch picks
// the highest functionality bit; if that is Dense, the highest backend bit picks which
// backend. So the dispatch table has one entry per backend plus one entry per
// non-Dense functionality (kNumRuntimeKeys), and finding the entry is two count-
// leading-zeros. This layout is internal: the plugin ABI numbers keys independently
// (LoomDispatchKey), so it may change in any release.
//
// Note [The Structured key]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// Every tensor's key set holds Structured (DispatchKeySet::for_tensor_on), the
// functionality just above Dense. An op
// with no kernel for it falls through at no cost (Note [Dispatch table precedence]). The
// op library registers a Structured kernel for the out= variant of each structured op:
// it checks `out`, brings the inputs to the kernel contract and redispatches to the
// backend (Note [Structured ops] in ops/src/structured_ops.cc). So the dispatcher
// treats structured ops like any other; the key is not part of the plugin ABI.
enum class DispatchKey : uint8_t {
  // backends
  CPU = 0,
  CUDA = 1,
  HIP = 2,
  Meta = 3,
  Vendor0 = 4,  // Vendor0 + i, i < kNumVendorBackends, assigned by name at run time
  // functionalities, lowest priority first
  Dense = 16,
  Structured = 17,  // Note [The Structured key]
  Quantized = 18,
  Autograd = 19,
  Autocast = 20,
  Profiler = 21,
  Tracer = 22,
  // alias keys (registration only, never in a runtime key set)
  CompositeExplicit = 40,
  CompositeImplicit = 41,
  Undefined = 63,
};

inline constexpr int kNumBackends = 16;
inline constexpr int kNumVendorBackends = 12;
inline constexpr int kFirstFunctionalityBit = 16;
inline constexpr int kLastFunctionalityBit = static_cast<int>(DispatchKey::Tracer);
// Backends 0..15, then Structured..Tracer.
inline constexpr int kNumRuntimeKeys = kNumBackends + (kLastFunctionalityBit - 16);

constexpr bool is_backend_key(DispatchKey k) {
  return static_cast<int>(k) < kNumBackends;
}
constexpr bool is_functionality_key(DispatchKey k) {
  return static_cast<int>(k) > static_cast<int>(DispatchKey::Dense) &&
         static_cast<int>(k) <= kLastFunctionalityBit;
}
constexpr bool is_alias_key(DispatchKey k) {
  return k == DispatchKey::CompositeExplicit || k == DispatchKey::CompositeImplicit;
}
constexpr bool is_runtime_key(DispatchKey k) {
  return is_backend_key(k) || is_functionality_key(k);
}

// Index of a runtime key in an operator's dispatch table.
constexpr int runtime_index(DispatchKey k) {
  return is_backend_key(k) ? static_cast<int>(k) : static_cast<int>(k) - 1;
}
constexpr DispatchKey runtime_key_at(int index) {
  return index < kNumBackends ? static_cast<DispatchKey>(index)
                              : static_cast<DispatchKey>(index + 1);
}

// "CPU", "Autograd", "Vendor3" (vendor names come from the dispatcher's slot registry).
std::string dispatch_key_name(DispatchKey k);

class DispatchKeySet {
 public:
  constexpr DispatchKeySet() = default;
  constexpr explicit DispatchKeySet(uint64_t raw) : raw_(raw) {}
  constexpr DispatchKeySet(DispatchKey k) : raw_(bit(k)) {}  // NOLINT: implicit by design

  // The keys that run `backend`'s kernels: Dense + the backend bit.
  static constexpr DispatchKeySet for_backend(DispatchKey backend) {
    return DispatchKeySet(bit(backend) | bit(DispatchKey::Dense));
  }
  // The key set of a tensor on `backend` (and of a call on that device): the backend's
  // keys plus Structured (Note [The Structured key]).
  static constexpr DispatchKeySet for_tensor_on(DispatchKey backend) {
    return DispatchKeySet(bit(backend) | bit(DispatchKey::Dense) | bit(DispatchKey::Structured));
  }

  constexpr uint64_t raw() const { return raw_; }
  constexpr bool empty() const { return raw_ == 0; }
  constexpr bool has(DispatchKey k) const { return (raw_ & bit(k)) != 0; }
  constexpr DispatchKeySet add(DispatchKey k) const { return DispatchKeySet(raw_ | bit(k)); }
  constexpr DispatchKeySet remove(DispatchKey k) const { return DispatchKeySet(raw_ & ~bit(k)); }
  constexpr DispatchKeySet operator|(DispatchKeySet o) const {
    return DispatchKeySet(raw_ | o.raw_);
  }
  constexpr DispatchKeySet operator&(DispatchKeySet o) const {
    return DispatchKeySet(raw_ & o.raw_);
  }
  constexpr DispatchKeySet operator-(DispatchKeySet o) const {
    return DispatchKeySet(raw_ & ~o.raw_);
  }
  constexpr bool operator==(const DispatchKeySet&) const = default;

  constexpr uint64_t backend_bits() const { return raw_ & kBackendMask; }
  constexpr uint64_t functionality_bits() const { return raw_ & ~kBackendMask; }

  // The runtime key that runs first: the highest functionality, or for Dense the
  // highest backend. Undefined when there is no functionality or no backend to run.
  constexpr DispatchKey highest_priority() const {
    uint64_t func = functionality_bits();
    if (func == 0) return DispatchKey::Undefined;
    int top = 63 - std::countl_zero(func);
    if (top != static_cast<int>(DispatchKey::Dense)) return static_cast<DispatchKey>(top);
    uint64_t back = backend_bits();
    if (back == 0) return DispatchKey::Undefined;
    return static_cast<DispatchKey>(63 - std::countl_zero(back));
  }

  // The keys a kernel selected for `k` may redispatch to: every functionality of lower
  // priority than k, and the backend bits. Below a backend key there is nothing.
  constexpr DispatchKeySet after(DispatchKey k) const {
    if (is_backend_key(k)) return DispatchKeySet();
    uint64_t keep_func = bit(k) - 1;  // functionality bits strictly below k
    return DispatchKeySet(raw_ & (keep_func | kBackendMask));
  }

  std::string to_string() const;  // "[Autograd, Dense, CPU]"

  // Only the bits of runtime keys and Dense: what a key set from outside (a plugin's
  // opaque key set, a guard, a tensor) is masked to before dispatch.
  static constexpr uint64_t kValidBits = (uint64_t{1} << (kLastFunctionalityBit + 1)) - 1;
  constexpr DispatchKeySet valid() const { return DispatchKeySet(raw_ & kValidBits); }

 private:
  static constexpr uint64_t bit(DispatchKey k) { return uint64_t{1} << static_cast<int>(k); }
  static constexpr uint64_t kBackendMask = (uint64_t{1} << kNumBackends) - 1;
  uint64_t raw_ = 0;
};

// Vendor slot names are assigned at run time; the dispatcher installs the lookup so
// core can print them.
void set_vendor_backend_name(int vendor_index, std::string name);

}  // namespace loom
