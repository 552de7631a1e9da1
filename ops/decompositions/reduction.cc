// Decompositions of the reductions: full sum/mean/prod/max/min/any/all, mean over dims,
// argmax/argmin, std, var_mean, norm, logsumexp.
#include <cmath>

#include "decomposition.h"

namespace loom::ops {
namespace {

Tensor sum_all(const Tensor& self, std::optional<ScalarType> dtype) {
  return loom::sum(self, std::nullopt, false, dtype);
}

Tensor mean_dim(const Tensor& self, const OptionalIntList& dim, bool keepdim,
                std::optional<ScalarType> dtype) {
  ScalarType result = dtype.value_or(self.dtype());
  if (!is_floating_point(result)) {
    fail("loom::mean", "expected a floating point input or dtype, found ",
         scalar_type_name(result));
  }
  Tensor total = loom::sum(self, dim, keepdim, result);
  int64_t count = reduced_count(self, dim, "loom::mean.dim");
  return loom::div_(total, wrapped_number(static_cast<double>(count)));
}

Tensor mean_all(const Tensor& self, std::optional<ScalarType> dtype) {
  return mean_dim(self, std::nullopt, false, dtype);
}

Tensor flattened(const Tensor& self) {
  return loom::contiguous(self).view({-1});
}

Tensor prod_all(const Tensor& self, std::optional<ScalarType> dtype) {
  return loom::prod(flattened(self), 0, false, dtype);
}

void require_elements(const Tensor& self, const char* op) {
  if (self.numel() == 0) {
    fail(op, "expected a non-empty input (the reduction has no identity), found 0 elements");
  }
}

Tensor max_all(const Tensor& self) {
  require_elements(self, "loom::max");
  return loom::amax(self, {}, false);
}

Tensor min_all(const Tensor& self) {
  require_elements(self, "loom::min");
  return loom::amin(self, {}, false);
}

// argmax / argmin: the indices of max.dim / min.dim; over the flattened input without dim.
template <bool IsMax>
Tensor arg_extremum(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  const char* op = IsMax ? "loom::argmax" : "loom::argmin";
  auto indices = [&](const Tensor& t, int64_t d, bool keep) {
    return std::get<1>(IsMax ? loom::max(t, d, keep) : loom::min(t, d, keep));
  };
  if (dim) return indices(self, *dim, keepdim);
  require_elements(self, op);
  Tensor index = indices(flattened(self), 0, false);
  if (!keepdim) return index;
  DimVector ones(static_cast<size_t>(self.dim()), 1);
  return index.view(ones);
}

// The variance of values near float32's limit overflows float32 where their deviation
// does not: std(f32 [1e30, -1e30, 0]) is 1e30 but its variance 1e60. PyTorch takes the
// square root in its wider accumulator; here a narrower float input's variance is
// computed in float64 and rooted there, then cast back (a copy, for a correct result).
Tensor std_dev(const Tensor& self, const OptionalIntList& dim,
               const std::optional<Scalar>& correction, bool keepdim) {
  if (self.dtype() == ScalarType::Float64 || !is_floating_point(self.dtype())) {
    return loom::sqrt_(loom::var(self, dim, correction, keepdim));
  }
  Tensor wide = loom::sqrt_(loom::var(cast(self, ScalarType::Float64), dim, correction, keepdim));
  return cast(wide, self.dtype());
}

std::tuple<Tensor, Tensor> var_mean(const Tensor& self, const OptionalIntList& dim,
                                    const std::optional<Scalar>& correction, bool keepdim) {
  Tensor v = loom::var(self, dim, correction, keepdim);
  return {v, loom::mean(self, dim, keepdim)};
}

Tensor norm_dim(const Tensor& self, const std::optional<Scalar>& p_arg, const IntList& dim,
                bool keepdim) {
  if (!is_floating_point(self.dtype())) {
    fail("loom::norm", "expected a floating point input, found ", scalar_type_name(self.dtype()));
  }
  double p = p_arg ? p_arg->to_double() : 2.0;
  Tensor x = loom::abs(self);
  if (p == 2.0) return loom::sqrt_(loom::sum(loom::mul(x, x), dim, keepdim));
  if (p == 1.0) return loom::sum(x, dim, keepdim);
  if (std::isinf(p)) return p > 0 ? loom::amax(x, dim, keepdim) : loom::amin(x, dim, keepdim);
  if (p == 0.0) return loom::sum(cast(loom::ne(x, wrapped_number(0)), self.dtype()), dim, keepdim);
  Tensor powered = loom::sum(loom::pow(x, wrapped_number(p)), dim, keepdim);
  return loom::pow(powered, wrapped_number(1.0 / p));
}

Tensor norm_all(const Tensor& self, const Scalar& p) {
  return norm_dim(self, p, {}, false);
}

// log(sum(exp(x - m))) + m with m the max (infinite maxima replaced by 0 so that all -inf
// rows give -inf and +inf rows +inf, not NaN).
Tensor logsumexp(const Tensor& self, const IntList& dim, bool keepdim) {
  Tensor x = is_floating_point(self.dtype()) ? self : cast(self, ScalarType::Float32);
  // Nothing to shift by in an empty input: the sum of no exponentials is 0, its log -inf
  // (PyTorch: logsumexp(torch.empty(0, 3), 0) is [-inf, -inf, -inf]).
  if (x.numel() == 0) return loom::log(loom::sum(loom::exp(x), dim, keepdim));
  Tensor m = loom::nan_to_num(loom::amax(x, dim, true), 0.0, 0.0, 0.0);
  Tensor total = loom::sum(loom::exp(loom::sub(x, m)), dim, keepdim);
  Tensor shift = keepdim ? m : loom::amax(m, dim, false);
  return loom::add(loom::log(total), shift);
}

Tensor any_all(const Tensor& self) {
  return loom::any(self, std::nullopt, false);
}

Tensor all_all(const Tensor& self) {
  return loom::all(self, std::nullopt, false);
}

constexpr DecompositionEntry kDecompositions[] = {
    {"loom::sum", decomposition<&sum_all>()},
    {"loom::mean", decomposition<&mean_all>()},
    {"loom::mean.dim", decomposition<&mean_dim>()},
    {"loom::prod", decomposition<&prod_all>()},
    {"loom::max", decomposition<&max_all>()},
    {"loom::min", decomposition<&min_all>()},
    {"loom::argmax", decomposition<&arg_extremum<true>>()},
    {"loom::argmin", decomposition<&arg_extremum<false>>()},
    {"loom::std.correction", decomposition<&std_dev>()},
    {"loom::var_mean.correction", decomposition<&var_mean>()},
    {"loom::norm.Scalar", decomposition<&norm_all>()},
    {"loom::norm.ScalarOpt_dim", decomposition<&norm_dim>()},
    {"loom::logsumexp", decomposition<&logsumexp>()},
    {"loom::any", decomposition<&any_all>()},
    {"loom::all", decomposition<&all_all>()},
};

}  // namespace

std::span<const DecompositionEntry> reduction_decompositions() {
  return kDecompositions;
}

}  // namespace loom::ops
