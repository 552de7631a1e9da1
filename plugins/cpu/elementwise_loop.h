// map_elements: the loop under every CPU pointwise kernel. Computes
//   out[i] = f(in0[i], in1[i], ...)
// over out's shape, where every input already has out's shape (the structured-op
// contract: broadcast dims have stride 0, any operand may be non-contiguous) and the C++
// element types given as template arguments.
//
// Two paths:
//  * all operands contiguous: one flat loop over raw pointers that GCC auto-vectorizes
//    when f is simple (no function pointers, plain indexing);
//  * otherwise an N-d walk: size-1 dims dropped, dims ordered by out's strides, adjacent
//    dims coalesced where every operand allows, and the innermost dim run as a tight
//    loop (unit-stride and binary scalar-broadcast cases get their own loops).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "loom/sdk/tensor.hpp"
#include "scalar_types.h"
#include "strided_loop.h"

namespace loom::cpu {

namespace detail {

template <typename Out, typename... In, typename F>
inline void contiguous_loop(F& f, int64_t n, Out* out, const In*... in) {
  for (int64_t i = 0; i < n; ++i) out[i] = f(in[i]...);
}

// One run of the innermost dim: n elements, element strides s[0] (out), s[1 + k] (input k).
template <typename Out, typename... In, typename F, size_t... K>
inline void inner_loop(F& f, int64_t n, char* const* ptrs, const int64_t* s,
                       std::index_sequence<K...>) {
  Out* out = reinterpret_cast<Out*>(ptrs[0]);
  const int64_t so = s[0];
  if (so == 1 && ((s[K + 1] == 1) && ...)) {
    contiguous_loop<Out, In...>(f, n, out, reinterpret_cast<const In*>(ptrs[K + 1])...);
    return;
  }
  if constexpr (sizeof...(In) == 2) {
    using A = std::tuple_element_t<0, std::tuple<In...>>;
    using B = std::tuple_element_t<1, std::tuple<In...>>;
    const A* a = reinterpret_cast<const A*>(ptrs[1]);
    const B* b = reinterpret_cast<const B*>(ptrs[2]);
    if (so == 1 && s[1] == 1 && s[2] == 0) {
      const B bv = *b;
      for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], bv);
      return;
    }
    if (so == 1 && s[1] == 0 && s[2] == 1) {
      const A av = *a;
      for (int64_t i = 0; i < n; ++i) out[i] = f(av, b[i]);
      return;
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    out[i * so] = f(reinterpret_cast<const In*>(ptrs[K + 1])[i * s[K + 1]]...);
  }
}

// sdk::Tensor, one per element type of a pack.
template <typename T>
struct TensorForT {
  using type = sdk::Tensor;
};
template <typename T>
using TensorFor = typename TensorForT<T>::type;

[[noreturn]] inline void operand_mismatch(const sdk::Tensor& out, const sdk::Tensor& t,
                                          LoomDType expected) {
  throw sdk::Error("[cpu] pointwise kernel expected an operand of shape " +
                       shape_string(out.sizes()) + " and dtype " + dtype_name(expected) +
                       ", found shape " + shape_string(t.sizes()) + " and dtype " +
                       dtype_name(t.dtype()),
                   LOOM_STATUS_INTERNAL);
}

template <typename T>
inline void check_operand(const sdk::Tensor& out, const sdk::Tensor& t) {
  if (t.dtype() != dtype_of<T>() ||
      !std::equal(t.sizes().begin(), t.sizes().end(), out.sizes().begin(), out.sizes().end())) {
    operand_mismatch(out, t, dtype_of<T>());
  }
}

}  // namespace detail

template <typename Out, typename... In, typename F>
void map_elements(const sdk::Tensor& out, F f, const detail::TensorFor<In>&... inputs) {
  static_assert(sizeof...(In) == sizeof...(inputs), "one element type per input");
  detail::check_operand<Out>(out, out);
  (detail::check_operand<In>(out, inputs), ...);
  const int64_t numel = out.numel();
  if (numel == 0) return;

  if (out.is_contiguous() && (inputs.is_contiguous() && ...)) {
    detail::contiguous_loop<Out, In...>(f, numel, out.template data<Out>(),
                                        inputs.template data<const In>()...);
    return;
  }

  constexpr size_t N = 1 + sizeof...(In);
  const sdk::Tensor* operands[N] = {&out, &inputs...};
  const int64_t item[N] = {sizeof(Out), sizeof(In)...};

  // Dims with size > 1, outermost first, ordered by out's strides (largest first).
  const auto sizes = out.sizes();
  std::vector<int64_t> order;
  order.reserve(sizes.size());
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] != 1) order.push_back(static_cast<int64_t>(d));
  }
  const auto out_strides = out.strides();
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return std::llabs(out_strides[a]) > std::llabs(out_strides[b]);
  });

  // Coalesce from the innermost dim outwards.
  std::vector<int64_t> dim_size;                   // outermost first
  std::vector<std::array<int64_t, N>> dim_stride;  // element strides per operand
  for (size_t j = order.size(); j-- > 0;) {
    const int64_t d = order[j];
    std::array<int64_t, N> st;
    for (size_t k = 0; k < N; ++k) st[k] = operands[k]->strides()[d];
    if (!dim_size.empty()) {
      bool mergeable = true;
      for (size_t k = 0; k < N; ++k) {
        mergeable = mergeable && st[k] == dim_stride.back()[k] * dim_size.back();
      }
      if (mergeable) {
        dim_size.back() *= sizes[d];
        continue;
      }
    }
    dim_size.push_back(sizes[d]);
    dim_stride.push_back(st);
  }
  if (dim_size.empty()) {  // a single element
    dim_size.push_back(1);
    dim_stride.push_back({});
  }
  std::reverse(dim_size.begin(), dim_size.end());
  std::reverse(dim_stride.begin(), dim_stride.end());

  const size_t nd = dim_size.size();
  const int64_t inner_n = dim_size[nd - 1];
  const std::array<int64_t, N> inner_stride = dim_stride[nd - 1];
  char* ptrs[N] = {out.template data<char>(), inputs.template data<char>()...};
  std::vector<int64_t> counter(nd, 0);
  const auto seq = std::index_sequence_for<In...>{};
  for (;;) {
    detail::inner_loop<Out, In...>(f, inner_n, ptrs, inner_stride.data(), seq);
    // advance the outer dims (an odometer), moving each operand's pointer
    size_t d = nd - 1;
    for (;;) {
      if (d == 0) return;
      --d;
      if (++counter[d] < dim_size[d]) {
        for (size_t k = 0; k < N; ++k) ptrs[k] += dim_stride[d][k] * item[k];
        break;
      }
      for (size_t k = 0; k < N; ++k) ptrs[k] -= dim_stride[d][k] * item[k] * (dim_size[d] - 1);
      counter[d] = 0;
    }
  }
}

}  // namespace loom::cpu
