// C++ operators on tensors: arithmetic, comparisons and bitwise operators map to the
// generated op functions; a C++ number on either side becomes a wrapped 0-dim tensor
// that type promotion treats as a scalar (Note [Type promotion]).
#pragma once

#include "loom/factories.h"
#include "loom/ops/generated/ops.h"

namespace loom {

#define LOOM_BINARY_OPERATOR(SYMBOL, FUNCTION)                      \
  inline Tensor operator SYMBOL(const Tensor& a, const Tensor& b) { \
    return FUNCTION(a, b);                                          \
  }                                                                 \
  inline Tensor operator SYMBOL(const Tensor& a, const Scalar& b) { \
    return FUNCTION(a, wrapped_scalar(b));                          \
  }                                                                 \
  inline Tensor operator SYMBOL(const Scalar& a, const Tensor& b) { \
    return FUNCTION(wrapped_scalar(a), b);                          \
  }

LOOM_BINARY_OPERATOR(+, add)
LOOM_BINARY_OPERATOR(-, sub)
LOOM_BINARY_OPERATOR(*, mul)
LOOM_BINARY_OPERATOR(/, div)
LOOM_BINARY_OPERATOR(%, remainder)
LOOM_BINARY_OPERATOR(==, eq)
LOOM_BINARY_OPERATOR(!=, ne)
LOOM_BINARY_OPERATOR(<, lt)
LOOM_BINARY_OPERATOR(<=, le)
LOOM_BINARY_OPERATOR(>, gt)
LOOM_BINARY_OPERATOR(>=, ge)
LOOM_BINARY_OPERATOR(&, bitwise_and)
LOOM_BINARY_OPERATOR(|, bitwise_or)
LOOM_BINARY_OPERATOR(^, bitwise_xor)
#undef LOOM_BINARY_OPERATOR

#define LOOM_COMPOUND_OPERATOR(SYMBOL, FUNCTION)               \
  inline Tensor& operator SYMBOL(Tensor& a, const Tensor& b) { \
    FUNCTION(a, b);                                            \
    return a;                                                  \
  }                                                            \
  inline Tensor& operator SYMBOL(Tensor& a, const Scalar& b) { \
    FUNCTION(a, wrapped_scalar(b));                            \
    return a;                                                  \
  }

LOOM_COMPOUND_OPERATOR(+=, add_)
LOOM_COMPOUND_OPERATOR(-=, sub_)
LOOM_COMPOUND_OPERATOR(*=, mul_)
LOOM_COMPOUND_OPERATOR(/=, div_)
#undef LOOM_COMPOUND_OPERATOR

inline Tensor operator-(const Tensor& a) {
  return neg(a);
}

}  // namespace loom
