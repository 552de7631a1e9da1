// CUDA's WMMA (nvcuda::wmma, tensor cores) and its 16-bit element types for the emulator
// (Note [The GPU emulator]), so the tensor-core GEMM kernel runs on the host too. On a
// GPU a fragment is spread over the 32 lanes of a warp in an unspecified layout; here
// every lane holds the whole tile, and each warp-wide operation does all of the warp's
// work in every lane: the lanes agree on every value, so a kernel reads and writes what
// it would on a GPU. Products of 16-bit values are exact in float; the sum over k is in
// float, in order.
#pragma once

#include <cstdint>
#include <type_traits>

#include "loom/sdk/float16.hpp"

struct __half {
  uint16_t x;
};
struct __nv_bfloat16 {
  uint16_t x;
};
inline __half __float2half_rn(float v) {
  return {loom::sdk::float_to_half_bits(v)};
}
inline __nv_bfloat16 __float2bfloat16_rn(float v) {
  return {loom::sdk::float_to_bfloat16_bits(v)};
}
inline float emulated_to_float(__half v) {
  return loom::sdk::half_bits_to_float(v.x);
}
inline float emulated_to_float(__nv_bfloat16 v) {
  return loom::sdk::bfloat16_bits_to_float(v.x);
}
inline float emulated_to_float(float v) {
  return v;
}

namespace nvcuda::wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

// The tile's rows and columns for each use: A is M x K, B is K x N, the accumulator M x N.
template <typename Use, int M, int N, int K>
struct FragmentShape {
  static constexpr int rows = M, cols = N;
};
template <int M, int N, int K>
struct FragmentShape<matrix_a, M, N, K> {
  static constexpr int rows = M, cols = K;
};
template <int M, int N, int K>
struct FragmentShape<matrix_b, M, N, K> {
  static constexpr int rows = K, cols = N;
};

template <typename Use, int M, int N, int K, typename T, typename Layout = void>
struct fragment {
  using Shape = FragmentShape<Use, M, N, K>;
  static constexpr int num_elements = Shape::rows * Shape::cols;
  float x[num_elements];  // row-major, in float (exact for the 16-bit types)
};

template <typename Use, int M, int N, int K, typename T, typename Layout>
void fill_fragment(fragment<Use, M, N, K, T, Layout>& f, float value) {
  for (float& e : f.x) e = value;
}

// A or B from memory laid out as the fragment's Layout says, `ldm` elements a row (or a
// column, col_major).
template <typename Use, int M, int N, int K, typename T, typename Layout, typename Element>
void load_matrix_sync(fragment<Use, M, N, K, T, Layout>& f, const Element* p, unsigned ldm) {
  using Shape = FragmentShape<Use, M, N, K>;
  for (int r = 0; r < Shape::rows; ++r) {
    for (int c = 0; c < Shape::cols; ++c) {
      const Element& e = std::is_same_v<Layout, col_major> ? p[c * ldm + r] : p[r * ldm + c];
      f.x[r * Shape::cols + c] = emulated_to_float(e);
    }
  }
}

template <int M, int N, int K, typename T, typename LayoutA, typename LayoutB>
void mma_sync(fragment<accumulator, M, N, K, float>& d,
              const fragment<matrix_a, M, N, K, T, LayoutA>& a,
              const fragment<matrix_b, M, N, K, T, LayoutB>& b,
              const fragment<accumulator, M, N, K, float>& c) {
  float out[M * N];
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) {
      float sum = c.x[i * N + j];
      for (int k = 0; k < K; ++k) sum += a.x[i * K + k] * b.x[k * N + j];
      out[i * N + j] = sum;
    }
  }
  for (int e = 0; e < M * N; ++e) d.x[e] = out[e];
}

template <int M, int N, int K>
void store_matrix_sync(float* p, const fragment<accumulator, M, N, K, float>& f, unsigned ldm,
                       layout_t layout) {
  for (int r = 0; r < M; ++r) {
    for (int c = 0; c < N; ++c) {
      (layout == mem_col_major ? p[c * ldm + r] : p[r * ldm + c]) = f.x[r * N + c];
    }
  }
}

}  // namespace nvcuda::wmma
