// TensorBase: the refcounted tensor handle of the core, with the metadata-only view ops
// (they work on every device without a kernel). It knows no op: the op library's
// loom::Tensor (loom/ops/tensor.h) derives from it and adds one method per op.
#pragma once

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "loom/core/int_list.h"
#include "loom/core/memory_format.h"
#include "loom/core/scalar.h"
#include "loom/core/tensor_impl.h"

namespace loom {

class TensorBase {
 public:
  TensorBase() = default;
  explicit TensorBase(Ref<TensorImpl> impl) : impl_(std::move(impl)) {}
  // Takes over one reference of a raw impl (from the ABI).
  static TensorBase adopt(TensorImpl* impl) { return TensorBase(Ref<TensorImpl>::adopt(impl)); }
  static TensorBase borrow(TensorImpl* impl) { return TensorBase(Ref<TensorImpl>::retain(impl)); }

  bool defined() const { return static_cast<bool>(impl_); }
  TensorImpl* impl() const { return impl_.get(); }
  // Gives up this handle's reference (for returning across the ABI).
  TensorImpl* release() { return impl_.leak(); }
  // A view of the whole tensor that records no base (Note [View bases]).
  TensorBase detached_alias() const;

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
  // Dense in `format` (Note [Memory formats]): is_contiguous(MemoryFormat::ChannelsLast).
  bool is_contiguous(MemoryFormat format) const { return is_dense_in(*impl_, format); }
  MemoryFormat suggest_memory_format() const { return loom::suggest_memory_format(*impl_); }
  DispatchKeySet key_set() const { return impl_->key_set(); }
  void* data_ptr() const { return impl_->data(); }
  template <typename T>
  T* data() const {
    return static_cast<T*>(impl_->data());
  }
  // True for a cpu tensor in pinned host memory (Note [Pinned host memory]):
  // Tensor::pin_memory() or TensorOptions::pinned_memory(true) made its storage.
  bool is_pinned() const;
  // True when both share one storage.
  bool is_alias_of(const TensorBase& other) const {
    return impl_->storage().get() == other.impl_->storage().get();
  }
  // "Tensor(sizes=[2, 3], dtype=float32, device=cpu)"
  std::string describe() const;

  // --- views: share storage, never copy ---
  TensorBase as_strided(IntList sizes, IntList strides,
                        std::optional<int64_t> storage_offset = std::nullopt) const;
  // One size may be -1. Throws when the strides cannot express the new shape.
  TensorBase view(IntList sizes) const;
  // A complex tensor's parts as a float tensor with a last dim of 2, and back (Note
  // [Complex views]).
  TensorBase view_as_real() const;
  TensorBase view_as_complex() const;
  // A view when the strides allow one, otherwise nullopt (the caller copies).
  std::optional<TensorBase> reshape_as_view(IntList sizes) const;
  TensorBase permute(IntList dims) const;
  TensorBase transpose(int64_t dim0, int64_t dim1) const;
  TensorBase t() const;                    // 2-D transpose; 0-D and 1-D return themselves
  TensorBase expand(IntList sizes) const;  // -1 keeps a size
  TensorBase slice(int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
                   int64_t step = 1) const;
  TensorBase narrow(int64_t dim, int64_t start, int64_t length) const;
  TensorBase select(int64_t dim, int64_t index) const;
  TensorBase squeeze() const;
  TensorBase squeeze(int64_t dim) const;
  TensorBase unsqueeze(int64_t dim) const;
  TensorBase diagonal(int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1) const;
  // A view when possible; nullopt when flattening needs a copy.
  std::optional<TensorBase> flatten_as_view(int64_t start_dim = 0, int64_t end_dim = -1) const;

 private:
  Ref<TensorImpl> impl_;
};

// Uninitialised tensors through the device type's allocator.
TensorBase empty(IntArrayRef sizes, ScalarType dtype, Device device = Device{});
TensorBase empty_strided(IntArrayRef sizes, IntArrayRef strides, ScalarType dtype,
                         Device device = Device{});
// Through `allocator` instead (a device type's pinned host allocator, with a cpu device);
// see Storage::allocate for its lifetime.
TensorBase empty_strided(IntArrayRef sizes, IntArrayRef strides, ScalarType dtype, Device device,
                         Allocator& allocator);
// Wraps memory owned elsewhere (see Storage::wrap).
TensorBase from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, ScalarType dtype,
                     Device device, void (*deleter)(void* ctx, void* data), void* ctx);

// Wraps a possibly negative dim into [0, ndim); throws "[op] dim 3 is out of range for a
// tensor of 2 dims (expected -2..1)".
int64_t wrap_dim(int64_t dim, int64_t ndim, std::string_view op);

}  // namespace loom
