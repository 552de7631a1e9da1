// Samples of the reduction family: the kernels (sum.dim_IntList, prod.dim_int, amax,
// amin, max.dim, min.dim, var, any.dims, all.dims) and the decompositions (sum, mean,
// prod, max, min, argmax, argmin, std, var_mean, norm, logsumexp, any, all; Note [Op
// samples] in loom/ops/samples.h).
#include "loom/ops/samples.h"

namespace loom::ops {
namespace {

using namespace sample_helpers;

// Whole-tensor reductions: a matrix, 0-dim, float64, int64 (small values, so products
// stay exact) and, when `half`, bfloat16.
void whole(std::vector<OpSample>& out, const char* op, Fill fill, bool ints, bool half) {
  out.push_back({op, {T({3, 4}, kF32, fill)}});
  out.push_back({op, {T({}, kF32, fill)}});
  out.push_back({op, {T({2, 3, 2}, kF64, fill)}});
  if (ints) out.push_back({op, {T({2, 3}, kI64, Fill::SmallInt)}});
  if (half) out.push_back(OpSample{op, {T({3, 4}, kBF16, fill)}}.tol(2e-2));
}

std::vector<OpSample> make() {
  std::vector<OpSample> s = {
      {"loom::sum.dim_IntList", {T({3, 4}), L({1})}},
      {"loom::sum.dim_IntList", {T({2, 3, 4}), L({0, 2}), B(true)}},
      {"loom::sum.dim_IntList", {T({2, 3}, kI64), none()}, {{"dtype", kF64}}},
      {"loom::sum.dim_IntList", {T({2, 3}, kI32), L({-1})}, {{"keepdim", B(true)}}},
      {"loom::sum.dim_IntList", {T({}), L({0})}},
      OpSample{"loom::sum.dim_IntList", {T({2, 3}), L({})}}.with_note("dim=[]: every dim"),
      {"loom::sum.dim_IntList", {T({}), none(), B(true)}},
      OpSample{"loom::sum.dim_IntList", {T({0, 3}), L({0})}}.with_note("empty reduction: zeros"),
      {"loom::sum.dim_IntList", {T({2, 0}, kI64), L({0})}},
      {"loom::sum.dim_IntList", {T({4, 2}, kBool, Fill::Bool), L({0})}},
      OpSample{"loom::sum.dim_IntList", {T({3, 4}, kBF16), L({1})}}.tol(2e-2),
      {"loom::prod.dim_int", {T({3, 4}), I(1)}},
      {"loom::prod.dim_int", {T({2, 3, 2}, kI64, Fill::SmallInt), I(0), B(true)}},
      {"loom::prod.dim_int", {T({2, 3}), I(-1)}, {{"dtype", kF64}}},
      {"loom::prod.dim_int", {T({}), I(0)}},
      OpSample{"loom::prod.dim_int", {T({3, 0}), I(1)}}.with_note("empty reduction: ones"),
      {"loom::amax", {T({3, 4})}},
      {"loom::amax", {T({2, 3, 4}), L({0, 2}), B(true)}},
      {"loom::amax", {T({2, 3}, kI64), L({1})}},
      {"loom::amax", {T({})}},
      {"loom::amax", {T({0, 3}), L({1})}},
      {"loom::amin", {T({3, 4})}},
      {"loom::amin", {T({2, 3, 4}, kF64), L({1})}, {{"keepdim", B(true)}}},
      {"loom::amin", {T({2, 3}, kI32), L({0})}},
      {"loom::amin", {T({4}, kBool, Fill::Bool), L({0})}},
      {"loom::max.dim", {T({3, 4}, kF32, Fill::Distinct), I(1)}},
      {"loom::max.dim", {T({2, 3, 4}, kF64, Fill::Distinct), I(0), B(true)}},
      {"loom::max.dim", {T({3, 4}, kI64, Fill::Distinct), I(-1)}},
      {"loom::max.dim", {T({}, kF32), I(0)}},
      {"loom::min.dim", {T({3, 4}, kF32, Fill::Distinct), I(0)}},
      {"loom::min.dim", {T({2, 3, 4}, kI32, Fill::Distinct), I(2)}, {{"keepdim", B(true)}}},
      {"loom::min.dim", {T({}, kF64), I(-1)}},
      {"loom::var.correction", {T({3, 4})}},
      {"loom::var.correction", {T({3, 4}), L({1})}, {{"correction", I(0)}}},
      {"loom::var.correction", {T({2, 3, 4}, kF64), L({0, 2})}, {{"keepdim", B(true)}}},
      {"loom::var.correction", {T({5}), none()}, {{"correction", D(2.0)}}},
      OpSample{"loom::var.correction", {T({2, 3}), L({0})}, {{"correction", I(3)}}}.with_note(
          "correction above the count: negative divisor"),
      {"loom::var.correction", {T({}), none()}},
      {"loom::any.dims", {T({3, 4}, kBool, Fill::Bool), L({1})}},
      {"loom::any.dims", {T({2, 3, 4}, kF32, Fill::SmallInt), none(), B(true)}},
      {"loom::any.dims", {T({}, kI64, Fill::Bool), L({0})}},
      {"loom::all.dims", {T({3, 4}, kBool, Fill::Bool), L({0})}},
      {"loom::all.dims", {T({2, 3}, kI32, Fill::SmallInt), L({-1}), B(true)}},
      {"loom::all.dims", {T({}, kF32, Fill::Bool), none()}},
      {"loom::mean", {T({3, 4})}},
      {"loom::mean", {T({}, kF64)}},
      {"loom::mean", {T({2, 3}, kI64)}, {{"dtype", kF32}}},
      OpSample{"loom::mean", {T({3, 4}, kBF16)}}.tol(2e-2),
      {"loom::mean.dim", {T({3, 4}), L({1})}},
      {"loom::mean.dim", {T({2, 3, 4}, kF64), L({0, 2}), B(true)}},
      {"loom::mean.dim", {T({2, 3}, kI32), L({0})}, {{"dtype", kF64}}},
      {"loom::mean.dim", {T({}), none()}},
      OpSample{"loom::mean.dim", {T({0, 3}), L({0})}}.with_note("mean of nothing: nan"),
      {"loom::sum", {T({2, 3}, kI32)}, {{"dtype", kF64}}},
      {"loom::sum", {T({3, 2}, kBool, Fill::Bool)}},
      {"loom::prod", {T({2, 3})}, {{"dtype", kF64}}},
      {"loom::argmax", {T({3, 4}, kF32, Fill::Distinct)}},
      {"loom::argmax", {T({3, 4}, kF32, Fill::Distinct), I(1)}},
      {"loom::argmax", {T({2, 3, 4}, kI64, Fill::Distinct), I(0), B(true)}},
      {"loom::argmax", {T({}, kF32)}},
      {"loom::argmin", {T({3, 4}, kF64, Fill::Distinct)}},
      {"loom::argmin", {T({3, 4}, kF32, Fill::Distinct)}, {{"dim", I(-1)}, {"keepdim", B(true)}}},
      {"loom::argmin", {T({2, 3}, kI32, Fill::Distinct), I(0)}},
      {"loom::std.correction", {T({3, 4})}},
      {"loom::std.correction", {T({3, 4}, kF64), L({0})}, {{"correction", I(0)}}},
      {"loom::std.correction", {T({2, 3, 4}), L({1, 2})}, {{"keepdim", B(true)}}},
      {"loom::var_mean.correction", {T({3, 4})}},
      {"loom::var_mean.correction", {T({3, 4}, kF64), L({1})}, {{"correction", I(0)}}},
      {"loom::var_mean.correction", {T({2, 3, 4}), L({0})}, {{"keepdim", B(true)}}},
      {"loom::var_mean.correction", {T({2, 3, 4}), L({0, 2})}, {{"correction", D(2.0)}}},
      {"loom::norm.Scalar", {T({3, 4})}},
      {"loom::norm.Scalar", {T({3, 4}, kF64), I(1)}},
      {"loom::norm.Scalar", {T({}), D(3.0)}},
      {"loom::norm.ScalarOpt_dim", {T({3, 4}), I(2), L({1})}},
      {"loom::norm.ScalarOpt_dim", {T({2, 3, 4}, kF64), none(), L({0, 2}), B(true)}},
      {"loom::norm.ScalarOpt_dim", {T({3, 4}), D(1.0), L({0})}, {{"keepdim", B(true)}}},
      {"loom::logsumexp", {T({3, 4}), L({1})}},
      {"loom::logsumexp", {T({2, 3, 4}, kF64), L({0, 2}), B(true)}},
      {"loom::logsumexp", {T({}), L({0})}},
      OpSample{"loom::bincount", {Idx({6}, 4)}}.no_meta(
          "the output length is the largest value + 1"),
      OpSample{"loom::bincount", {Idx({5}, 3, kI32), T({5}, kF64)}, {{"minlength", I(6)}}}.no_meta(
          "the output length depends on the values"),
      OpSample{"loom::bincount", {T({0}, kI64)}, {{"minlength", I(2)}}}.with_note(
          "empty: minlength zeros"),
      {"loom::histc", {T({3, 4}), I(5), D(-1.0), D(1.0)}},
      OpSample{"loom::histc", {T({10}, kF64)}, {{"bins", I(4)}}}.no_meta(
          "the range is the data's (min = max = 0)"),
      {"loom::var.dim", {T({3, 4}), L({1})}},
      {"loom::var.dim", {T({2, 3, 2}, kF64), L({0, 2}), B(false), B(true)}},
      {"loom::var.dim", {T({4, 3}), none()}},
      {"loom::any.dim", {T({3, 4}, kBool, Fill::Bool), I(1)}},
      {"loom::any.dim", {T({2, 3}, kI64, Fill::Bool), I(0), B(true)}},
  };
  whole(s, "loom::sum", Fill::Normal, true, true);
  whole(s, "loom::prod", Fill::Normal, true, false);
  whole(s, "loom::max", Fill::Normal, true, true);
  whole(s, "loom::min", Fill::Normal, true, false);
  whole(s, "loom::any", Fill::SmallInt, true, false);
  whole(s, "loom::all", Fill::SmallInt, true, false);
  s.push_back({"loom::any", {T({3, 2}, kBool, Fill::Bool)}});
  s.push_back({"loom::all", {T({3, 2}, kBool, Fill::Bool)}});
  // Large enough for the vectorised and threaded paths, with tails.
  s.push_back({"loom::sum.dim_IntList", {T({129, 257}), L({1})}});
  s.push_back({"loom::sum.dim_IntList", {T({129, 257}), L({0})}});
  s.push_back({"loom::amax", {T({129, 257}), L({1})}});
  s.push_back({"loom::sum", {T({129, 257})}});
  s.push_back(
      OpSample{"loom::sum.dim_IntList", {T({2, 3}), L({2})}}.raises("dim 2 is out of range"));
  return s;
}

}  // namespace

std::span<const OpSample> reduction_samples() {
  static const std::vector<OpSample> samples = make();
  return samples;
}

}  // namespace loom::ops
