// The output sizes of the creation ops that write into an `out` (arange, linspace):
// computed once here, for the frontend's factories that allocate `out` and for the meta
// kernels that check it, with the errors the CPU kernels give.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "loom/core/error.h"
#include "loom/core/scalar.h"

namespace loom::ops {

// Whether arange computes in integers (no floating bound or step).
inline bool arange_is_integral(const Scalar& start, const Scalar& end, const Scalar& step) {
  return !start.is_floating_point() && !end.is_floating_point() && !step.is_floating_point();
}

// The number of values arange(start, end, step) has; throws "[arange] ..." for a zero
// step or a non-finite bound. Bounds and a step of opposite signs give 0 here; the
// kernels refuse them (check_arange_signs) with the op's own name.
inline int64_t arange_length(const Scalar& start, const Scalar& end, const Scalar& step) {
  const double s = start.to_double(), e = end.to_double(), d = step.to_double();
  LOOM_CHECK(d != 0, "arange", "step must be nonzero");
  LOOM_CHECK(std::isfinite(s) && std::isfinite(e), "arange",
             "expected finite start and end, found ", s, " and ", e);
  if (arange_is_integral(start, end, step)) {
    const int64_t span = end.to_int() - start.to_int(), st = step.to_int();
    return std::max<int64_t>(span / st + (span % st != 0 ? 1 : 0), 0);
  }
  return std::max<int64_t>(static_cast<int64_t>(std::ceil((e - s) / d)), 0);
}

// Throws "[op] upper bound and step have inconsistent signs ..." as the CPU kernel does.
inline void check_arange_signs(const char* op, const Scalar& start, const Scalar& end,
                               const Scalar& step) {
  const double s = start.to_double(), e = end.to_double(), d = step.to_double();
  LOOM_CHECK(!((d > 0 && e < s) || (d < 0 && e > s)), op,
             "upper bound and step have inconsistent signs: start ", s, ", end ", e, ", step ", d);
}

// Throws "[linspace] ..." for a negative number of steps.
inline void check_linspace_steps(int64_t steps) {
  LOOM_CHECK(steps >= 0, "linspace", "number of steps must be non-negative, found ", steps);
}

}  // namespace loom::ops
