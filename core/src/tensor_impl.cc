// TensorImpl construction, extension slots and the stride helpers.
#include "loom/core/tensor_impl.h"

#include "loom/core/small_objects.h"

#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "host_block_cache.h"
#include "loom/core/error.h"
#include "loom/core/quantizer.h"

namespace loom {

// Note [Small host objects]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// Every op that returns a new tensor creates a TensorImpl and a Storage, and for small
// tensors their two glibc allocations and frees were the largest cost left after the
// data block's (measured with callgrind on the 1-element add). Both classes take their
// objects from the per-thread cache of small blocks that serves tensor data (Note [Small
// host blocks]): a free puts the block on the freeing thread's list, the next object
// takes it from there. The blocks are 64-byte aligned, more than either class needs.
// A tensor's table of extension slots, and the box the plugin host wraps a plugin's slot
// value in (through loom/core/small_objects.h), come from there too: autograd gives
// every result that has a history one of each.
void* TensorImpl::operator new(size_t size) {
  return host_blocks::allocate_object(size);
}
void TensorImpl::operator delete(void* object, size_t size) {
  host_blocks::deallocate(object, size);
}
void* allocate_small_object(size_t size) {
  return host_blocks::allocate_object(size);
}
void free_small_object(void* object, size_t size) {
  host_blocks::deallocate(object, size);
}
void* TensorImpl::ExtensionTable::operator new(size_t size) {
  return host_blocks::allocate_object(size);
}
void TensorImpl::ExtensionTable::operator delete(void* table, size_t size) {
  host_blocks::deallocate(table, size);
}

namespace {

std::mutex& slot_mutex() {
  static std::mutex m;
  return m;
}
std::vector<std::string>& slot_names() {
  static std::vector<std::string> names;
  return names;
}

DispatchKeySet key_set_for(Device device, ScalarType dtype) {
  DispatchKey backend = DeviceTypeRegistry::instance().backend(device.type);
  LOOM_CHECK(backend != DispatchKey::Undefined, "tensor", "device type '",
             DeviceTypeRegistry::instance().name(device.type), "' is not registered");
  DispatchKeySet ks = DispatchKeySet::for_tensor_on(backend);
  if (is_quantized(dtype)) ks = ks.add(DispatchKey::Quantized);
  return ks;
}

}  // namespace

int ExtensionSlots::claim(std::string_view name) {
  std::lock_guard<std::mutex> lock(slot_mutex());
  auto& names = slot_names();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<int>(i);
  }
  LOOM_CHECK(names.size() < kMaxExtensionSlots, "tensor", "cannot claim extension slot '", name,
             "': all ", kMaxExtensionSlots, " slots are taken (", absl::StrJoin(names, ", "), ")");
  names.emplace_back(name);
  return static_cast<int>(names.size() - 1);
}

std::string ExtensionSlots::name(int slot) {
  std::lock_guard<std::mutex> lock(slot_mutex());
  auto& names = slot_names();
  return slot >= 0 && slot < static_cast<int>(names.size()) ? names[slot] : "<unclaimed>";
}

TensorImpl::TensorImpl(Ref<Storage> storage, DimVector sizes, DimVector strides,
                       int64_t storage_offset, ScalarType dtype)
    : storage_(std::move(storage)),
      sizes_(std::move(sizes)),
      strides_(std::move(strides)),
      storage_offset_(storage_offset),
      numel_(checked_numel(sizes_, "tensor")),
      dtype_(dtype),
      is_contiguous_(compute_is_contiguous(sizes_, strides_)),
      key_set_(key_set_for(storage_->device(), dtype)) {}

TensorImpl::TensorImpl(Ref<Storage> storage, DimVector sizes, DimVector strides, ScalarType dtype,
                       Contiguous known)
    : storage_(std::move(storage)),
      sizes_(std::move(sizes)),
      strides_(std::move(strides)),
      storage_offset_(0),
      numel_(known.numel),
      dtype_(dtype),
      is_contiguous_(true),
      key_set_(key_set_for(storage_->device(), dtype)) {}

