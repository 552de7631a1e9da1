// What the host side of the GPU plugins asks of the device code: one launcher per kernel
// family, taking plain pointers, dtypes, StridedSpaces and a stream. Compiled by g++ on
// the host side and by nvcc / hipcc in the .cu files, so nothing here names the SDK.
// Each launcher returns nullptr when its kernel was queued, or a static message (an
// unsupported dtype, or the runtime's error string after the launch).
#pragma once

#include <cstdint>

#include "../runtime/gpu_runtime.h"
#include "conv_math.h"
#include "creation_math.h"
#include "index_math.h"
#include "multi_tensor_math.h"
#include "pool_math.h"
#include "shape_math.h"
#include "sort_math.h"

namespace loom::gpu {

// --- elementwise (unary.cu, binary.cu, copy.cu, ternary.cu): out and inputs have one shape, any
// strides ---

enum class UnaryOp : int32_t {
  // numeric
  Neg,
  Abs,
  Sign,
  Relu,
  // floating
  Exp,
  Exp2,
  Expm1,
  Log,
  Log2,
  Log10,
  Log1p,
  Sqrt,
  Rsqrt,
  Reciprocal,
  Sin,
  Cos,
  Tan,
  Asin,
  Acos,
  Atan,
  Sinh,
  Cosh,
  Tanh,
  Sigmoid,
  Erf,
  Silu,
  Gelu,
  GeluTanh,
  Mish,
  LogSigmoid,
  Hardswish,
  Hardsigmoid,
  // all dtypes (integers pass through the rounding ops)
  Floor,
  Ceil,
  Round,
  Trunc,
  // with parameters (UnaryParams)
  LeakyRelu,  // a: negative slope
  Clamp,      // a, b (floating) or ia, ib (integers): min, max; a NaN bound gives NaN
  Elu,        // a: alpha * scale, b: scale, c: input_scale
  Softplus,   // a: beta, b: threshold
  NanToNum,   // a: nan's, b: +inf's, c: -inf's replacement; integers pass through
  // bool results
  IsNan,
  IsInf,
  IsFinite,
  LogicalNot,
};

enum class BinaryOp : int32_t {
  Add,  // self + alpha * other
  Sub,  // self - alpha * other
  Mul,
  Div,
  Maximum,
  Minimum,
  Pow,
  Atan2,
  Fmod,
  Remainder,
  Lerp,      // self + alpha * (other - self), alpha the weight (floating)
  DivTrunc,  // floating; integers: launch_integer_divide
  DivFloor,  // Python's floor division, as PyTorch computes it (floating)
  BitAnd,
  BitOr,
  BitXor,
  // bool results
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  LogicalAnd,
  LogicalOr,
  LogicalXor,
};

// A unary op's parameters: floating ones as doubles, integer bounds as int64 (every int64
// bound exact).
struct UnaryParams {
  double a = 0, b = 0, c = 0;
  int64_t ia = 0, ib = 0;
};

bool is_predicate(UnaryOp op);    // out is bool
bool is_comparison(BinaryOp op);  // out is bool

// Note [Host scalars by value] (ops/src/structured_ops.cc): an input of a pointwise op
// may be a C++ number, read on the host and passed in the launch instead of device
// memory. Bit k of `mask`: input k (0 the first input after out) is one; its element's
// bits, in the input's dtype, are bytes[k] (its data pointer is then unused).
struct HostScalars {
  uint32_t mask = 0;
  alignas(16) unsigned char bytes[3][16] = {};
  bool given(int k) const { return (mask >> k) & 1u; }
};

// space: operand 0 is out, operand 1 the input.
const char* launch_unary(UnaryOp op, int32_t dtype, const UnaryParams& params,
                         const StridedSpace<2>& space, void* out, const void* in,
                         gpuStream_t stream);
// dtype: the inputs' (compute) dtype; out is bool for comparisons, else dtype.
// scalars: the inputs given by value (self 0, other 1).
const char* launch_binary(BinaryOp op, int32_t dtype, double alpha, const StridedSpace<3>& space,
                          void* out, const void* self, const void* other, gpuStream_t stream,
                          const HostScalars& scalars = {});
// out = condition ? self : other (condition bool, self/other/out of dtype); scalars:
// condition 0, self 1, other 2.
const char* launch_where(int32_t dtype, const StridedSpace<4>& space, void* out,
                         const void* condition, const void* self, const void* other,
                         gpuStream_t stream, const HostScalars& scalars = {});
// out (out_dtype) = src (src_dtype) converted.
const char* launch_copy(int32_t out_dtype, int32_t src_dtype, const StridedSpace<2>& space,
                        void* out, const void* src, gpuStream_t stream);
// Every element of out = value (given as a double and as an int64, whichever is exact).
const char* launch_fill(int32_t dtype, bool value_is_floating, double value_d, int64_t value_i,
                        const StridedSpace<1>& space, void* out, gpuStream_t stream);

// --- ternary (ternary.cu): pointwise ops of three operands, masked_fill, integer division ---

enum class TernaryOp : int32_t {
  Lerp,     // self + weight * (end - self), weight a tensor
  Addcmul,  // self + value * t1 * t2
  Addcdiv,  // self + value * t1 / t2 (floating)
};
// A scalar argument as a double and an int64, whichever is exact for the dtype.
struct ScalarArg {
  bool is_floating = false;
  double d = 0;
  int64_t i = 0;
};
// space: out, self, and the two other operands, all of dtype; scalars: self 0, a 1, b 2.
const char* launch_ternary(TernaryOp op, int32_t dtype, const ScalarArg& value,
                           const StridedSpace<4>& space, void* out, const void* self, const void* a,
                           const void* b, gpuStream_t stream, const HostScalars& scalars = {});
// out = mask ? value : self; space: out, self, mask (bool); scalars: self 0, mask 1.
const char* launch_masked_fill(int32_t dtype, const ScalarArg& value, const StridedSpace<3>& space,
                               void* out, const void* self, const void* mask, gpuStream_t stream,
                               const HostScalars& scalars = {});
// Integer division rounding toward zero or down; flags at *check (the launch's check
// slot, Note [Input errors found by kernels]) 1 for a zero divisor and 2 for lowest / -1
// in 32 or 64 bits, whose elements become 0. scalars: self 0, other 1.
const char* launch_integer_divide(int32_t dtype, bool floor, const StridedSpace<3>& space,
                                  void* out, const void* self, const void* other, int64_t* check,
                                  gpuStream_t stream, const HostScalars& scalars = {});

// --- indexing (indexing.cu): element gathers and scatters along one dim ---

// status: the launch's check slot (Note [Input errors found by kernels]); an index
// outside [0, dim_size) is flagged there and its element skipped.
// out[o0] = self[o2 + index[o1] * dim_stride]; space over out's shape: out, index (int64
// or int32), self with its indexed dim's stride 0.
const char* launch_gather(int32_t dtype, int32_t index_dtype, const StridedSpace<3>& space,
                          int64_t dim_size, int64_t dim_stride, void* out, const void* index,
                          const void* self, int64_t* status, gpuStream_t stream);
enum class ScatterMode : int32_t { Source, Value, Add, Multiply, Maximum, Minimum };
// out[o0 + index[o1] * dim_stride] = src[o2] (Source), = value (Value), or += src[o2]
// (Add), *= src[o2] (Multiply), or the max or min with it (NaN kept), atomically for every
// dtype but bool (scatter_add and scatter_reduce); space over index's
// shape: out with its indexed dim's stride 0, index (int64), src (unused for Value).
const char* launch_scatter(ScatterMode mode, int32_t dtype, const StridedSpace<3>& space,
                           int64_t dim_size, int64_t dim_stride, void* out, const void* index,
                           const void* src, const ScalarArg& value, int64_t* status,
                           gpuStream_t stream);

// --- reductions (reduction.cu; Note [Reduction layout]) ---

enum class ReduceOp : int32_t { Sum, Prod, Max, Min, Any, All };

// rows: operand 0 is out (one element per row), operand 1 the input's row start.
// row: operand 0 unused, operand 1 the input's offset within a row. workspace: device
// memory of reduction_workspace_bytes(rows, row, 1) (Note [Split reductions], Note
// [Reductions over outer dims]); null when that is 0.
const char* launch_reduce(ReduceOp op, int32_t in_dtype, int32_t out_dtype,
                          const StridedSpace<2>& rows, const StridedSpace<2>& row, void* out,
                          const void* in, void* workspace, gpuStream_t stream);

// max.dim / min.dim (reduction.cu): each row's extremum and the index of its first
// occurrence (a NaN wins). rows: operand 0 the values' offset, 1 the indices', 2 the
// input's row start; a row's elements are `length` apart by `row_stride`.
const char* launch_arg_reduce(bool is_max, int32_t dtype, int64_t length, int64_t row_stride,
                              const StridedSpace<3>& rows, void* values, int64_t* indices,
                              const void* in, gpuStream_t stream);

// nonzero (indexing.cu): elements in chunks of kNonzeroChunk of the row-major order, one
// block (kNonzeroThreads threads) a chunk. Pass 1 counts each chunk's nonzero elements
// (counts: nonzero_blocks(n) int64 of device memory); pass 2 writes each nonzero
// element's coordinates (out [count, ndim], row-major) from row offsets[chunk], the
// counts' exclusive sums.
inline constexpr int kNonzeroThreads = 256;
inline constexpr int64_t kNonzeroChunk = 2048;
inline int64_t nonzero_blocks(int64_t n) {
  return (n + kNonzeroChunk - 1) / kNonzeroChunk;
}
struct NonzeroShape {
  int32_t ndim = 0;
  int64_t sizes[kMaxDims] = {};
};
const char* launch_nonzero_count(int32_t dtype, const StridedSpace<1>& space, const void* self,
                                 int64_t* counts, gpuStream_t stream);
const char* launch_nonzero_write(int32_t dtype, const StridedSpace<1>& space,
                                 const NonzeroShape& shape, const void* self,
                                 const int64_t* offsets, int64_t* out, gpuStream_t stream);
// index.Tensor's gather: `count` int64 index tensors, each contiguous in the broadcast
// shape, with the size and stride of the dim of self each indexes and the check slot
// its out-of-range values are flagged in (negative values wrap once).
struct AdvancedIndices {
  int32_t count = 0;
  const int64_t* index[kMaxDims] = {};
  int64_t size[kMaxDims] = {}, stride[kMaxDims] = {};
  int64_t* check[kMaxDims] = {};
};
// space over out's shape: operand 0 out, 1 self's offset from the dims not indexed (0 on
// the broadcast dims), 2 the position in the broadcast shape.
const char* launch_advanced_index(int32_t dtype, const StridedSpace<3>& space,
                                  const AdvancedIndices& indices, void* out, const void* self,
                                  gpuStream_t stream);

// --- scans (scan.cu): a thread walks each short line, a block scans each long one (Note
// [Block scans]) ---
// cumsum / cumprod (is_prod): out and in of dtype (the caller converts in first); lines:
// operand 0 out's line start, 1 in's; the elements of a line are `*_stride` apart.
const char* launch_scan(bool is_prod, int32_t dtype, const StridedSpace<2>& lines, int64_t length,
                        int64_t out_stride, int64_t in_stride, void* out, const void* in,
                        gpuStream_t stream);
// The strides along the scanned or sorted dim of a values-and-indices op's operands.
struct LineStrides {
  int64_t values = 0, indices = 0, in = 0;
};
// cummax / cummin (is_max): lines: operand 0 the values' line start, 1 the indices', 2 the
// input's.
const char* launch_running_extreme(bool is_max, int32_t dtype, const StridedSpace<3>& lines,
                                   int64_t length, const LineStrides& strides, void* values,
                                   int64_t* indices, const void* in, gpuStream_t stream);

// --- sort and topk (sort.cu; Note [Bitonic sort] in sort_math.h) ---
// Sorts each line of `length` elements (ascending, or descending) and writes its first
// `count` elements and their positions. lines: operand 0 the values' line start, 1 the
// indices', 2 the input's. scratch: lines.numel() * sort_width(length) * kSortItemBytes
// bytes of device memory.
const char* launch_sort(int32_t dtype, const StridedSpace<3>& lines, int64_t length, int64_t count,
                        bool descending, const LineStrides& strides, void* values, int64_t* indices,
                        const void* in, void* scratch, gpuStream_t stream);

// --- pooling (pool.cu; window arithmetic in pool_math.h), floating dtypes ---
// Max pooling over fixed windows, or adaptive cells when `adaptive`: each maximum and its
// flat index y * in_w + x in its plane.
const char* launch_max_pool(bool adaptive, int32_t dtype, const PoolShape& shape, void* values,
                            int64_t* indices, const void* in, gpuStream_t stream);
// Average pooling over fixed windows (divisor 0: the window's count, with or without the
// padding; else that divisor), or adaptive cells when `adaptive`.
const char* launch_avg_pool(bool adaptive, int32_t dtype, const PoolShape& shape,
                            bool count_include_pad, int64_t divisor, void* out, const void* in,
                            gpuStream_t stream);

// grid_sampler_2d (pool.cu, Note [Grid sampling] in loom/sdk/reference/grid_sample.hpp): input
// [batch, channels, in_h, in_w], grid [batch, out_h, out_w, 2], out [batch, channels,
// out_h, out_w], each with its four strides.
struct GridShape {
  int64_t batch = 0, channels = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t in_strides[4] = {}, grid_strides[4] = {}, out_strides[4] = {};
  int64_t interpolation = 0, padding = 0;
  bool align_corners = false;
};
const char* launch_grid_sample(int32_t dtype, const GridShape& shape, const void* in,
                               const void* grid, void* out, gpuStream_t stream);
// The backward (shape.out_strides: grad_output's): grad_input (zeroed by the caller)
// gathers the output gradients at the taps by atomic adds; grad_grid gets the slopes.
struct GridBackwardStrides {
  int64_t grad_input[4] = {}, grad_grid[4] = {};
};
const char* launch_grid_sample_backward(int32_t dtype, const GridShape& shape,
                                        const GridBackwardStrides& strides, const void* grad_output,
                                        const void* in, const void* grid, void* grad_input,
                                        void* grad_grid, gpuStream_t stream);

// --- loss scaling (amp.cu; Note [Loss scaling ops] in ops/decompositions/amp.cc) ---
// Every element of the batch's contiguous tensors of `dtype` multiplied by *inv_scale (in
// the tensors' dtype first, as mul_ casts it) in place, *found_inf set to 1 where one is
// an inf or a NaN; one block per chunk (Note [Multi-tensor launches]).
const char* launch_amp_unscale(int32_t dtype, const MultiTensorBatch& batch, float* found_inf,
                               const float* inv_scale, gpuStream_t stream);
// The scale's update on the three one-element state tensors, by one thread.
const char* launch_amp_update_scale(float* scale, int32_t* growth_tracker, const float* found_inf,
                                    double growth, double backoff, int64_t interval,
                                    gpuStream_t stream);

// --- fused optimizers (foreach.cu; Note [Fused Adam] in ops/decompositions/foreach.cc) ---
struct FusedAdamOptions {
  double lr = 0, beta1 = 0, beta2 = 0, weight_decay = 0, eps = 0;
  bool amsgrad = false, maximize = false, decoupled = false;
  const float* grad_scale = nullptr;  // device memory, or null
  const float* found_inf = nullptr;   // device memory, or null: the step does nothing when set
};
// One Adam (AdamW: decoupled) step of every contiguous tensor of the table, all of `dtype`,
// one block per chunk (Note [Multi-tensor launches]).
const char* launch_fused_adam(int32_t dtype, const FusedAdamTable& table,
                              const FusedAdamOptions& options, gpuStream_t stream);

// --- losses (loss.cu) ---
// nll_loss's positions (the target's shape): operand 0 out's offset (reduction none), 1
// self's offset of class 0, 2 the target's offset.
struct NllLossShape {
  StridedSpace<3> positions;
  int64_t classes = 0, class_stride = 0, weight_stride = 0, ignore_index = -100;
};
// reduce: one result (the sum, or the mean when `mean`), else one per position. weight:
// null or `classes` values of dtype. status: the launch's check slot; a target outside
// [0, classes) is flagged there.
const char* launch_nll_loss(int32_t dtype, int32_t target_dtype, const NllLossShape& shape,
                            bool reduce, bool mean, void* out, const void* self, const void* target,
                            const void* weight, int64_t* status, gpuStream_t stream);

// --- GEMM (linalg.cu; Note [Tiled GEMM] in gemm_math.h) ---
// A batch of c [m, n] = alpha * a [m, k] @ b [k, n] + beta * c, each operand's rows,
// columns and batch entries `*_stride` elements apart (any layout, no copies).
struct GemmShape {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  int64_t a_row_stride = 0, a_col_stride = 0, a_batch_stride = 0;
  int64_t b_row_stride = 0, b_col_stride = 0, b_batch_stride = 0;
  int64_t c_row_stride = 0, c_col_stride = 0, c_batch_stride = 0;
};
// Floating dtypes; beta 0 never reads c.
const char* launch_gemm(int32_t dtype, const GemmShape& shape, double alpha, double beta, void* c,
                        const void* a, const void* b, gpuStream_t stream);

// --- convolution (conv.cu; Note [Implicit-GEMM convolution] in conv_math.h) ---
// Packed NCHW operands of one floating dtype, shaped as g describes. conv2d's bias: null
// or g.out_channels values.
const char* launch_conv2d(int32_t dtype, const ConvGeometry& g, void* out, const void* input,
                          const void* weight, const void* bias, gpuStream_t stream);
const char* launch_conv2d_backward_input(int32_t dtype, const ConvGeometry& g, void* grad_input,
                                         const void* grad_output, const void* weight,
                                         gpuStream_t stream);
// The weight gradient's workspace in bytes (0: none; Note [Split weight gradient]).
size_t conv2d_backward_weight_workspace(int32_t dtype, const ConvGeometry& g);
const char* launch_conv2d_backward_weight(int32_t dtype, const ConvGeometry& g, void* grad_weight,
                                          const void* grad_output, const void* input,
                                          void* workspace, gpuStream_t stream);

// --- softmax (softmax.cu): `outer` rows of `length` elements at stride `inner` ---
const char* launch_softmax(bool log, int32_t dtype, int64_t outer, int64_t length, int64_t inner,
                           void* out, const void* in, gpuStream_t stream);

// --- shape (shape.cu; the other shape ops are copies: host_kernels/shape_plan.h) ---
// tril (lower) / triu: out = in where triangle_keeps(lower, i, rows, cols, diagonal) for
// element i in the row-major order of the space's shape ([..., rows, cols]), else zero
// bits; element_size 1, 2, 4 or 8 bytes (every dtype moves as bits).
const char* launch_triangle(bool lower, int32_t element_size, const StridedSpace<2>& space,
                            int64_t rows, int64_t cols, int64_t diagonal, void* out, const void* in,
                            gpuStream_t stream);

// --- creation (creation.cu): arange and linspace, spec.length elements `stride` apart ---
const char* launch_sequence(int32_t dtype, const SequenceSpec& spec, int64_t stride, void* out,
                            gpuStream_t stream);

// --- random (random.cu; the SDK's Philox stream layout, element i = row-major position) ---
enum class RandomOp : int32_t { Uniform, Normal, Bernoulli };
const char* launch_random(RandomOp op, int32_t dtype, uint64_t seed, uint64_t offset, double a,
                          double b, const StridedSpace<1>& space, void* out, gpuStream_t stream);
// Element i of out from in's element i and Philox block i (floating dtypes; space: out,
// in). BernoulliOf: 1 where the uniform double < in[i], whose values outside [0, 1] are
// flagged at `check` (the launch's check slot) with position i; Dropout: 0 where the
// uniform double < p, else in[i] * scale in double.
enum class RandomOfOp : int32_t { BernoulliOf, Dropout };
const char* launch_random_of(RandomOfOp op, int32_t dtype, uint64_t seed, uint64_t offset, double p,
                             double scale, const StridedSpace<2>& space, void* out, const void* in,
                             int64_t* check, gpuStream_t stream);
// Integers from Philox block i, any dtype: from + uniform_below(block, count) (random_'s;
// count 0: all 2^64 values), or with `permutation_keys` the block's 64 bits with the top
// bit flipped (randperm's keys: their int64 order is the bits' unsigned order).
const char* launch_random_integers(bool permutation_keys, int32_t dtype, uint64_t seed,
                                   uint64_t offset, int64_t from, uint64_t count,
                                   const StridedSpace<1>& space, void* out, gpuStream_t stream);

}  // namespace loom::gpu
