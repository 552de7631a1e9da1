// Strided N-d iteration for kernels, so no vendor kernel writes an index loop:
//
//   loom::sdk::elementwise<float>(out, [](float x, float y) { return x * y; }, a, b);
//
// computes out[i] = fn(a[i], b[i]) for every element of `out`, whatever the tensors'
// strides: the inputs of a structured op's out= kernel already have out's shape (the
// core broadcast them, so a stride may be 0), and any of them may be transposed or sliced.
//
// Note [Strided loops]
// ~~~~~~~~~~~~~~~~~~~~
// The loop first coalesces dims: size-1 dims are dropped, and dim d merges into the dim
// after it when every tensor's stride there equals its next stride times the next size.
// A contiguous or simply broadcast set of tensors collapses to one dim, which runs as a
// plain loop over pointers the compiler can vectorise (the fast path when every stride
// is 1). Otherwise the innermost dim runs as a strided loop and the outer dims advance a
// counter per dim, with each tensor's pointer moved by its stride (no division per
// element). Elements are visited in out's row-major order; nothing is parallelised.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "loom/plugin.h"
#include "loom/sdk/dtype.hpp"
#include "loom/sdk/error.hpp"
#include "loom/sdk/tensor.hpp"

namespace loom::sdk {
namespace detail {

template <size_t N>
struct StridedDims {
  std::vector<int64_t> sizes;                   // innermost last
  std::vector<std::array<int64_t, N>> strides;  // in elements, per dim, per tensor
};

// Drops size-1 dims and merges dims whose strides chain (Note [Strided loops]).
template <size_t N>
StridedDims<N> coalesce(std::span<const int64_t> sizes,
                        const std::array<std::span<const int64_t>, N>& strides) {
  StridedDims<N> out;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) continue;
    std::array<int64_t, N> s{};
    for (size_t t = 0; t < N; ++t) s[t] = strides[t][d];
    if (!out.sizes.empty()) {
      bool chains = true;
      for (size_t t = 0; t < N; ++t) chains = chains && out.strides.back()[t] == s[t] * sizes[d];
      if (chains) {
        out.sizes.back() *= sizes[d];
        out.strides.back() = s;
        continue;
      }
    }
    out.sizes.push_back(sizes[d]);
    out.strides.push_back(s);
  }
  return out;
}

inline void check_elementwise(const Tensor& out, const Tensor& in, LoomDType dtype) {
  if (in.dtype() != dtype) {
    throw Error(std::string("[sdk] elementwise expected ") + dtype_name(dtype) + " inputs, found " +
                dtype_name(in.dtype()));
  }
  if (in.dim() != out.dim() ||
      !std::equal(in.sizes().begin(), in.sizes().end(), out.sizes().begin())) {
    throw Error(
        "[sdk] elementwise expected inputs of out's shape (structured ops broadcast "
        "them first)");
  }
}

template <typename T>
constexpr LoomDType dtype_of();
template <>
constexpr LoomDType dtype_of<bool>() {
  return LOOM_DTYPE_BOOL;
}
template <>
constexpr LoomDType dtype_of<uint8_t>() {
  return LOOM_DTYPE_UINT8;
}
template <>
constexpr LoomDType dtype_of<int8_t>() {
  return LOOM_DTYPE_INT8;
}
template <>
constexpr LoomDType dtype_of<int16_t>() {
  return LOOM_DTYPE_INT16;
}
template <>
constexpr LoomDType dtype_of<int32_t>() {
  return LOOM_DTYPE_INT32;
}
template <>
constexpr LoomDType dtype_of<int64_t>() {
  return LOOM_DTYPE_INT64;
}
template <>
constexpr LoomDType dtype_of<float>() {
  return LOOM_DTYPE_FLOAT32;
}
template <>
constexpr LoomDType dtype_of<double>() {
  return LOOM_DTYPE_FLOAT64;
}