void TensorImpl::set_quantizer(Ref<Quantizer> quantizer) {
  LOOM_CHECK(is_quantized(dtype_) == static_cast<bool>(quantizer), "tensor",
             is_quantized(dtype_) ? "a quantized tensor needs a quantizer"
                                  : "only a quantized tensor has a quantizer, this one is ",
             is_quantized(dtype_) ? "" : scalar_type_name(dtype_));
  quantizer_ = std::move(quantizer);
}

TensorImpl::~TensorImpl() {
  if (extensions_) {
    for (Extension& e : extensions_->slots) {
      if (e.destroy != nullptr) e.destroy(e.value);
    }
  }
}

void TensorImpl::resize_contiguous(IntArrayRef sizes) {
  resize_dense(sizes, contiguous_strides(sizes));
}

void TensorImpl::resize_dense(IntArrayRef sizes, IntArrayRef strides) {
  DimVector new_sizes(sizes.begin(), sizes.end());
  const int64_t numel = checked_numel(new_sizes, "resize");
  if (numel > 0) {
    const auto bytes = static_cast<unsigned __int128>(storage_offset_ + numel) *
                       static_cast<unsigned __int128>(element_size(dtype_));
    LOOM_CHECK(bytes <= static_cast<unsigned __int128>(INT64_MAX), "resize",
               "expected a size that fits in memory, found ", numel, " elements of ",
               scalar_type_name(dtype_));
    storage_->grow(static_cast<size_t>(bytes));
  }
  strides_.assign(strides.begin(), strides.end());
  sizes_ = std::move(new_sizes);
  numel_ = numel;
  is_contiguous_ = compute_is_contiguous(sizes_, strides_);
}

void* TensorImpl::extension(int slot) const {
  if (!extensions_ || slot < 0 || slot >= kMaxExtensionSlots) return nullptr;
  return extensions_->slots[slot].value;
}

void TensorImpl::set_extension(int slot, void* value, void (*destroy)(void*)) {
  LOOM_CHECK(slot >= 0 && slot < kMaxExtensionSlots, "tensor", "extension slot ", slot,
             " is out of range (expected 0..", kMaxExtensionSlots - 1, ")");
  if (!extensions_) extensions_ = std::make_unique<ExtensionTable>();
  Extension& e = extensions_->slots[slot];
  if (e.destroy != nullptr) e.destroy(e.value);
  e = {value, destroy};
}

DimVector contiguous_strides(IntArrayRef sizes) {
  DimVector strides(sizes.size());
  int64_t running = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = running;
    // Zero-size tensors still get strides, so this can overflow where the numel cannot.
    if (i > 0) {
      LOOM_CHECK(!__builtin_mul_overflow(running, std::max<int64_t>(sizes[i], 1), &running),
                 "tensor", "sizes [", absl::StrJoin(sizes, ", "), "] overflow the strides");
    }
  }
  return strides;
}

bool compute_is_contiguous(IntArrayRef sizes, IntArrayRef strides) {
  // No elements: contiguous whatever the strides (checked first, not only once the scan
  // below reaches the size-0 dim).
  for (int64_t s : sizes) {
    if (s == 0) return true;
  }
  int64_t expected = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

int64_t checked_numel(IntArrayRef sizes, std::string_view component) {
  int64_t n = 1;
  for (int64_t s : sizes) {
    LOOM_CHECK(s >= 0, std::string(component), "sizes must be non-negative, found [",
               absl::StrJoin(sizes, ", "), "]");
    LOOM_CHECK(!__builtin_mul_overflow(n, s, &n), std::string(component), "sizes [",
               absl::StrJoin(sizes, ", "), "] overflow the element count");
  }
  return n;
}

}  // namespace loom
