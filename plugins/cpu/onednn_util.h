// oneDNN in the CPU plugin: the shared engine and stream, a small thread-safe cache of
// primitives keyed by shape/stride/attribute signatures, and the staging helpers that
// bring tensors of any float dtype and strides into float32/float64 buffers and back.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "loom/sdk/tensor.hpp"
#include "oneapi/dnnl/dnnl.hpp"

namespace loom::cpu {

// Note [oneDNN in the CPU plugin]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// float32 matrix products and convolutions run on oneDNN (linked into this plugin only;
// it shares the process's GNU OpenMP pool). bfloat16 ones run on oneDNN's bfloat16
// kernels where the CPU has bfloat16 instructions (onednn_has_bfloat16; Note [bfloat16
// products on oneDNN]), else, like float16, in float32 (staged copies); float64 /
// integer products by plain loops, since oneDNN has no float64 kernels. Creating a primitive costs
// far more than a small product, so primitives are cached by a key that names everything the
// primitive was created for (dims, strides, dtype, attributes); the cache is bounded and guarded by
// a mutex, and a cached primitive may run on several threads at once (oneDNN's library scratchpad).
// Strided inputs reach oneDNN as memory descriptors with their strides where the
// implementation accepts them (one unit-stride matrix dim), and are copied otherwise.

dnnl::engine& onednn_engine();
dnnl::stream& onednn_stream();  // one per thread
// Whether oneDNN runs bfloat16 natively here: AVX512-BF16 or AMX within the ISA it may
// use (the plugin's ISA setting included).
bool onednn_has_bfloat16();

// Key builder for the primitive cache.
class PrimitiveKey {
 public:
  explicit PrimitiveKey(const char* kind) : text_(kind) {}
  PrimitiveKey& add(int64_t v) {
    text_ += ',';
    text_ += std::to_string(v);
    return *this;
  }
  PrimitiveKey& add(double v) {  // bit-exact
    int64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    return add(bits);
  }
  const std::string& str() const { return text_; }

 private:
  std::string text_;
};

// A bounded map from keys to primitives (cleared when full: shapes in a model repeat).
template <typename P>
class PrimitiveCache {
 public:
  P get(const PrimitiveKey& key, const std::function<P()>& create) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = map_.find(key.str());
      if (it != map_.end()) return it->second;
    }
    P p = create();
    std::lock_guard<std::mutex> lock(mutex_);
    if (map_.size() >= kCapacity) map_.clear();
    map_.emplace(key.str(), p);
    return p;
  }

 private:
  static constexpr size_t kCapacity = 256;
  std::mutex mutex_;
  std::unordered_map<std::string, P> map_;
};

// The elements of `t` (any float dtype, any strides) in row-major order as T.
template <typename T>
std::vector<T> gather_as(const sdk::Tensor& t);
// Stores row-major `values` into `out` (any float dtype, any strides without overlap).
template <typename T>
void store_as(const std::vector<T>& values, const sdk::Tensor& out);

// Runs f, turning oneDNN errors into "[op] oneDNN: ...".
template <typename F>
void with_onednn_errors(const char* op, F&& f) {
  try {
    f();
  } catch (const dnnl::error& e) {
    throw sdk::Error(std::string("[") + op + "] oneDNN: " + e.what(), LOOM_STATUS_INTERNAL);
  }
}

}  // namespace loom::cpu
