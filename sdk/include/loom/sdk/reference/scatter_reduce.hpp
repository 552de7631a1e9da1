// scatter_reduce's reductions for every backend (Note [scatter_reduce]): the reduce names,
// how two values combine, and how a mean ends.
//
// Note [scatter_reduce]
// ~~~~~~~~~~~~~~~~~~~~~
// scatter_reduce.two(self, dim, index, src, reduce, include_self) starts from a copy of
// self and reduces into out[... index[i] ...] (the index in `dim`, i's other coordinates)
// every src[i], as scatter_add does with "sum". reduce is "sum", "prod", "mean", "amax"
// or "amin", as in PyTorch. With include_self=False, self's value at a position that some
// src element reaches takes no part: the first value to arrive replaces it. "mean"
// divides each reached position by its count (plus one for self when included); integer
// results divide with floor, as PyTorch's do. "amax" and "amin" propagate NaN. Positions
// no src element reaches keep self's value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "loom/sdk/error.hpp"
#include "loom/sdk/hd.hpp"

namespace loom::sdk {

enum class ScatterReduce : int32_t { Sum, Prod, Mean, Max, Min };

// The reduction `reduce` names; throws naming `op` for any other name.
inline ScatterReduce scatter_reduce_of(const char* op, std::string_view reduce) {
  if (reduce == "sum") return ScatterReduce::Sum;
  if (reduce == "prod") return ScatterReduce::Prod;
  if (reduce == "mean") return ScatterReduce::Mean;
  if (reduce == "amax") return ScatterReduce::Max;
  if (reduce == "amin") return ScatterReduce::Min;
  throw Error(std::string("[") + op + "] expected reduce 'sum', 'prod', 'mean', 'amax' or " +
              "'amin', found '" + std::string(reduce) + "'");
}

// a combined with b, in the accumulation type A (mean sums; max and min keep a NaN).
template <typename A>
LOOM_SDK_HD constexpr A scatter_combine(ScatterReduce kind, A a, A b) {
  switch (kind) {
    case ScatterReduce::Prod:
      return a * b;
    case ScatterReduce::Max:
      return (b != b || b > a) ? b : a;  // b != b: b is NaN
    case ScatterReduce::Min:
      return (b != b || b < a) ? b : a;
    default:
      return a + b;
  }
}

// A mean's last step: the sum over `count` values (count >= 1); floor division for
// integers.
template <typename A>
LOOM_SDK_HD A scatter_mean(A sum, int64_t count) {
  if constexpr (std::is_integral_v<A>) {
    const A c = static_cast<A>(count);
    A q = sum / c;
    if ((sum % c != 0) && ((sum < 0) != (c < 0))) --q;
    return q;
  } else {
    return sum / static_cast<A>(count);
  }
}

}  // namespace loom::sdk
