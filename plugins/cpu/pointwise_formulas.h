// Element formulas that more than one CPU kernel family computes, so the per-tensor ops
// and the foreach ops over lists (kernels/foreach.cc) give the same bits by construction
// (Note [Foreach ops] in ops/decompositions/foreach.cc).
#pragma once

#include <cmath>

namespace loom::cpu {

// self + weight * (end - self), computed from the nearer end for weights >= 0.5 so
// lerp(a, b, 1) is exactly b.
template <typename A>
A lerp_value(A a, A b, A w) {
  return std::abs(w) < A(0.5) ? a + w * (b - a) : b - (b - a) * (A(1) - w);
}

// maximum (Max) or minimum of two floats in the acc type A, NaN propagating: a NaN in x
// picks x; a NaN in y fails the comparison and picks y.
template <bool Max, typename A, typename T>
T extremum_value(T x, T y) {
  const A a = static_cast<A>(x), b = static_cast<A>(y);
  const bool pick_x = Max ? (a > b || a != a) : (a < b || a != a);
  return pick_x ? x : y;
}

}  // namespace loom::cpu
