// Comparing a backend's outputs with the reference's (Note [Conformance tolerances]):
// shapes and dtypes exactly, integer and bool values exactly, floating-point values
// within per-dtype tolerances, NaN equal to NaN and infinities equal to themselves.
#pragma once

#include <string>
#include <vector>

#include "loom/loom.h"

namespace loom::conform {

// Note [Conformance tolerances]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The reference computes in float64 where the sample's dtype is lower, so a result is
// compared with the exact-as-possible value, rounded once (a result is held to the
// tolerance of the least precise floating dtype among it and the sample's inputs): |actual -
// expected| <= atol + rtol * |expected|, with (atol, rtol) by the result's dtype: float64 1e-10
// (the reference is then the CPU plugin in the same dtype), float32 1e-5, float16 1e-3, bfloat16
// (1e-2, 1.6e-2): the last two are a few units in the last place of each format, float32 leaves
// room for sums and transcendental functions whose float32 evaluation rounds on every step. A
// sample's own tolerance (OpSample::tolerance, for ops whose sums oneDNN blocks differently per
// layout) raises both to it. Integer and bool results compare exactly.
struct Tolerance {
  double atol = 0;
  double rtol = 0;
};
Tolerance default_tolerance(ScalarType dtype);

// What compare() found; `agrees` with an empty message when nothing differs.
struct Comparison {
  bool agrees = true;
  std::string message;  // the first difference, in words
  double max_abs_error = 0;
  double max_rel_error = 0;
  std::string worst_element;  // "output 0 at [1, 2]: 0.25, expected 0.5 (atol 1e-05, rtol 1e-05)"
};

// `actual` against `expected` (values) and `like` (shapes and dtypes: the reference in
// the sample's own dtypes; `expected` may hold float64 values of a lower dtype).
// Tensors on any device; read through a copy to the cpu. `floor` is the least tolerance
// (a float64 result computed from float32 inputs is as precise as those).
Comparison compare_outputs(const std::vector<Tensor>& expected, const std::vector<Tensor>& like,
                           const std::vector<Tensor>& actual, double sample_tolerance,
                           Tolerance floor = {});

// "[2, 3] float32"
std::string describe(const Tensor& t);

}  // namespace loom::conform
