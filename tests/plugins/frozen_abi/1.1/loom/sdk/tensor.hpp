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
        view_(o.view_),
        has_view_(std::exchange(o.has_view_, false)) {
    if (handle_ != nullptr && !std::exchange(o.owned_, false)) host().tensor_retain(handle_);
  }
  Tensor& operator=(Tensor o) noexcept {
    std::swap(handle_, o.handle_);
    std::swap(owned_, o.owned_);
    std::swap(view_, o.view_);
    std::swap(has_view_, o.has_view_);
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
  // Address of the first element.
  template <typename T = void>
  T* data() const {
    return reinterpret_cast<T*>(static_cast<char*>(view().dl.data) + view().dl.byte_offset);
  }

 private:
  Tensor(LoomTensor* h, bool owned) : handle_(h), owned_(owned) {}
  LoomTensor* handle_ = nullptr;
  bool owned_ = false;
  mutable LoomTensorView view_{};
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

}  // namespace loom::sdk
