// Intrusive reference counting for tensors and storages: the count lives in the object
// so a raw pointer can cross the plugin ABI and be retained or released from either side.
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

namespace loom {

class RefCounted {
 public:
  void retain() const { refcount_.fetch_add(1, std::memory_order_relaxed); }
  // Deletes the object when the last reference goes.
  void release() const {
    if (refcount_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
  uint32_t use_count() const { return refcount_.load(std::memory_order_acquire); }

 protected:
  RefCounted() = default;
  virtual ~RefCounted() = default;

 private:
  mutable std::atomic<uint32_t> refcount_{1};
};

// Owning pointer to a RefCounted object. `adopt` takes over an existing reference.
template <typename T>
class Ref {
 public:
  Ref() = default;
  static Ref adopt(T* p) {
    Ref r;
    r.p_ = p;
    return r;
  }
  static Ref retain(T* p) {
    if (p) p->retain();
    return adopt(p);
  }
  Ref(const Ref& o) : p_(o.p_) {
    if (p_) p_->retain();
  }
  Ref(Ref&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  Ref& operator=(Ref o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  ~Ref() {
    if (p_) p_->release();
  }

  T* get() const { return p_; }
  T* operator->() const { return p_; }
  T& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  // Gives up ownership without releasing.
  T* leak() { return std::exchange(p_, nullptr); }

 private:
  T* p_ = nullptr;
};

}  // namespace loom
