// Tensor: the refcounted handle apps and the dispatcher pass around, with the
// metadata-only view ops of DESIGN §2 (they work on every device without a kernel).
#pragma once

#include <optional>
#include <string>

#include "loom/core/tensor_impl.h"

namespace loom {

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(Ref<TensorImpl> impl) : impl_(std::move(impl)) {}
  // Takes over one reference of a raw impl (from the ABI).
  static Tensor adopt(TensorImpl* impl) { return Tensor(Ref<TensorImpl>::adopt(impl)); }
  static Tensor borrow(TensorImpl* impl) { return Tensor(Ref<TensorImpl>::retain(impl)); }

  bool defined() const { return static_cast<bool>(impl_); }
  TensorImpl* impl() const { return impl_.get(); }
  // Gives up this handle's reference (for returning across the ABI).
  TensorImpl* release() { return impl_.leak(); }

  IntArrayRef sizes() const { return impl_->sizes(); }
  IntArrayRef strides() const { return impl_->strides(); }
  int64_t size(int64_t dim) const;
  int64_t stride(int64_t dim) const;
  int64_t dim() const { return impl_->dim(); }
  int64_t numel() const { return impl_->numel(); }
  int64_t storage_offset() const { return impl_->storage_offset(); }
  ScalarType dtype() const { return impl_->dtype(); }
  Device device() const { return impl_->device(); }
  bool is_contiguous() const { return impl_->is_contiguous(); }
  DispatchKeySet key_set() const { return impl_->key_set(); }
  void* data_ptr() const { return impl_->data(); }
  template <typename T>
  T* data() const {
    return static_cast<T*>(impl_->data());
  }
  // True when both share one storage.
  bool is_alias_of(const Tensor& other) const {
    return impl_->storage().get() == other.impl_->storage().get();
  }
  // "Tensor(sizes=[2, 3], dtype=float32, device=cpu)"
  std::string describe() const;

  // --- views: share storage, never copy ---
  Tensor as_strided(IntArrayRef sizes, IntArrayRef strides,
                    std::optional<int64_t> storage_offset = std::nullopt) const;
  // One size may be -1. Throws when the strides cannot express the new shape.
  Tensor view(IntArrayRef sizes) const;
  // A view when the strides allow one, otherwise nullopt (the caller copies).
  std::optional<Tensor> reshape_as_view(IntArrayRef sizes) const;
  Tensor permute(IntArrayRef dims) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor t() const;                        // 2-D transpose; 0-D and 1-D return themselves
  Tensor expand(IntArrayRef sizes) const;  // -1 keeps a size
  Tensor slice(int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
               int64_t step = 1) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor diagonal(int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1) const;
  // A view when possible; nullopt when flattening needs a copy.
  std::optional<Tensor> flatten_as_view(int64_t start_dim = 0, int64_t end_dim = -1) const;

 private:
  Ref<TensorImpl> impl_;
};

// Uninitialised tensors through the device type's allocator.
Tensor empty(IntArrayRef sizes, ScalarType dtype, Device device = Device{});
Tensor empty_strided(IntArrayRef sizes, IntArrayRef strides, ScalarType dtype,
                     Device device = Device{});
// Wraps memory owned elsewhere (see Storage::wrap).
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, ScalarType dtype,
                 Device device, void (*deleter)(void* ctx, void* data), void* ctx);

// Wraps a possibly negative dim into [0, ndim); throws "[op] dim 3 is out of range for a
// tensor of 2 dims (expected -2..1)".
int64_t wrap_dim(int64_t dim, int64_t ndim, std::string_view op);

}  // namespace loom
