// What the host side of the GPU plugins asks of the device code: one launcher per kernel
// family, taking plain pointers, dtypes, StridedSpaces and a stream. Compiled by g++ on
// the host side and by nvcc / hipcc in the .cu files, so nothing here names the SDK.
// Each launcher returns nullptr when its kernel was queued, or a static message (an
// unsupported dtype, or the runtime's error string after the launch).
#pragma once

#include <cstdint>

#include "../runtime/gpu_runtime.h"
#include "index_math.h"

namespace loom::gpu {

// --- elementwise (elementwise.cu): out and inputs have one shape, any strides ---

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
  // with parameters a (and b)
  LeakyRelu,  // a: negative slope
  Clamp,      // a: min, b: max (NaN bound: not applied)
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

bool is_predicate(UnaryOp op);    // out is bool
bool is_comparison(BinaryOp op);  // out is bool

// space: operand 0 is out, operand 1 the input. a, b: the op's parameters.
const char* launch_unary(UnaryOp op, int32_t dtype, double a, double b,
                         const StridedSpace<2>& space, void* out, const void* in,
                         gpuStream_t stream);
// dtype: the inputs' (compute) dtype; out is bool for comparisons, else dtype.
const char* launch_binary(BinaryOp op, int32_t dtype, double alpha, const StridedSpace<3>& space,
                          void* out, const void* self, const void* other, gpuStream_t stream);
// out = condition ? self : other (condition bool, self/other/out of dtype).
const char* launch_where(int32_t dtype, const StridedSpace<4>& space, void* out,
                         const void* condition, const void* self, const void* other,
                         gpuStream_t stream);
// out (out_dtype) = src (src_dtype) converted.
const char* launch_copy(int32_t out_dtype, int32_t src_dtype, const StridedSpace<2>& space,
                        void* out, const void* src, gpuStream_t stream);
// Every element of out = value (given as a double and as an int64, whichever is exact).
const char* launch_fill(int32_t dtype, bool value_is_floating, double value_d, int64_t value_i,
                        const StridedSpace<1>& space, void* out, gpuStream_t stream);

// --- reductions (reduction.cu; Note [Reduction layout]) ---

enum class ReduceOp : int32_t { Sum, Prod, Max, Min, Any, All };

// rows: operand 0 is out (one element per row), operand 1 the input's row start.
// row: operand 0 unused, operand 1 the input's offset within a row.
const char* launch_reduce(ReduceOp op, int32_t in_dtype, int32_t out_dtype,
                          const StridedSpace<2>& rows, const StridedSpace<2>& row, void* out,
                          const void* in, gpuStream_t stream);

// --- softmax (softmax.cu): `outer` rows of `length` elements at stride `inner` ---
const char* launch_softmax(bool log, int32_t dtype, int64_t outer, int64_t length, int64_t inner,
                           void* out, const void* in, gpuStream_t stream);

// --- random (random.cu; the SDK's Philox stream layout, element i = row-major position) ---
enum class RandomOp : int32_t { Uniform, Normal, Bernoulli };
const char* launch_random(RandomOp op, int32_t dtype, uint64_t seed, uint64_t offset, double a,
                          double b, const StridedSpace<1>& space, void* out, gpuStream_t stream);

}  // namespace loom::gpu
