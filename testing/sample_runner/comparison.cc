// Output comparison (comparison.h, Note [Conformance tolerances]).
#include "comparison.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "absl/strings/str_join.h"
#include "loom/core/quantizer.h"

namespace loom::conform {
namespace {

// A complex tensor's values are its parts, real and imaginary in turn.
std::vector<double> values_of(const Tensor& t) {
  Tensor host = t.device().type == kCPU ? t : t.to("cpu");
  if (is_complex(host.dtype())) host = loom::view_as_real(host);
  // A quantized tensor's values are its integers (describe() shows its quantizer).
  if (is_quantized(host.dtype())) host = loom::int_repr(host);
  Tensor f64 = empty(host.sizes(), TensorOptions().dtype(ScalarType::Float64));
  copy_(f64, host);
  const double* p = static_cast<const double*>(f64.data_ptr());
  return std::vector<double>(p, p + f64.numel());
}

std::string number(double x) {
  std::ostringstream s;
  s.precision(9);
  s << x;
  return s.str();
}

// The multi-index of row-major element `flat` of `t`: "[1, 2]".
std::string index_of(const Tensor& t, int64_t flat) {
  std::vector<int64_t> index(t.sizes().size());
  for (size_t d = index.size(); d-- > 0;) {
    const int64_t size = t.sizes()[d];
    index[d] = size == 0 ? 0 : flat % size;
    flat = size == 0 ? 0 : flat / size;
  }
  return str_cat("[", absl::StrJoin(index, ", "), "]");
}

}  // namespace

Tolerance default_tolerance(ScalarType dtype) {
  switch (dtype) {
    case ScalarType::Float64:
    case ScalarType::ComplexDouble:
      return {1e-10, 1e-10};
    case ScalarType::Float32:
    case ScalarType::ComplexFloat:
      return {1e-5, 1e-5};
    case ScalarType::Float16:
      return {1e-3, 1e-3};
    case ScalarType::BFloat16:
      return {1e-2, 1.6e-2};
    default:
      return {0, 0};
  }
}

std::string describe(const Tensor& t) {
  std::string out = str_cat("[", absl::StrJoin(t.sizes(), ", "), "] ", scalar_type_name(t.dtype()));
  if (const Ref<Quantizer>& q = t.impl()->quantizer()) out += " (" + q->describe() + ")";
  return out;
}

Comparison compare_outputs(const std::vector<Tensor>& expected, const std::vector<Tensor>& like,
                           const std::vector<Tensor>& actual, double sample_tolerance,
                           Tolerance floor) {
  Comparison c;
  auto differ = [&](std::string message) {
    c.agrees = false;
    if (c.message.empty()) c.message = std::move(message);
  };
  if (actual.size() != like.size()) {
    differ(str_cat(actual.size(), " outputs, expected ", like.size()));
    return c;
  }
  double worst_excess = 0;
  for (size_t k = 0; k < like.size(); ++k) {
    if (describe(actual[k]) != describe(like[k])) {
      differ(str_cat("output ", k, " is ", describe(actual[k]), ", expected ", describe(like[k])));
      continue;
    }
    const std::vector<double> want = values_of(expected[k]), got = values_of(actual[k]);
    Tolerance tol = default_tolerance(actual[k].dtype());
    const bool exact = !is_floating_point(actual[k].dtype()) && !is_complex(actual[k].dtype());
    if (!exact) {
      tol = {std::max({tol.atol, floor.atol, sample_tolerance}),
             std::max({tol.rtol, floor.rtol, sample_tolerance})};
    }
    for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
      const double e = want[i], a = got[i];
      double excess = 0;  // how far past the tolerance, as a multiple of it
      if (std::isnan(e) || std::isnan(a)) {
        excess = std::isnan(e) && std::isnan(a) ? 0 : INFINITY;
      } else if (std::isinf(e) || std::isinf(a)) {
        excess = e == a ? 0 : INFINITY;
      } else {
        const double abs_error = std::abs(a - e);
        const double rel_error = e == 0 ? (abs_error == 0 ? 0 : INFINITY) : abs_error / std::abs(e);
        c.max_abs_error = std::max(c.max_abs_error, abs_error);
        if (std::isfinite(rel_error)) c.max_rel_error = std::max(c.max_rel_error, rel_error);
        const double allowed = tol.atol + tol.rtol * std::abs(e);
        excess = exact ? (a == e ? 0 : INFINITY) : abs_error <= allowed ? 0 : abs_error / allowed;
      }
      if (excess > worst_excess || (excess > 0 && c.worst_element.empty())) {
        worst_excess = excess;
        c.worst_element =
            str_cat("output ", k, " at ", index_of(actual[k], static_cast<int64_t>(i)), ": ",
                    number(a), ", expected ", number(e),
                    exact ? " (exact)" : str_cat(" (atol ", tol.atol, ", rtol ", tol.rtol, ")"));
      }
    }
  }
  if (worst_excess > 0) differ(c.worst_element);
  return c;
}

}  // namespace loom::conform
