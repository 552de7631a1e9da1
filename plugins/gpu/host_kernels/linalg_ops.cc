// The matmul family on GPU tensors (mm, bmm, addmm, baddbmm): on CUDA through cuBLAS's
// cublasGemmStridedBatchedEx (float16 and bfloat16 accumulate in float, float32 in float,
// TF32 tensor cores only when the manifest's "allow_tf32" option is "true", as PyTorch's
// torch.backends.cuda.matmul.allow_tf32; float64 in double); on ROCm, and on CUDA with
// the option gemm: "loom", through loom's tiled kernel (Note [Tiled GEMM]).
//
// Note [Row-major GEMM on cuBLAS]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// cuBLAS is column-major. A row-major C = A @ B is the column-major C^T = B^T @ A^T, and a
// row-major matrix read column-major is its transpose, so the call passes B then A with
// their row-major leading dims, swapping m and n; a transposed view (unit stride on the
// row dim) passes CUBLAS_OP_T instead of a copy. Operands with neither layout, and an out
// that is not dense row-major, go through contiguous temporaries.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "../kernels/launch.h"
#include "op_support.h"

#if LOOM_GPU_VENDOR_LIBRARIES
#include <cublas_v2.h>
#endif

namespace loom::gpu {

bool g_allow_tf32 = false;

namespace {

using sdk::DispatchContext;
using sdk::Scalar;
using sdk::Tensor;

// True when the manifest's "gemm" option is "loom": the CUDA plugin then multiplies with
// loom's own tiled kernel, as the ROCm plugin always does (how it is checked against
// cuBLAS on a machine with an NVIDIA GPU).
bool g_loom_gemm = false;

// out = beta * out + alpha * a @ b through loom's tiled kernel, every operand read and
// written through its strides (a batch dim of size 1 broadcasts with stride 0).
void tiled_gemm(const DispatchContext& ctx, const char* op, const Tensor& a, const Tensor& b,
                const Tensor& out, double alpha, double beta) {
  const int64_t nd = out.dim();
  auto batch_stride = [&](const Tensor& t) {
    return nd == 3 && t.sizes()[0] != 1 ? t.strides()[0] : 0;
  };
  GemmShape s;
  s.m = out.sizes()[nd - 2];
  s.n = out.sizes()[nd - 1];
  s.k = a.sizes()[nd - 1];
  s.batch = nd == 3 ? out.sizes()[0] : 1;
  s.a_row_stride = a.strides()[nd - 2];
  s.a_col_stride = a.strides()[nd - 1];
  s.a_batch_stride = batch_stride(a);
  s.b_row_stride = b.strides()[nd - 2];
  s.b_col_stride = b.strides()[nd - 1];
  s.b_batch_stride = batch_stride(b);
  s.c_row_stride = out.strides()[nd - 2];
  s.c_col_stride = out.strides()[nd - 1];
  s.c_batch_stride = nd == 3 ? out.strides()[0] : 0;
  check_launch(
      launch_gemm(out.dtype(), s, alpha, beta, out.data(), a.data(), b.data(), stream_of(ctx)), op);
}

#if LOOM_GPU_VENDOR_LIBRARIES

void check_blas(cublasStatus_t status, const char* op, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw sdk::Error("[" + std::string(op) + "] cuBLAS " + what +
                     " failed: " + cublasGetStatusString(status));
  }
}

// One handle per thread and device (cuBLAS handles are not thread-safe).
cublasHandle_t blas_handle(int device, const char* op) {
  thread_local std::vector<cublasHandle_t> handles;
  if (device >= static_cast<int>(handles.size())) handles.resize(device + 1, nullptr);
  if (handles[device] == nullptr) check_blas(cublasCreate(&handles[device]), op, "cublasCreate");
  return handles[device];
}

// A batch of matrices as cuBLAS sees it: a pointer, the op, the leading dim, the batch
// stride. Dims of t: [batch,] rows, cols.
struct BlasMatrix {
  Tensor storage;  // t itself or a contiguous copy
  cublasOperation_t op = CUBLAS_OP_N;
  int64_t ld = 0;
  int64_t batch_stride = 0;
};

BlasMatrix blas_matrix(const DispatchContext& ctx, const char* op, const Tensor& t) {
  const int64_t nd = t.dim();
  const int64_t rows = t.sizes()[nd - 2], cols = t.sizes()[nd - 1];
  const int64_t rs = t.strides()[nd - 2], cs = t.strides()[nd - 1];
  const int64_t bs = nd == 3 ? t.strides()[0] : 0;
  BlasMatrix m;
  if ((cs == 1 || cols == 1) && rs >= std::max<int64_t>(cols, 1)) {
    m = {t, CUBLAS_OP_N, rs, bs};  // row-major: its column-major reading is t^T
  } else if ((rs == 1 || rows == 1) && cs >= std::max<int64_t>(rows, 1)) {
    m = {t, CUBLAS_OP_T, cs, bs};  // a transposed view
  } else {
    Tensor c = contiguous(ctx, op, t);
    m = {c, CUBLAS_OP_N, std::max<int64_t>(cols, 1), rows * cols};
  }
  if (nd == 3 && t.sizes()[0] == 1) m.batch_stride = 0;
  return m;
}

// out = beta * out + alpha * a @ b over a batch (3-d) or one matrix (2-d).
void gemm(const DispatchContext& ctx, const char* op, const Tensor& a, const Tensor& b,
          const Tensor& out, double alpha, double beta) {
  const int64_t nd = out.dim();
  const int64_t m = out.sizes()[nd - 2], n = out.sizes()[nd - 1], k = a.sizes()[nd - 1];
  const int64_t batch = nd == 3 ? out.sizes()[0] : 1;
  if (out.numel() == 0) return;
  if (g_loom_gemm) {
    tiled_gemm(ctx, op, a, b, out, alpha, beta);
    return;
  }
  const bool out_dense = out.is_contiguous();
  Tensor c = out_dense ? out : contiguous(ctx, op, out);
  const BlasMatrix A = blas_matrix(ctx, op, a), B = blas_matrix(ctx, op, b);
  cudaDataType_t type;
  cublasComputeType_t compute;
  float alpha_f = static_cast<float>(alpha), beta_f = static_cast<float>(beta);
  const void* alpha_p = &alpha_f;
  const void* beta_p = &beta_f;
  switch (out.dtype()) {
    case LOOM_DTYPE_FLOAT16:
      type = CUDA_R_16F;
      compute = CUBLAS_COMPUTE_32F;
      break;
    case LOOM_DTYPE_BFLOAT16:
      type = CUDA_R_16BF;
      compute = CUBLAS_COMPUTE_32F;
      break;
    case LOOM_DTYPE_FLOAT32:
      type = CUDA_R_32F;
      compute = g_allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
      break;
    case LOOM_DTYPE_FLOAT64:
      type = CUDA_R_64F;
      compute = CUBLAS_COMPUTE_64F;
      alpha_p = &alpha;
      beta_p = &beta;
      break;
    default:
      throw sdk::Error("[" + std::string(op) + "] the cuBLAS kernel takes floating dtypes only");
  }
  cublasHandle_t handle = blas_handle(out.device().index, op);
  check_blas(cublasSetStream(handle, stream_of(ctx)), op, "cublasSetStream");
  {
    // Note [Row-major GEMM on cuBLAS]: C^T (n x m) = B^T (n x k) @ A^T (k x m). With k == 0
    // cuBLAS scales C by beta, as BLAS defines.
    check_blas(
        cublasGemmStridedBatchedEx(
            handle, B.op, A.op, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k),
            alpha_p, B.storage.data(), type, static_cast<int>(std::max<int64_t>(B.ld, 1)),
            B.batch_stride, A.storage.data(), type, static_cast<int>(std::max<int64_t>(A.ld, 1)),
            A.batch_stride, beta_p, c.data(), type, static_cast<int>(n), m * n,
            static_cast<int>(batch), compute, CUBLAS_GEMM_DEFAULT),
        op, "cublasGemmStridedBatchedEx");
  }
  if (!out_dense) {
    const Tensor* operands[2] = {&out, &c};
    check_launch(launch_copy(out.dtype(), c.dtype(), space_of(op, out, operands), out.data(),
                             c.data(), stream_of(ctx)),
                 op);
  }
}

