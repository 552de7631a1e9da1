// The oneDNN engine/stream of the CPU plugin and the float staging helpers
// (Note [oneDNN in the CPU plugin] in onednn_util.h).
#include "onednn_util.h"

#include <cstring>

#include "parallel.h"
#include "scalar_types.h"
#include "strided_loop.h"

namespace loom::cpu {

dnnl::engine& onednn_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

bool onednn_has_bfloat16() {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
  return (isa & bf16) == bf16;
}

dnnl::stream& onednn_stream() {
  // oneDNN's OpenMP regions size themselves from this thread's OpenMP default: make it
  // the pool's (Note [CPU thread pool] in parallel.h).
  adopt_pool_size_on_this_thread();
  thread_local dnnl::stream stream(onednn_engine());
  return stream;
}

template <typename T>
std::vector<T> gather_as(const sdk::Tensor& t) {
  std::vector<T> out(static_cast<size_t>(t.numel()));
  if (out.empty()) return out;
  dispatch_floating_types(t.dtype(), "gather", [&](auto tag) {
    using S = decltype(tag);
    if constexpr (std::is_same_v<S, T>) {
      if (t.is_contiguous()) {
        std::memcpy(out.data(), t.data<T>(), out.size() * sizeof(T));
        return;
      }
    }
    T* dst = out.data();
    if (t.is_contiguous()) {  // a conversion (float16/bfloat16 -> float32), split over the pool
      const S* src = t.data<const S>();
      parallel_for(0, t.numel(), kGrainSize, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          dst[i] = static_cast<T>(static_cast<acc_type<S>>(src[i]));
        }
      });
      return;
    }
    const sdk::Tensor* operands[1] = {&t};
    for_each_element(t.sizes(), operands, [&](auto& p) {
      *dst++ = static_cast<T>(static_cast<acc_type<S>>(*reinterpret_cast<const S*>(p[0])));
    });
  });
  return out;
}

template <typename T>
void store_as(const std::vector<T>& values, const sdk::Tensor& out) {
  dispatch_floating_types(out.dtype(), "store", [&](auto tag) {
    using S = decltype(tag);
    if (out.is_contiguous()) {
      S* dst = out.data<S>();
      const T* src = values.data();
      parallel_for(0, static_cast<int64_t>(values.size()), kGrainSize,
                   [&](int64_t begin, int64_t end) {
                     for (int64_t i = begin; i < end; ++i) dst[i] = static_cast<S>(src[i]);
                   });
      return;
    }
    const sdk::Tensor* operands[1] = {&out};
    const T* src = values.data();
    for_each_element(out.sizes(), operands,
                     [&](auto& p) { *reinterpret_cast<S*>(p[0]) = static_cast<S>(*src++); });
  });
}

template std::vector<float> gather_as<float>(const sdk::Tensor&);
template std::vector<double> gather_as<double>(const sdk::Tensor&);
template void store_as<float>(const std::vector<float>&, const sdk::Tensor&);
template void store_as<double>(const std::vector<double>&, const sdk::Tensor&);

}  // namespace loom::cpu
