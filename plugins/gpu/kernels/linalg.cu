// loom's own GEMM over strided matrices: c = alpha * a @ b + beta * c over a batch, every
// operand read through its strides, accumulating in OpMath (float for float16 /
// bfloat16, double for float64) on the shared tiled kernel (gemm_kernel.cuh). The matmul
// family's kernel on ROCm, and on CUDA when the manifest's "gemm" option is "loom" (how
// it is checked against cuBLAS).
#include <cstdint>

#include "gemm_kernel.cuh"
#include "launch.h"

namespace loom::gpu {
namespace {

template <typename T>
struct StridedOperands {
  using A = OpMath<T>;
  GemmShape s;
  A alpha, beta;
  T* c;
  const T* a_data;
  const T* b_data;
  // whether A's rows along k and B's along n are read in 16-byte runs (Note [Vector
  // operand loads]: the SIMT tiles' float32, the matrix units' 16-bit types)
  static constexpr bool kGivesARuns = true, kGivesBRuns = true;
  bool a_runs = false, b_runs = false;

  // cursors (Note [GEMM operand cursors]): a row of a, a column of b
  __device__ const T* a_row(int64_t z, int64_t r) const {
    return a_data + z * s.a_batch_stride + r * s.a_row_stride;
  }
  __device__ A a(const T* row, int64_t kk) const { return convert<A>(row[kk * s.a_col_stride]); }
  __device__ const T* b_col(int64_t z, int64_t col) const {
    return b_data + z * s.b_batch_stride + col * s.b_col_stride;
  }
  __device__ A b(const T* column, int64_t kk) const {
    return convert<A>(column[kk * s.b_row_stride]);
  }
  __device__ const T* a_run(int64_t z, int64_t r, int64_t kk) const { return a_row(z, r) + kk; }
  __device__ const T* b_run(int64_t z, int64_t kk, int64_t col) const {
    return b_data + z * s.b_batch_stride + kk * s.b_row_stride + col;
  }
  __device__ void store(int64_t z, int64_t r, int64_t col, A acc) const {
    T* target = c + z * s.c_batch_stride + r * s.c_row_stride + col * s.c_col_stride;
    // beta 0 ignores c (a NaN there does not leak), as in BLAS and PyTorch
    const A prior = beta == A(0) ? A(0) : beta * convert<A>(*target);
    *target = convert<T>(alpha * acc + prior);
  }
};

}  // namespace

const char* launch_gemm(int32_t dtype, const GemmShape& shape, double alpha, double beta, void* c,
                        const void* a, const void* b, gpuStream_t stream) {
  const char* result = kUnsupportedDtype;
  visit_floating_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = OpMath<T>;
    StridedOperands<T> ops{shape,
                           static_cast<A>(alpha),
                           static_cast<A>(beta),
                           static_cast<T*>(c),
                           static_cast<const T*>(a),
                           static_cast<const T*>(b)};
    ops.a_runs = runs_are_vectors(a, sizeof(T), shape.a_col_stride, shape.m, shape.a_row_stride,
                                  shape.batch, shape.a_batch_stride);
    ops.b_runs = runs_are_vectors(b, sizeof(T), shape.b_col_stride, shape.k, shape.b_row_stride,
                                  shape.batch, shape.b_batch_stride);
    result = launch_tiled_gemm<T>(ops, {shape.m, shape.n, shape.k, shape.batch}, stream);
  });
  return result;
}

}  // namespace loom::gpu
