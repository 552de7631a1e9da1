// loom::sdk::Tensor: a plugin's handle to a host tensor, with its DLPack-compatible view.
// An argument handle borrows (no refcount traffic); a created one owns a reference.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <utility>

#include "loom/plugin.h"
#include "loom/sdk/error.hpp"
#include "loom/sdk/host.hpp"

namespace loom::sdk {

class Tensor {
 public:
  Tensor() = default;
  // Takes over one reference (a tensor the host returned to us).
  static Tensor adopt(LoomTensor* h) { return Tensor(h, true); }
  // Borrows: valid while the lender holds it (kernel arguments).
  static Tensor borrow(LoomTensor* h) { return Tensor(h, false); }

  Tensor(const Tensor& o) : handle_(o.handle_), owned_(o.handle_ != nullptr) {
    if (handle_) host().tensor_retain(handle_);
  }
  // Moving a borrowed handle takes a reference, so a moved-to Tensor can be kept past the
  // call (moving an argument into a cache stays safe). The source becomes undefined.
  Tensor(Tensor&& o) noexcept
      : handle_(std::exchange(o.handle_, nullptr)),
        owned_(handle_ != nullptr),
        has_view_(std::exchange(o.has_view_, false)) {
    if (has_view_) view_ = o.view_;
    if (handle_ != nullptr && !std::exchange(o.owned_, false)) host().tensor_retain(handle_);
  }
  // `o` leaves with this tensor's old handle, which it releases; the view moves over.
  Tensor& operator=(Tensor o) noexcept {
    std::swap(handle_, o.handle_);
    std::swap(owned_, o.owned_);
    has_view_ = std::exchange(o.has_view_, false);
    if (has_view_) view_ = o.view_;
    return *this;
  }
  ~Tensor() {
    if (owned_ && handle_) host().tensor_release(handle_);
  }

  bool defined() const { return handle_ != nullptr; }
  LoomTensor* get() const { return handle_; }
  // An owned reference for returning to the host (retains when only borrowed).
  LoomTensor* release_to_host() {
    if (!owned_) host().tensor_retain(handle_);
    owned_ = false;
    return std::exchange(handle_, nullptr);
  }

  const LoomTensorView& view() const {
    if (!has_view_) {
      view_.struct_size = sizeof(LoomTensorView);
      view_.view_base = nullptr;  // a host older than 1.3 leaves it
      view_.quantizer = nullptr;  // and one older than 1.10 this
      check(host().tensor_view(handle_, &view_));
      has_view_ = true;
    }
    return view_;
  }
  int64_t dim() const { return view().dl.ndim; }
  std::span<const int64_t> sizes() const { return {view().dl.shape, size_t(view().dl.ndim)}; }
  std::span<const int64_t> strides() const { return {view().dl.strides, size_t(view().dl.ndim)}; }
  // Size of dim d (negative counts from the end); throws when d is out of range.
  int64_t size(int64_t d) const {
    int64_t n = dim();
    if (d < -n || d >= n) {
      throw Error("[sdk] dim " + std::to_string(d) + " is out of range for a tensor of " +
                  std::to_string(n) + " dims");
    }
    return view().dl.shape[d < 0 ? d + n : d];
  }
  int64_t numel() const { return view().numel; }
  LoomDType dtype() const { return static_cast<LoomDType>(view().dtype); }
  LoomDevice device() const { return view().device; }
  bool is_contiguous() const { return view().is_contiguous != 0; }
  // Dense in the channels-last layout: a 4-D [N, C, H, W] tensor stored as [N, H, W, C],
  // strides [H*W*C, 1, W*C, C] (size-1 dims may have any stride). conv2d's results take
  // it from channels-last operands.
  bool is_channels_last() const {
    if (dim() != 4) return false;
    if (numel() == 0) return true;
    int64_t expected = 1;
    for (int d : {1, 3, 2, 0}) {
      if (sizes()[d] == 1) continue;
      if (strides()[d] != expected) return false;
      expected *= sizes()[d];
    }
    return true;
  }
  // Borrowed: the tensor this one is a view of, or nullptr (also from a host older
  // than ABI 1.3).
  LoomTensor* view_base() const {
    return LOOM_HAS_FIELD(&view(), LoomTensorView, view_base) ? view().view_base : nullptr;
  }
  // Borrowed: a quantized tensor's quantizer (ABI 1.10), nullptr for other dtypes.
  const LoomQuantizer* quantizer() const {
    return LOOM_HAS_FIELD(&view(), LoomTensorView, quantizer) ? view().quantizer : nullptr;
  }
  // The storage offset, in elements.
  int64_t storage_offset() const {
    const int64_t size = (view().dl.dtype.bits * view().dl.dtype.lanes + 7) / 8;
    return size == 0 ? 0 : static_cast<int64_t>(view().dl.byte_offset) / size;
  }
  // Address of the first element.
  template <typename T = void>
  T* data() const {
    return reinterpret_cast<T*>(static_cast<char*>(view().dl.data) + view().dl.byte_offset);
  }

