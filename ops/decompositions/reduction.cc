// Decompositions of the reductions: full sum/mean/prod/max/min/any/all, mean over dims,
// argmax/argmin, std, var_mean, norm, logsumexp, and the counts bincount and histc.
#include <algorithm>
#include <cmath>

#include <vector>

#include "decomposition.h"
#include "loom/core/type_promotion.h"

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

Tensor var_dim(const Tensor& self, const OptionalIntList& dim, bool unbiased, bool keepdim) {
  return loom::var(self, dim, std::optional<Scalar>(Scalar(unbiased ? int64_t{1} : int64_t{0})),
                   keepdim);
}

Tensor any_dim(const Tensor& self, int64_t dim, bool keepdim) {
  return loom::any(self, IntList{dim}, keepdim);
}

Tensor all_all(const Tensor& self) {
  return loom::all(self, std::nullopt, false);
}

// Counts (or weight sums) of each value of a 1-D non-negative integer tensor, through
// scatter_add into max(max + 1, minlength) bins. The result is int64 without weights,
// float32 for float32 weights and float64 for others, as PyTorch's.
Tensor bincount(const Tensor& self, const std::optional<Tensor>& weights, int64_t minlength) {
  constexpr const char* op = "loom::bincount";
  if (self.dim() != 1 || is_floating_point(self.dtype()) || self.dtype() == ScalarType::Bool) {
    fail(op, "expected a 1-D tensor of non-negative integers, found ", self.dim(), "-D ",
         scalar_type_name(self.dtype()));
  }
  if (minlength < 0) fail(op, "expected a non-negative minlength, found ", minlength);
  if (weights && (weights->dim() != 1 || weights->numel() != self.numel())) {
    fail(op, "expected 1-D weights of ", self.numel(), " elements like the input, found shape ",
         shape_to_string(weights->sizes()));
  }
  Tensor values = cast(self, ScalarType::Int64);
  int64_t bins = minlength;
  if (self.numel() > 0) {
    const int64_t lowest = static_cast<int64_t>(host_value(loom::amin(values)));
    if (lowest < 0) fail(op, "expected non-negative values, found ", lowest);
    bins = std::max(bins, static_cast<int64_t>(host_value(loom::amax(values))) + 1);
  }
  const ScalarType dtype = !weights                                  ? ScalarType::Int64
                           : weights->dtype() == ScalarType::Float32 ? ScalarType::Float32
                                                                     : ScalarType::Float64;
  Tensor counts = empty(std::vector<int64_t>{bins}, dtype, self.device());
  loom::fill_(counts, 0);
  if (self.numel() == 0) return counts;
  Tensor add = weights ? cast(*weights, dtype)
                       : empty(std::vector<int64_t>{self.numel()}, dtype, self.device());
  if (!weights) loom::fill_(add, 1);
  return loom::scatter_add_(counts, 0, values, add);
}

// A histogram of `bins` equal-width bins over [min, max] (the data's range when both are
// 0 or equal); values outside the range are left out, max falls in the last bin.
Tensor histc(const Tensor& self, int64_t bins, const Scalar& min_value, const Scalar& max_value) {
  constexpr const char* op = "loom::histc";
  if (!is_floating_point(self.dtype())) {
    fail(op, "expected a floating point input, found ", scalar_type_name(self.dtype()));
  }
  if (bins <= 0) fail(op, "expected a positive number of bins, found ", bins);
  double lo = min_value.to_double(), hi = max_value.to_double();
  if (lo > hi) fail(op, "expected max >= min, found min ", lo, " and max ", hi);
  if (lo == hi && self.numel() > 0) {
    lo = host_value(loom::amin(loom::reshape(self, {-1})));
    hi = host_value(loom::amax(loom::reshape(self, {-1})));
  }
  if (lo == hi) {
    lo -= 1;
    hi += 1;
  }
  if (!std::isfinite(lo) || !std::isfinite(hi)) {
    fail(op, "expected a finite range, found [", lo, ", ", hi, "]");
  }
  // Every element gets a bin; those outside [lo, hi] (NaN included) add 0 to bin 0.
  Tensor x = cast(loom::reshape(self, {-1}), ScalarType::Float64);
  Tensor in_range =
      loom::logical_and(loom::ge(x, wrapped_number(lo)), loom::le(x, wrapped_number(hi)));
  Tensor inside = loom::where(in_range, x, wrapped_number(lo));
  Tensor position = loom::floor(loom::mul(loom::sub(inside, wrapped_number(lo)),
                                          wrapped_number(static_cast<double>(bins) / (hi - lo))));
  Tensor bin = cast(loom::clamp(position, Scalar(0.0), Scalar(static_cast<double>(bins - 1))),
                    ScalarType::Int64);
  Tensor counts = empty(std::vector<int64_t>{bins}, self.dtype(), self.device());
  loom::fill_(counts, 0);
  return loom::scatter_add_(counts, 0, bin, cast(in_range, self.dtype()));
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
    {"loom::bincount", decomposition<&bincount>()},
    {"loom::histc", decomposition<&histc>()},
    {"loom::norm.Scalar", decomposition<&norm_all>()},
    {"loom::norm.ScalarOpt_dim", decomposition<&norm_dim>()},
    {"loom::logsumexp", decomposition<&logsumexp>()},
    {"loom::any", decomposition<&any_all>()},
    {"loom::any.dim", decomposition<&any_dim>()},
    {"loom::var.dim", decomposition<&var_dim>()},
    {"loom::all", decomposition<&all_all>()},
};

}  // namespace

std::span<const DecompositionEntry> reduction_decompositions() {
  return kDecompositions;
}

}  // namespace loom::ops
