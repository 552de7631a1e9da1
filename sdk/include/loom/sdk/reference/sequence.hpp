// The values of arange and linspace as every backend computes them: the checks PyTorch
// makes, the length, and the position formula, so a device's factories give the CPU's
// numbers and refusals. A backend writes sequence_value(s, i) to element i of its 1-D out.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "loom/sdk/error.hpp"
#include "loom/sdk/kernel.hpp"

namespace loom::sdk {

struct Sequence {
  bool integral = false;  // arange over integer scalars: start_i + i * step_i, exactly
  int64_t start_i = 0, step_i = 0;
  double start = 0, step = 0, end = 0;
  int64_t length = 0;
  int64_t half = INT64_MAX;  // linspace: positions from `half` on count back from `end`
};

// arange(start, end, step): refuses a zero step, non-finite bounds and a step whose sign
// does not lead from start to end. `integral` needs an integer out as well.
inline Sequence arange_sequence(Scalar start, Scalar end, Scalar step, bool integer_out) {
  const double s = start.to_double(), e = end.to_double(), d = step.to_double();
  if (d == 0) throw Error("[arange] step must be nonzero");
  if (!std::isfinite(s) || !std::isfinite(e)) {
    throw Error("[arange] expected finite start and end, found " + std::to_string(s) + " and " +
                std::to_string(e));
  }
  if ((d > 0 && e < s) || (d < 0 && e > s)) {
    throw Error("[arange] upper bound and step have inconsistent signs: start " +
                std::to_string(s) + ", end " + std::to_string(e) + ", step " + std::to_string(d));
  }
  Sequence q;
  const bool integral_scalars =
      !start.is_floating_point() && !end.is_floating_point() && !step.is_floating_point();
  if (integral_scalars) {
    const int64_t span = end.i - start.i, st = step.i;
    q.length = span / st + (span % st != 0 ? 1 : 0);
  } else {
    q.length = static_cast<int64_t>(std::ceil((e - s) / d));
  }
  q.length = std::max<int64_t>(q.length, 0);
  q.integral = integral_scalars && integer_out;
  q.start_i = start.i;
  q.step_i = step.i;
  q.start = s;
  q.step = d;
  q.end = e;
  return q;
}

// linspace(start, end, steps): evenly spaced from both ends, so the last value is `end`.
inline Sequence linspace_sequence(Scalar start, Scalar end, int64_t steps) {
  if (steps < 0) {
    throw Error("[linspace] number of steps must be non-negative, found " + std::to_string(steps));
  }
  Sequence q;
  q.start = start.to_double();
  q.end = end.to_double();
  q.step = steps > 1 ? (q.end - q.start) / static_cast<double>(steps - 1) : 0.0;
  q.length = steps;
  q.half = steps == 1 ? INT64_MAX : steps / 2;
  return q;
}

// Element i of the sequence, as a double (an integral arange: sequence_integer).
inline double sequence_value(const Sequence& q, int64_t i) {
  return i < q.half ? q.start + q.step * static_cast<double>(i)
                    : q.end - q.step * static_cast<double>(q.length - 1 - i);
}
inline int64_t sequence_integer(const Sequence& q, int64_t i) {
  return q.start_i + i * q.step_i;
}

}  // namespace loom::sdk