// One innermost run of n elements; a plain loop when every stride is 1.
template <typename T, typename F, size_t N, size_t... I>
void run_inner(F& fn, T* o, const std::array<const T*, N>& in, int64_t n,
               const std::array<int64_t, N + 1>& stride, std::index_sequence<I...>) {
  if (n == 1) {
    *o = fn(*in[I]...);
  } else if (stride[0] == 1 && ((stride[I + 1] == 1) && ...)) {
    for (int64_t i = 0; i < n; ++i) o[i] = fn(in[I][i]...);
  } else {
    for (int64_t i = 0; i < n; ++i) o[i * stride[0]] = fn(in[I][i * stride[I + 1]]...);
  }
}

}  // namespace detail

// out[i] = fn(inputs[i]...) for every element, all tensors of C++ type T (float, double,
// int64_t, ...) and of out's shape; throws loom::sdk::Error otherwise.
template <typename T, typename F, typename... In>
void elementwise(const Tensor& out, F&& fn, const In&... inputs) {
  constexpr size_t N = sizeof...(In);
  constexpr LoomDType dtype = detail::dtype_of<T>();
  if (out.dtype() != dtype) {
    throw Error(std::string("[sdk] elementwise expected a ") + dtype_name(dtype) + " out, found " +
                dtype_name(out.dtype()));
  }
  (detail::check_elementwise(out, inputs, dtype), ...);
  if (out.numel() == 0) return;
  detail::StridedDims<N + 1> dims =
      detail::coalesce<N + 1>(out.sizes(), {out.strides(), inputs.strides()...});
  T* o = out.data<T>();
  std::array<const T*, N> in = {inputs.template data<const T>()...};
  if (dims.sizes.empty()) {  // a single element
    detail::run_inner<T>(fn, o, in, 1, {}, std::make_index_sequence<N>{});
    return;
  }
  const size_t inner = dims.sizes.size() - 1;
  std::vector<int64_t> counter(inner, 0);
  while (true) {
    detail::run_inner<T>(fn, o, in, dims.sizes[inner], dims.strides[inner],
                         std::make_index_sequence<N>{});
    // Advance the outer dims, innermost first, moving every pointer by its stride.
    size_t d = inner;
    while (true) {
      if (d == 0) return;
      --d;
      o += dims.strides[d][0];
      for (size_t t = 0; t < N; ++t) in[t] += dims.strides[d][t + 1];
      if (++counter[d] < dims.sizes[d]) break;
      o -= dims.strides[d][0] * dims.sizes[d];
      for (size_t t = 0; t < N; ++t) in[t] -= dims.strides[d][t + 1] * dims.sizes[d];
      counter[d] = 0;
    }
  }
}

// Calls fn.template operator()<T>() with the C++ type of `dtype` (bool, uint8_t, int8_t,
// int16_t, int32_t, int64_t, float, double: the set dtypes::standard); throws for others:
//   for_each_dtype(out.dtype(), [&]<typename T>() { elementwise<T>(out, ...); });
template <typename F>
void for_each_dtype(LoomDType dtype, F&& fn) {
  switch (dtype) {
    case LOOM_DTYPE_BOOL:
      return fn.template operator()<bool>();
    case LOOM_DTYPE_UINT8:
      return fn.template operator()<uint8_t>();
    case LOOM_DTYPE_INT8:
      return fn.template operator()<int8_t>();
    case LOOM_DTYPE_INT16:
      return fn.template operator()<int16_t>();
    case LOOM_DTYPE_INT32:
      return fn.template operator()<int32_t>();
    case LOOM_DTYPE_INT64:
      return fn.template operator()<int64_t>();
    case LOOM_DTYPE_FLOAT32:
      return fn.template operator()<float>();
    case LOOM_DTYPE_FLOAT64:
      return fn.template operator()<double>();
    default:
      throw Error(std::string("[sdk] for_each_dtype has no C++ type for ") + dtype_name(dtype),
                  LOOM_STATUS_UNIMPLEMENTED);
  }
}

}  // namespace loom::sdk
