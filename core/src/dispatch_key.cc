// Names of dispatch keys and printing of key sets.
#include "loom/core/dispatch_key.h"

#include <array>
#include <mutex>
#include <vector>

#include "absl/strings/str_join.h"
#include "loom/core/str_cat.h"

namespace loom {
namespace {

std::mutex& vendor_names_mutex() {
  static std::mutex m;
  return m;
}
std::array<std::string, kNumVendorBackends>& vendor_names() {
  static std::array<std::string, kNumVendorBackends> names;
  return names;
}

}  // namespace

void set_vendor_backend_name(int vendor_index, std::string name) {
  if (vendor_index < 0 || vendor_index >= kNumVendorBackends) return;
  std::lock_guard<std::mutex> lock(vendor_names_mutex());
  vendor_names()[vendor_index] = std::move(name);
}

std::string dispatch_key_name(DispatchKey k) {
  switch (k) {
    case DispatchKey::CPU:
      return "CPU";
    case DispatchKey::CUDA:
      return "CUDA";
    case DispatchKey::HIP:
      return "HIP";
    case DispatchKey::Meta:
      return "Meta";
    case DispatchKey::Dense:
      return "Dense";
    case DispatchKey::Structured:
      return "Structured";
    case DispatchKey::Quantized:
      return "Quantized";
    case DispatchKey::Autograd:
      return "Autograd";
    case DispatchKey::Autocast:
      return "Autocast";
    case DispatchKey::Profiler:
      return "Profiler";
    case DispatchKey::Tracer:
      return "Tracer";
    case DispatchKey::CompositeExplicit:
      return "CompositeExplicit";
    case DispatchKey::CompositeImplicit:
      return "CompositeImplicit";
    case DispatchKey::Undefined:
      return "Undefined";
    default:
      break;
  }
  int raw = static_cast<int>(k);
  int vendor = raw - static_cast<int>(DispatchKey::Vendor0);
  if (vendor >= 0 && vendor < kNumVendorBackends) {
    std::lock_guard<std::mutex> lock(vendor_names_mutex());
    const std::string& name = vendor_names()[vendor];
    return name.empty() ? str_cat("Vendor", vendor) : name;
  }
  return str_cat("Key", raw);
}

std::string DispatchKeySet::to_string() const {
  std::vector<std::string> names;
  for (int b = 63; b >= 0; --b) {
    if (raw_ & (uint64_t{1} << b)) names.push_back(dispatch_key_name(static_cast<DispatchKey>(b)));
  }
  return str_cat("[", absl::StrJoin(names, ", "), "]");
}

}  // namespace loom
