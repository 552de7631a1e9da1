// TensorImpl: what a tensor is (storage, sizes, strides in elements, offset, dtype,
// device, dispatch key set, extension slots). Shared by a Tensor handle and every view.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "absl/container/inlined_vector.h"
#include "loom/core/device.h"
#include "loom/core/dispatch_key.h"
#include "loom/core/ref_counted.h"
#include "loom/core/scalar_type.h"
#include "loom/core/storage.h"

namespace loom {

using DimVector = absl::InlinedVector<int64_t, 6>;
using IntArrayRef = std::span<const int64_t>;

// Equal sizes (or strides). A plain loop: shapes are short, and std::equal on int64
// becomes a memcmp call that costs more than the comparison on the small-op path.
inline bool same_shape(IntArrayRef a, IntArrayRef b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

inline constexpr int kMaxExtensionSlots = 8;

class Quantizer;  // loom/core/quantizer.h

// Note [Tensor extension slots]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Plugins attach their own per-tensor state (autograd metadata, quantization
// parameters, profiler tags) in a slot they claim by name at run time. A slot holds a
// pointer and the destructor to run on it, so the core never knows the type. The slot
// array is allocated on first use: tensors without extensions pay one null pointer.
class ExtensionSlots {
 public:
  // Claims a slot (idempotent per name). Throws when all kMaxExtensionSlots are taken.
  static int claim(std::string_view name);
  static std::string name(int slot);
};

class TensorImpl final : public RefCounted {
 public:
  TensorImpl(Ref<Storage> storage, DimVector sizes, DimVector strides, int64_t storage_offset,
             ScalarType dtype);
  // A fresh row-major tensor at offset 0 whose element count the caller has already
  // computed and checked (empty's fast path): skips recomputing numel and contiguity.
  struct Contiguous {
    int64_t numel;
  };
  TensorImpl(Ref<Storage> storage, DimVector sizes, DimVector strides, ScalarType dtype,
             Contiguous known);

  // TensorImpl objects come from the core's per-thread small-block cache (Note [Small host
  // objects] in tensor_impl.cc).
  static void* operator new(size_t size);
  static void operator delete(void* object, size_t size);

  IntArrayRef sizes() const { return {sizes_.data(), sizes_.size()}; }
  IntArrayRef strides() const { return {strides_.data(), strides_.size()}; }
  // Stable pointers for DLPack views.
  const int64_t* sizes_data() const { return sizes_.data(); }
  const int64_t* strides_data() const { return strides_.data(); }
  int64_t dim() const { return static_cast<int64_t>(sizes_.size()); }
  int64_t numel() const { return numel_; }
  int64_t storage_offset() const { return storage_offset_; }
  ScalarType dtype() const { return dtype_; }
  Device device() const { return storage_->device(); }
  DispatchKeySet key_set() const { return key_set_; }
  const Ref<Storage>& storage() const { return storage_; }
  bool is_contiguous() const { return is_contiguous_; }
  // Address of element 0 (storage base + offset * element size).
  void* data() const {
    return static_cast<char*>(storage_->data()) + storage_offset_ * element_size(dtype_);
  }

  // Gives the tensor `sizes` with row-major strides at the same storage offset, growing
  // the storage when it is too small (out= resizing, Note [Resizing outs]). Not
  // synchronised: other handles of this tensor see the change.
  void resize_contiguous(IntArrayRef sizes);
  // The same with the strides of a dense layout of `sizes` (channels last, for resize_);
  // the caller gives strides that cover numel elements without overlap.
  void resize_dense(IntArrayRef sizes, IntArrayRef strides);

  // A quantized tensor's quantizer (Note [Where the quantizer lives]); null otherwise.
  const Ref<Quantizer>& quantizer() const { return quantizer_; }
  void set_quantizer(Ref<Quantizer> quantizer);

  void* extension(int slot) const;
  // Replaces a slot's value, destroying the previous one.
  void set_extension(int slot, void* value, void (*destroy)(void*));

  // A 0-dim tensor made from a C++ number (`t + 2.0`): in type promotion it counts as
  // a scalar, not a tensor (Note [Type promotion]).
  bool is_wrapped_number() const { return is_wrapped_number_; }
  void set_wrapped_number(bool wrapped) { is_wrapped_number_ = wrapped; }

  // Extra key bits (e.g. Autograd when a tensor requires grad). Not synchronised: set
  // them before the tensor is shared with other threads.
  void add_key(DispatchKey k) { key_set_ = key_set_.add(k); }
  void remove_key(DispatchKey k) { key_set_ = key_set_.remove(k); }

  // The tensor this one is a view of (the root of a chain of views), or null: set by
  // TensorBase::as_strided, through which every view is made (Note [View bases] in
  // tensor_base.cc).
  TensorImpl* view_base() const { return view_base_.get(); }
  void set_view_base(Ref<TensorImpl> base) { view_base_ = std::move(base); }

 private:
  ~TensorImpl() override;

  struct Extension {
    void* value = nullptr;
    void (*destroy)(void*) = nullptr;
  };
  // The slots of a tensor that has any, from the small-block cache like the impl itself.
  struct ExtensionTable {
    std::array<Extension, kMaxExtensionSlots> slots;
    static void* operator new(size_t size);
    static void operator delete(void* table, size_t size);
  };

  Ref<Storage> storage_;
  DimVector sizes_;
  DimVector strides_;
  int64_t storage_offset_;
  int64_t numel_;
  ScalarType dtype_;
  bool is_contiguous_;
  bool is_wrapped_number_ = false;
  DispatchKeySet key_set_;
  std::unique_ptr<ExtensionTable> extensions_;
  Ref<TensorImpl> view_base_;
  Ref<Quantizer> quantizer_;
};

// Row-major strides for `sizes`.
DimVector contiguous_strides(IntArrayRef sizes);
// Whether (sizes, strides) is row-major contiguous (size-1 dims may have any stride).
bool compute_is_contiguous(IntArrayRef sizes, IntArrayRef strides);
// Product of sizes; throws on negative sizes or overflow. `component` names the caller.
int64_t checked_numel(IntArrayRef sizes, std::string_view component);

}  // namespace loom