#else
// ROCm: Debian ships no rocBLAS, so every product runs on loom's tiled kernel.
void gemm(const DispatchContext& ctx, const char* op, const Tensor& a, const Tensor& b,
          const Tensor& out, double alpha, double beta) {
  if (out.numel() == 0) return;
  tiled_gemm(ctx, op, a, b, out, alpha, beta);
}
#endif

// out = self broadcast to out's shape (addmm / baddbmm with beta != 0).
void broadcast_into(const DispatchContext& ctx, const char* op, const Tensor& self,
                    const Tensor& out) {
  const int64_t nd = out.dim(), self_nd = self.dim();
  std::vector<int64_t> strides(static_cast<size_t>(nd), 0);
  for (int64_t d = 0; d < self_nd; ++d) {
    const int64_t od = d + nd - self_nd;
    strides[od] = self.sizes()[d] == 1 ? 0 : self.strides()[d];
  }
  const int64_t* stride_lists[2] = {out.strides().data(), strides.data()};
  StridedSpace<2> space;
  make_strided_space<2>(out.sizes().data(), static_cast<int>(nd), stride_lists, &space);
  check_launch(
      launch_copy(out.dtype(), self.dtype(), space, out.data(), self.data(), stream_of(ctx)), op);
}

Tensor mm_out(const DispatchContext& ctx, const Tensor& self, const Tensor& mat2,
              const Tensor& out) {
  prepare("mm", out, {&self, &mat2});
  gemm(ctx, "mm", self, mat2, out, 1.0, 0.0);
  return out;
}

