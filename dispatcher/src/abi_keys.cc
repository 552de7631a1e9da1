// Mapping between the ABI's LoomDispatchKey ids and internal DispatchKey values.
#include "loom/dispatcher/abi_keys.h"

#include "loom/core/error.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/plugin.h"

namespace loom::dispatch {

DispatchKey key_from_abi(uint32_t abi_key) {
  switch (abi_key) {
    case LOOM_KEY_CPU:
      return DispatchKey::CPU;
    case LOOM_KEY_CUDA:
      return DispatchKey::CUDA;
    case LOOM_KEY_HIP:
      return DispatchKey::HIP;
    case LOOM_KEY_META:
      return DispatchKey::Meta;
    case LOOM_KEY_QUANTIZED:
      return DispatchKey::Quantized;
    case LOOM_KEY_AUTOGRAD:
      return DispatchKey::Autograd;
    case LOOM_KEY_AUTOCAST:
      return DispatchKey::Autocast;
    case LOOM_KEY_PROFILER:
      return DispatchKey::Profiler;
    case LOOM_KEY_TRACER:
      return DispatchKey::Tracer;
    case LOOM_KEY_COMPOSITE_EXPLICIT:
      return DispatchKey::CompositeExplicit;
    case LOOM_KEY_COMPOSITE_IMPLICIT:
      return DispatchKey::CompositeImplicit;
    default:
      break;
  }
  if (abi_key >= LOOM_KEY_VENDOR_FIRST && abi_key < LOOM_KEY_VENDOR_FIRST + kNumVendorBackends) {
    return static_cast<DispatchKey>(static_cast<int>(DispatchKey::Vendor0) +
                                    (abi_key - LOOM_KEY_VENDOR_FIRST));
  }
  fail("dispatcher", "unknown dispatch key id ", abi_key,
       " (expected a LoomDispatchKey value from loom/plugin.h)");
}

uint32_t key_to_abi(DispatchKey key) {
  switch (key) {
    case DispatchKey::CPU:
      return LOOM_KEY_CPU;
    case DispatchKey::CUDA:
      return LOOM_KEY_CUDA;
    case DispatchKey::HIP:
      return LOOM_KEY_HIP;
    case DispatchKey::Meta:
      return LOOM_KEY_META;
    case DispatchKey::Quantized:
      return LOOM_KEY_QUANTIZED;
    case DispatchKey::Autograd:
      return LOOM_KEY_AUTOGRAD;
    case DispatchKey::Autocast:
      return LOOM_KEY_AUTOCAST;
    case DispatchKey::Profiler:
      return LOOM_KEY_PROFILER;
    case DispatchKey::Tracer:
      return LOOM_KEY_TRACER;
    case DispatchKey::CompositeExplicit:
      return LOOM_KEY_COMPOSITE_EXPLICIT;
    case DispatchKey::CompositeImplicit:
      return LOOM_KEY_COMPOSITE_IMPLICIT;
    default:
      break;
  }
  int vendor = static_cast<int>(key) - static_cast<int>(DispatchKey::Vendor0);
  if (vendor >= 0 && vendor < kNumVendorBackends) return LOOM_KEY_VENDOR_FIRST + vendor;
  return LOOM_KEY_UNDEFINED;
}

DispatchKey parse_dispatch_key(std::string_view name) {
  static constexpr DispatchKey kNamed[] = {DispatchKey::CPU,
                                           DispatchKey::CUDA,
                                           DispatchKey::HIP,
                                           DispatchKey::Meta,
                                           DispatchKey::Quantized,
                                           DispatchKey::Autograd,
                                           DispatchKey::Autocast,
                                           DispatchKey::Profiler,
                                           DispatchKey::Tracer,
                                           DispatchKey::CompositeExplicit,
                                           DispatchKey::CompositeImplicit};
  for (DispatchKey k : kNamed) {
    if (dispatch_key_name(k) == name) return k;
  }
  if (std::optional<DispatchKey> vendor = Dispatcher::instance().find_backend(name)) return *vendor;
  fail("dispatcher", "unknown dispatch key '", name,
       "' (expected CPU, CUDA, HIP, Meta, Quantized, Autograd, Autocast, Profiler, Tracer, "
       "CompositeExplicit, CompositeImplicit or a registered backend name)");
}

}  // namespace loom::dispatch