 private:
  Tensor(LoomTensor* h, bool owned) : handle_(h), owned_(owned) {}
  LoomTensor* handle_ = nullptr;
  bool owned_ = false;
  // Note [Unfilled views]
  // ~~~~~~~~~~~~~~~~~~~~~
  // Handles are made for every kernel argument and every slot read, so the view (about
  // 100 bytes) stays unset until view() asks the host for it and is copied only when set.
  // Zeroing it in each constructor was 2% of a 1-element add that records a graph.
  mutable LoomTensorView view_;
  mutable bool has_view_ = false;
};

// A new uninitialised tensor from the host (contiguous unless strides are given).
inline Tensor empty(std::span<const int64_t> sizes, LoomDType dtype,
                    LoomDevice device = {LOOM_DEVICE_CPU, -1}) {
  LoomTensor* out = nullptr;
  check(host().tensor_empty(sizes.data(), nullptr, static_cast<int32_t>(sizes.size()), dtype,
                            device, &out));
  return Tensor::adopt(out);
}
inline Tensor empty(std::initializer_list<int64_t> sizes, LoomDType dtype,
                    LoomDevice device = {LOOM_DEVICE_CPU, -1}) {
  return empty(std::span<const int64_t>(sizes.begin(), sizes.size()), dtype, device);
}
// The same with the given element strides (a channels-last result: strides
// [H*W*C, 1, W*C, C]); the host checks they fit the storage it allocates.
inline Tensor empty_strided(std::span<const int64_t> sizes, std::span<const int64_t> strides,
                            LoomDType dtype, LoomDevice device = {LOOM_DEVICE_CPU, -1}) {
  if (strides.size() != sizes.size()) {
    throw Error("[sdk] empty_strided expected one stride per dim, found " +
                    std::to_string(strides.size()) + " strides for " +
                    std::to_string(sizes.size()) + " dims",
                LOOM_STATUS_INVALID_ARGUMENT);
  }
  LoomTensor* out = nullptr;
  check(host().tensor_empty(sizes.data(), strides.data(), static_cast<int32_t>(sizes.size()), dtype,
                            device, &out));
  return Tensor::adopt(out);
}

// A new contiguous quantized tensor with a copy of `quantizer` (ABI 1.10; the host
// checks it and raises what is wrong).
inline Tensor empty_quantized(std::span<const int64_t> sizes, LoomDType dtype,
                              const LoomQuantizer& quantizer,
                              LoomDevice device = {LOOM_DEVICE_CPU, -1}) {
  if (!LOOM_HAS_FIELD(&host(), LoomHostApi, tensor_empty_quantized)) {
    throw Error("[sdk] this host has no quantized tensors (ABI 1.10 needed)",
                LOOM_STATUS_UNIMPLEMENTED);
  }
  LoomTensor* out = nullptr;
  check(host().tensor_empty_quantized(sizes.data(), static_cast<int32_t>(sizes.size()), dtype,
                                      device, &quantizer, &out));
  return Tensor::adopt(out);
}

}  // namespace loom::sdk