Tensor bmm_out(const DispatchContext& ctx, const Tensor& self, const Tensor& mat2,
               const Tensor& out) {
  prepare("bmm", out, {&self, &mat2});
  gemm(ctx, "bmm", self, mat2, out, 1.0, 0.0);
  return out;
}

Tensor addmm_like(const DispatchContext& ctx, const char* op, const Tensor& self, const Tensor& a,
                  const Tensor& b, Scalar beta, Scalar alpha, const Tensor& out) {
  prepare(op, out, {&self, &a, &b});
  const double beta_d = beta.to_double();
  if (beta_d != 0) broadcast_into(ctx, op, self, out);
  gemm(ctx, op, a, b, out, alpha.to_double(), beta_d);
  return out;
}

Tensor addmm_out(const DispatchContext& ctx, const Tensor& self, const Tensor& mat1,
                 const Tensor& mat2, Scalar beta, Scalar alpha, const Tensor& out) {
  return addmm_like(ctx, "addmm", self, mat1, mat2, beta, alpha, out);
}

Tensor baddbmm_out(const DispatchContext& ctx, const Tensor& self, const Tensor& batch1,
                   const Tensor& batch2, Scalar beta, Scalar alpha, const Tensor& out) {
  return addmm_like(ctx, "baddbmm", self, batch1, batch2, beta, alpha, out);
}

// dot: the products, then their sum (the reduction kernel's fixed order), in float32 for
// the 16-bit formats; integers wrap as on the CPU.
Tensor dot_out(const DispatchContext& ctx, const Tensor& self, const Tensor& other,
               const Tensor& out) {
  const char* op = "dot";
  prepare(op, out, {&self, &other});
  if (self.dim() != 1 || other.dim() != 1 || self.numel() != other.numel()) {
    throw sdk::Error("[dot] expected two 1-D tensors of one length, found " +
                     std::to_string(self.dim()) + "-D of " + std::to_string(self.numel()) +
                     " and " + std::to_string(other.dim()) + "-D of " +
                     std::to_string(other.numel()) + " elements");
  }
  const bool half = self.dtype() == LOOM_DTYPE_FLOAT16 || self.dtype() == LOOM_DTYPE_BFLOAT16;
  const int32_t acc = half ? LOOM_DTYPE_FLOAT32 : self.dtype();
  const LoomDType acc_type = static_cast<LoomDType>(acc);
  const Tensor a = self.dtype() == acc ? self : contiguous(ctx, op, self, acc);
  const Tensor b = other.dtype() == acc ? other : contiguous(ctx, op, other, acc);
  const Tensor products = sdk::empty(a.sizes(), acc_type, out.device());
  broadcast_binary(ctx, op, BinaryOp::Mul, 1.0, products, a, b);
  const Tensor total =
      out.dtype() == acc ? out : sdk::empty(std::span<const int64_t>{}, acc_type, out.device());
  reduce(ctx, op, ReduceOp::Sum, products, {}, total);
  copy_into(ctx, op, out, total);
  return out;
}

}  // namespace

void register_linalg_ops(sdk::Registrar& r, uint32_t key) {
  g_allow_tf32 = r.option("allow_tf32", "false") == "true";
  g_loom_gemm = loom_kernels_option(r, "gemm");
  r.impl<&mm_out>("loom::mm.out", key, sdk::dtypes::floating);
  r.impl<&bmm_out>("loom::bmm.out", key, sdk::dtypes::floating);
  r.impl<&addmm_out>("loom::addmm.out", key, sdk::dtypes::floating);
  r.impl<&baddbmm_out>("loom::baddbmm.out", key, sdk::dtypes::floating);
  r.impl<&dot_out>("loom::dot.out", key, sdk::dtypes::numeric);
}

}  // namespace loom::gpu
