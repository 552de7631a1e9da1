// The element-wise reductions of the collectives: inout[i] = op(inout[i], in[i]) for each
// element type and reduce op. Half types reduce in float32 and round once per step, as
// gloo and NCCL do; bool sums and maxes are logical or, products and mins logical and.
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "engine.h"
#include "loom/sdk/float16.hpp"

namespace loom::distributed {
namespace {

// inout and in never overlap (the callers copy first), so the loop vectorises; the file
// is built with -O3 (plugins/distributed/CMakeLists.txt): a large all-reduce spends much
// of its time here.
template <typename T, typename F>
void combine(void* inout, const void* in, size_t count, F f) {
  T* __restrict a = static_cast<T*>(inout);
  const T* __restrict b = static_cast<const T*>(in);
  for (size_t i = 0; i < count; ++i) a[i] = f(a[i], b[i]);
}

// Integers wrap on overflow, as in PyTorch (computed unsigned: signed overflow is undefined).
template <typename T>
using Arithmetic = std::conditional_t<std::is_integral_v<T>, uint64_t, T>;

template <typename T>
void reduce_typed(void* inout, const void* in, size_t count, ReduceOp op) {
  using A = Arithmetic<T>;
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return combine<T>(inout, in, count, [](T x, T y) { return static_cast<T>(A(x) + A(y)); });
    case ReduceOp::kProduct:
      return combine<T>(inout, in, count, [](T x, T y) { return static_cast<T>(A(x) * A(y)); });
    case ReduceOp::kMin:
      return combine<T>(inout, in, count, [](T x, T y) { return y < x || y != y ? y : x; });
    case ReduceOp::kMax:
      return combine<T>(inout, in, count, [](T x, T y) { return y > x || y != y ? y : x; });
  }
}

// float16 and bfloat16 through float32, one rounding per combination.
template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void reduce_half(void* inout, const void* in, size_t count, ReduceOp op) {
  auto with = [&](auto f) {
    combine<uint16_t>(inout, in, count,
                      [&](uint16_t x, uint16_t y) { return FromFloat(f(ToFloat(x), ToFloat(y))); });
  };
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return with([](float x, float y) { return x + y; });
    case ReduceOp::kProduct:
      return with([](float x, float y) { return x * y; });
    case ReduceOp::kMin:
      return with([](float x, float y) { return y < x || y != y ? y : x; });
    case ReduceOp::kMax:
      return with([](float x, float y) { return y > x || y != y ? y : x; });
  }
}

void reduce_bool(void* inout, const void* in, size_t count, ReduceOp op) {
  const bool any = op == ReduceOp::kSum || op == ReduceOp::kMax || op == ReduceOp::kAvg;
  combine<uint8_t>(inout, in, count, [any](uint8_t x, uint8_t y) -> uint8_t {
    return any ? (x != 0 || y != 0) : (x != 0 && y != 0);
  });
}

}  // namespace

size_t element_size(ElementType type) {
  switch (type) {
    case ElementType::kFloat64:
    case ElementType::kInt64:
      return 8;
    case ElementType::kFloat32:
    case ElementType::kInt32:
      return 4;
    case ElementType::kFloat16:
    case ElementType::kBFloat16:
    case ElementType::kInt16:
      return 2;
    case ElementType::kInt8:
    case ElementType::kUInt8:
    case ElementType::kBool:
      return 1;
  }
  throw std::logic_error("[distributed] unknown element type");
}

void reduce_into(void* inout, const void* in, size_t count, ElementType type, ReduceOp op) {
  switch (type) {
    case ElementType::kFloat32:
      return reduce_typed<float>(inout, in, count, op);
    case ElementType::kFloat64:
      return reduce_typed<double>(inout, in, count, op);
    case ElementType::kFloat16:
      return reduce_half<&sdk::half_bits_to_float, &sdk::float_to_half_bits>(inout, in, count, op);
    case ElementType::kBFloat16:
      return reduce_half<&sdk::bfloat16_bits_to_float, &sdk::float_to_bfloat16_bits>(inout, in,
                                                                                     count, op);
    case ElementType::kInt8:
      return reduce_typed<int8_t>(inout, in, count, op);
    case ElementType::kUInt8:
      return reduce_typed<uint8_t>(inout, in, count, op);
    case ElementType::kInt16:
      return reduce_typed<int16_t>(inout, in, count, op);
    case ElementType::kInt32:
      return reduce_typed<int32_t>(inout, in, count, op);
    case ElementType::kInt64:
      return reduce_typed<int64_t>(inout, in, count, op);
    case ElementType::kBool:
      return reduce_bool(inout, in, count, op);
  }
}

}  // namespace loom::distributed
