// Matrix products on CPU tensors: mm, bmm, addmm, baddbmm (float32 on oneDNN's sgemm,
// bfloat16 on its bfloat16 matmul where the CPU has one, float16 through float32, float64
// and integers by a plain loop) and dot.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "../kernels.h"
#include "../onednn_util.h"
#include "../parallel.h"
#include "../scalar_types.h"

namespace loom::cpu {
namespace {

// One operand of a (batched) product: `batch` matrices of rows x cols, strides in elements.
struct Matrix {
  const sdk::Tensor* tensor;
  int64_t batch, rows, cols;
  int64_t batch_stride, row_stride, col_stride;
};

Matrix matrix_of(const sdk::Tensor& t) {
  bool batched = t.dim() == 3;
  int64_t b = batched ? 1 : 0;
  Matrix m{&t,
           batched ? t.sizes()[0] : 1,
           t.sizes()[b],
           t.sizes()[b + 1],
           batched ? t.strides()[0] : 0,
           t.strides()[b],
           t.strides()[b + 1]};
  // Strides of size-1 dims are arbitrary: give them values oneDNN reads as plain layouts.
  if (m.cols == 1) m.col_stride = m.row_stride == 1 ? std::max<int64_t>(m.rows, 1) : 1;
  if (m.rows == 1) m.row_stride = m.col_stride == 1 ? std::max<int64_t>(m.cols, 1) : 1;
  if (m.batch == 1) m.batch_stride = m.rows * m.cols;
  return m;
}

// oneDNN's matmul takes row- or column-major matrices (one unit stride) with any
// leading dimension, and non-overlapping batches.
bool onednn_layout(const Matrix& m) {
  bool plain = (m.col_stride == 1 && m.row_stride >= m.cols) ||
               (m.row_stride == 1 && m.col_stride >= m.rows);
  return plain && m.batch_stride >= m.rows * m.cols;
}

// A contiguous float32 copy when oneDNN can't read the layout (or the dtype isn't f32).
struct Staged {
  std::vector<float> storage;
  const float* data;
  Matrix m;
};

Staged stage(const Matrix& m) {
  if (m.tensor->dtype() == LOOM_DTYPE_FLOAT32 && onednn_layout(m)) {
    return {{}, m.tensor->data<float>(), m};
  }
  Staged s{gather_as<float>(*m.tensor), nullptr, m};
  s.data = s.storage.data();
  s.m.batch_stride = m.rows * m.cols;
  s.m.row_stride = std::max<int64_t>(m.cols, 1);
  s.m.col_stride = 1;
  return s;
}

dnnl::memory::desc matrix_desc(const Matrix& m,
                               dnnl::memory::data_type type = dnnl::memory::data_type::f32) {
  return dnnl::memory::desc({m.batch, m.rows, m.cols}, type,
                            {m.batch_stride, m.row_stride, m.col_stride});
}

// What a matmul primitive is made for: both operands' sizes and strides, alpha and beta.
PrimitiveKey product_key(const char* kind, const Matrix& a, const Matrix& b, float alpha,
                         float beta) {
  PrimitiveKey key(kind);
  for (const Matrix* m : {&a, &b}) {
    key.add(m->batch).add(m->rows).add(m->cols);
    key.add(m->batch_stride).add(m->row_stride).add(m->col_stride);
  }
  key.add(static_cast<double>(alpha)).add(static_cast<double>(beta));
  return key;
}

// alpha as an output scale and beta as a sum post-op (the destination's prior values).
dnnl::primitive_attr product_attr(float alpha, float beta) {
  dnnl::primitive_attr attr;
  if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
  if (beta != 0.0f) {
    dnnl::post_ops post;
    post.append_sum(beta);
    attr.set_post_ops(post);
  }
  return attr;
}

// Note [sgemm for plain products]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// oneDNN has two f32 product paths: the matmul primitive and dnnl_sgemm (its JIT gemm
// driver, the BLAS-style entry point). On the AVX-512 development machine sgemm ran
// large square products about 12% faster than the primitive (2048: 432 vs 380 GFLOP/s
// on 2 threads), and it needs no primitive or memory objects. So every product whose
// operands each have a unit stride on one axis (all of them once staged) and no empty
// dimension goes through dnnl_sgemm, one call per batch; the primitive remains for the
// empty-dimension cases. Both honour the plugin's OpenMP thread count.

// dnnl_sgemm's view of a row-major operand: 'N' with its row stride as the leading
// dimension, or 'T' (stored transposed) with its column stride.
bool sgemm_operand(const Matrix& m, char& trans, int64_t& ld) {
  if (m.col_stride == 1) {
    trans = 'N';
    ld = m.row_stride;
    return true;
  }
  if (m.row_stride == 1) {
    trans = 'T';
    ld = m.col_stride;
    return true;
  }
  return false;
}

bool sgemm_gemm(const Staged& a, const Staged& b, float* out, float alpha, float beta,
                const char* op) {
  char trans_a = 'N', trans_b = 'N';
  int64_t lda = 0, ldb = 0;
  const int64_t m = a.m.rows, k = a.m.cols, n = b.m.cols;
  if (m == 0 || k == 0 || n == 0 || !sgemm_operand(a.m, trans_a, lda) ||
      !sgemm_operand(b.m, trans_b, ldb)) {
    return false;
  }
  for (int64_t batch = 0; batch < a.m.batch; ++batch) {
    dnnl_status_t status =
        dnnl_sgemm(trans_a, trans_b, m, n, k, alpha, a.data + batch * a.m.batch_stride, lda,
                   b.data + batch * b.m.batch_stride, ldb, beta, out + batch * m * n, n);
    if (status != dnnl_success) {
      throw sdk::Error(std::string("[") + op + "] oneDNN's sgemm failed with status " +
                           std::to_string(static_cast<int>(status)),
                       LOOM_STATUS_INTERNAL);
    }
  }
  return true;
}

// out[b] = alpha * a[b] @ b[b] + beta * out[b] in float32 on oneDNN (out contiguous f32).
void onednn_gemm(const Staged& a, const Staged& b, float* out, float alpha, float beta,
                 const char* op) {
  if (sgemm_gemm(a, b, out, alpha, beta, op)) return;
  static PrimitiveCache<dnnl::matmul> cache;
  const PrimitiveKey key = product_key("matmul", a.m, b.m, alpha, beta);
  dnnl::memory::desc dst_desc({a.m.batch, a.m.rows, b.m.cols}, dnnl::memory::data_type::f32,
                              dnnl::memory::format_tag::abc);
  with_onednn_errors(op, [&] {
    dnnl::matmul prim = cache.get(key, [&] {
      dnnl::matmul::desc desc(matrix_desc(a.m), matrix_desc(b.m), dst_desc);
      return dnnl::matmul(
          dnnl::matmul::primitive_desc(desc, product_attr(alpha, beta), onednn_engine()));
    });
    dnnl::engine& eng = onednn_engine();
    dnnl::memory src_mem(matrix_desc(a.m), eng, const_cast<float*>(a.data));
    dnnl::memory wei_mem(matrix_desc(b.m), eng, const_cast<float*>(b.data));
    dnnl::memory dst_mem(dst_desc, eng, out);
    prim.execute(onednn_stream(),
                 {{DNNL_ARG_SRC, src_mem}, {DNNL_ARG_WEIGHTS, wei_mem}, {DNNL_ARG_DST, dst_mem}});
    onednn_stream().wait();
  });
}

// Note [bfloat16 products on oneDNN]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// bfloat16 operands that oneDNN can read as they are (onednn_layout) go to its matmul
// primitive with bfloat16 source and weights and a float32 destination: on CPUs with
// AVX512-BF16 or AMX its kernels multiply the 16-bit values directly (each product exact
// in float32, the sums in float32, as on the float32 path), where staging float32 copies
// for sgemm cost two conversions and twice the memory traffic. A contiguous bfloat16 out
// is the primitive's bfloat16 destination: the float32 sums (with beta * out read as
// float32) are rounded to nearest even once, as store_as rounds them, without a float32
// buffer and a pass over it; any other out gets the float32 result rounded in by
// store_as. On a CPU without bfloat16 instructions
// (onednn_has_bfloat16), or where oneDNN only has its reference implementation for the
// operands (cached with the primitive), the float32 path stays.

// out[b] = alpha * a[b] @ b[b] + beta * out[b] for bfloat16 a and b into a dense
// [batch, rows, cols] out of float32, or of bfloat16 with `bfloat16_out`; false when the
// float32 path should run instead.
bool onednn_bfloat16_gemm(const Matrix& a, const Matrix& b, void* out, bool bfloat16_out,
                          float alpha, float beta, const char* op) {
  if (!onednn_has_bfloat16() || !onednn_layout(a) || !onednn_layout(b) || a.rows == 0 ||
      b.cols == 0) {
    return false;
  }
  using dt = dnnl::memory::data_type;
  static PrimitiveCache<std::shared_ptr<dnnl::matmul>> cache;
  const PrimitiveKey key =
      product_key(bfloat16_out ? "matmul_bf16_bf16" : "matmul_bf16", a, b, alpha, beta);
  const dnnl::memory::desc dst_desc({a.batch, a.rows, b.cols}, bfloat16_out ? dt::bf16 : dt::f32,
                                    dnnl::memory::format_tag::abc);
  bool ran = false;
  with_onednn_errors(op, [&] {
    std::shared_ptr<dnnl::matmul> prim = cache.get(key, [&]() -> std::shared_ptr<dnnl::matmul> {
      dnnl::matmul::desc desc(matrix_desc(a, dt::bf16), matrix_desc(b, dt::bf16), dst_desc);
      try {
        dnnl::matmul::primitive_desc pd(desc, product_attr(alpha, beta), onednn_engine());
        if (std::string(pd.impl_info_str()).rfind("ref", 0) == 0) return nullptr;
        return std::make_shared<dnnl::matmul>(pd);
      } catch (const dnnl::error&) {
        return nullptr;  // no bfloat16 implementation for these operands
      }
    });
    if (prim == nullptr) return;
    dnnl::engine& eng = onednn_engine();
    dnnl::memory src_mem(matrix_desc(a, dt::bf16), eng, const_cast<void*>(a.tensor->data()));
    dnnl::memory wei_mem(matrix_desc(b, dt::bf16), eng, const_cast<void*>(b.tensor->data()));
    dnnl::memory dst_mem(dst_desc, eng, out);
    prim->execute(onednn_stream(),
                  {{DNNL_ARG_SRC, src_mem}, {DNNL_ARG_WEIGHTS, wei_mem}, {DNNL_ARG_DST, dst_mem}});
    onednn_stream().wait();
    ran = true;
  });
  return ran;
}

// The same product by a plain loop, accumulating in Acc (float64, and integers wrapping
// in 64 bits).
template <typename T, typename Acc>
void loop_gemm(const Matrix& a, const Matrix& b, T* out, Acc alpha, Acc beta) {
  const T* pa = a.tensor->data<T>();
  const T* pb = b.tensor->data<T>();
  const int64_t n = a.rows, k = a.cols, p = b.cols;
  // rows of the output (over all batches) split over the thread pool
  parallel_for(0, a.batch * n, grain_for(k * p), [&](int64_t first, int64_t last) {
    std::vector<Acc> row(static_cast<size_t>(p));
    for (int64_t r = first; r < last; ++r) {
      const int64_t batch = r / n, i = r % n;
      const T* ab = pa + batch * a.batch_stride;
      const T* bb = pb + batch * b.batch_stride;
      std::fill(row.begin(), row.end(), Acc(0));
      for (int64_t j = 0; j < k; ++j) {
        Acc x = static_cast<Acc>(ab[i * a.row_stride + j * a.col_stride]);
        const T* brow = bb + j * b.row_stride;
        for (int64_t c = 0; c < p; ++c) row[c] += x * static_cast<Acc>(brow[c * b.col_stride]);
      }
      T* dst = out + r * p;
      for (int64_t c = 0; c < p; ++c) {
        Acc v = alpha * row[c];
        if (beta != Acc(0)) v += beta * static_cast<Acc>(dst[c]);
        dst[c] = static_cast<T>(v);
      }
    }
  });
}

// Writes self broadcast to out's shape into out (addmm/baddbmm's added term).
template <typename T>
void broadcast_into(const sdk::Tensor& self, const sdk::Tensor& out) {
  int64_t nd = out.dim();
  int64_t strides[3] = {0, 0, 0};
  for (int64_t d = 0; d < self.dim(); ++d) {
    int64_t od = nd - self.dim() + d;
    strides[od] = self.sizes()[d] == 1 ? 0 : self.strides()[d];
  }
  int64_t sizes[3] = {1, 1, 1};
  for (int64_t d = 0; d < nd; ++d) sizes[3 - nd + d] = out.sizes()[d];
  int64_t st[3] = {0, 0, 0};
  for (int64_t d = 0; d < nd; ++d) st[3 - nd + d] = strides[d];
  const T* src = self.data<T>();
  T* dst = out.data<T>();
  for (int64_t i = 0; i < sizes[0]; ++i) {
    for (int64_t j = 0; j < sizes[1]; ++j) {
      for (int64_t c = 0; c < sizes[2]; ++c) *dst++ = src[i * st[0] + j * st[1] + c * st[2]];
    }
  }
}

// out = beta * self + alpha * a @ b (self broadcast; ignored when beta is 0, as in PyTorch).
void product(const sdk::Tensor* self, const sdk::Tensor& a_t, const sdk::Tensor& b_t,
             const sdk::Tensor& out, double alpha, double beta, const char* op) {
  if (out.numel() == 0) return;
  if (self == nullptr) beta = 0;
  if (beta != 0) {
    dispatch_numeric_types(out.dtype(), op,
                           [&](auto tag) { broadcast_into<decltype(tag)>(*self, out); });
  }
  Matrix a = matrix_of(a_t), b = matrix_of(b_t);
  LoomDType dtype = out.dtype();
  if (dtype == LOOM_DTYPE_FLOAT32 && a.cols > 0) {
    onednn_gemm(stage(a), stage(b), out.data<float>(), static_cast<float>(alpha),
                static_cast<float>(beta), op);
  } else if (dtype == LOOM_DTYPE_BFLOAT16 && a.cols > 0 && out.is_contiguous() &&
             onednn_bfloat16_gemm(a, b, out.data(), /*bfloat16_out=*/true,
                                  static_cast<float>(alpha), static_cast<float>(beta), op)) {
    // written in place (Note [bfloat16 products on oneDNN])
  } else if ((dtype == LOOM_DTYPE_FLOAT16 || dtype == LOOM_DTYPE_BFLOAT16) && a.cols > 0) {
    std::vector<float> acc =
        beta != 0 ? gather_as<float>(out) : std::vector<float>(static_cast<size_t>(out.numel()));
    const bool native =
        dtype == LOOM_DTYPE_BFLOAT16 &&
        onednn_bfloat16_gemm(a, b, acc.data(), /*bfloat16_out=*/false, static_cast<float>(alpha),
                             static_cast<float>(beta), op);
    if (!native) {
      onednn_gemm(stage(a), stage(b), acc.data(), static_cast<float>(alpha),
                  static_cast<float>(beta), op);
    }
    store_as(acc, out);
  } else {
    dispatch_numeric_types(dtype, op, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (is_integral_v<T>) {
        // unsigned: wraps modulo 2^64 like int64 in PyTorch, without signed overflow
        loop_gemm<T, uint64_t>(a, b, out.data<T>(),
                               static_cast<uint64_t>(static_cast<int64_t>(alpha)),
                               static_cast<uint64_t>(static_cast<int64_t>(beta)));
      } else {
        loop_gemm<T, double>(a, b, out.data<T>(), alpha, beta);
      }
    });
  }
}

sdk::Tensor mm_out(const sdk::Tensor& self, const sdk::Tensor& mat2, const sdk::Tensor& out) {
  product(nullptr, self, mat2, out, 1.0, 0.0, "mm");
  return out;
}

sdk::Tensor bmm_out(const sdk::Tensor& self, const sdk::Tensor& mat2, const sdk::Tensor& out) {
  product(nullptr, self, mat2, out, 1.0, 0.0, "bmm");
  return out;
}

sdk::Tensor addmm_out(const sdk::Tensor& self, const sdk::Tensor& mat1, const sdk::Tensor& mat2,
                      const sdk::Scalar& beta, const sdk::Scalar& alpha, const sdk::Tensor& out) {
  product(&self, mat1, mat2, out, alpha.to_double(), beta.to_double(), "addmm");
  return out;
}

sdk::Tensor baddbmm_out(const sdk::Tensor& self, const sdk::Tensor& batch1,
                        const sdk::Tensor& batch2, const sdk::Scalar& beta,
                        const sdk::Scalar& alpha, const sdk::Tensor& out) {
  product(&self, batch1, batch2, out, alpha.to_double(), beta.to_double(), "baddbmm");
  return out;
}

sdk::Tensor dot_out(const sdk::Tensor& self, const sdk::Tensor& other, const sdk::Tensor& out) {
  dispatch_numeric_types(self.dtype(), "dot", [&](auto tag) {
    using T = decltype(tag);
    using Acc = std::conditional_t<is_integral_v<T>, uint64_t, double>;  // integers wrap
    const T* a = self.data<T>();
    const T* b = other.data<T>();
    int64_t sa = self.strides()[0], sb = other.strides()[0];
    Acc total = 0;
    for (int64_t i = 0; i < self.numel(); ++i) {
      total += static_cast<Acc>(static_cast<acc_type<T>>(a[i * sa])) *
               static_cast<Acc>(static_cast<acc_type<T>>(b[i * sb]));
    }
    *out.data<T>() = static_cast<T>(static_cast<acc_type<T>>(total));
  });
  return out;
}

}  // namespace

void register_linalg_kernels(sdk::Registrar& r) {
  r.impl<&mm_out>("loom::mm.out", LOOM_KEY_CPU, sdk::dtypes::numeric);
  r.impl<&bmm_out>("loom::bmm.out", LOOM_KEY_CPU, sdk::dtypes::numeric);
  r.impl<&addmm_out>("loom::addmm.out", LOOM_KEY_CPU, sdk::dtypes::numeric);
  r.impl<&baddbmm_out>("loom::baddbmm.out", LOOM_KEY_CPU, sdk::dtypes::numeric);
  r.impl<&dot_out>("loom::dot.out", LOOM_KEY_CPU, sdk::dtypes::numeric);
}

}  // namespace loom::cpu
