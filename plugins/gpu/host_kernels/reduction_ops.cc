// Reductions on GPU tensors (sum, prod, amax, amin, any, all; max.dim and min.dim with
// their indices; var by passes of those kernels, Note [Variance by passes]): the reduced dims
// become a row StridedSpace, the kept dims a rows space paired with out's strides (Note [Reduction
// layout]). Out has the rule's dtype; a sum or prod into a dtype the kernel does not pair with the
// input's (sum(dtype=...)) casts the input first.
#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "../kernels/launch.h"
#include "op_support.h"

namespace loom::gpu {
namespace {

using sdk::DispatchContext;
using sdk::Tensor;
using OptionalDims = std::optional<std::span<const int64_t>>;

struct ReductionSpaces {
  StridedSpace<2> rows;  // out's offset, then the input's row start
  StridedSpace<2> row;   // (unused), then the input's offset within a row
};

ReductionSpaces reduction_spaces(const char* op, const Tensor& self, std::span<const int64_t> dims,
                                 const Tensor& out) {
  const int64_t nd = self.dim();
  std::vector<bool> reduced(static_cast<size_t>(nd), dims.empty());
  for (int64_t d : dims) {
    const int64_t w = d < 0 ? d + nd : d;
    if (w < 0 || w >= (nd == 0 ? 1 : nd)) {
      throw sdk::Error("[" + std::string(op) + "] dim " + std::to_string(d) +
                       " is out of range for a tensor of " + std::to_string(nd) + " dims");
    }
    if (nd > 0) reduced[static_cast<size_t>(w)] = true;
  }
  std::vector<int64_t> kept_sizes, kept_in, kept_out, row_sizes, row_in;
  const bool keepdim = out.dim() == nd;
  int64_t out_dim = 0;
  for (int64_t d = 0; d < nd; ++d) {
    if (reduced[static_cast<size_t>(d)]) {
      row_sizes.push_back(self.sizes()[d]);
      row_in.push_back(self.strides()[d]);
      if (keepdim) ++out_dim;
    } else {
      kept_sizes.push_back(self.sizes()[d]);
      kept_in.push_back(self.strides()[d]);
      kept_out.push_back(out_dim < out.dim() ? out.strides()[out_dim] : 0);
      ++out_dim;
    }
  }
  ReductionSpaces s;
  const int64_t* rows_strides[2] = {kept_out.data(), kept_in.data()};
  const int64_t* row_strides[2] = {row_in.data(), row_in.data()};
  if (!make_strided_space<2>(kept_sizes.data(), static_cast<int>(kept_sizes.size()), rows_strides,
                             &s.rows) ||
      !make_strided_space<2>(row_sizes.data(), static_cast<int>(row_sizes.size()), row_strides,
                             &s.row)) {
    throw sdk::Error("[" + std::string(op) +
                     "] too many dims for the " LOOM_GPU_PLATFORM_NAME " reduction kernel");
  }
  return s;
}

}  // namespace

void reduce(const DispatchContext& ctx, const char* op, ReduceOp kind, const Tensor& self,
            std::span<const int64_t> dims, const Tensor& out) {
  prepare(op, out, {&self});
  Tensor input = self;
  const bool integral_in = self.dtype() <= LOOM_DTYPE_INT64;
  const bool pairs = out.dtype() == self.dtype() ||
                     (kind == ReduceOp::Any || kind == ReduceOp::All) ||
                     (integral_in && out.dtype() == LOOM_DTYPE_INT64);
  // sum(dtype=...) and the like: cast first, on the device
  if (!pairs) input = contiguous(ctx, op, self, out.dtype());
  const ReductionSpaces s = reduction_spaces(op, input, dims, out);
  const int64_t workspace_bytes = reduction_workspace_bytes(s.rows, s.row, 1);
  std::optional<Tensor> workspace;  // freed to the stream's cache: reused only after this
  if (workspace_bytes > 0) {
    workspace = sdk::empty({workspace_bytes}, LOOM_DTYPE_UINT8, out.device());
  }
  check_launch(launch_reduce(kind, input.dtype(), out.dtype(), s.rows, s.row, out.data(),
                             input.data(), workspace ? workspace->data() : nullptr, stream_of(ctx)),
               op);
}

namespace {

Tensor sum_out(const DispatchContext& ctx, const Tensor& self, OptionalDims dim, bool,
               std::optional<LoomDType>, const Tensor& out) {
  reduce(ctx, "sum", ReduceOp::Sum, self, dim.value_or(std::span<const int64_t>{}), out);
  return out;
}

Tensor prod_out(const DispatchContext& ctx, const Tensor& self, int64_t dim, bool,
                std::optional<LoomDType>, const Tensor& out) {
  reduce(ctx, "prod", ReduceOp::Prod, self, {&dim, 1}, out);
  return out;
}

template <ReduceOp Kind>
Tensor extremum_out(const DispatchContext& ctx, const Tensor& self, std::span<const int64_t> dims,
                    bool, const Tensor& out) {
  const char* op = Kind == ReduceOp::Max ? "amax" : "amin";
  if (self.numel() == 0 && out.numel() > 0) {  // empty rows: [0, 3] over dim 1 is fine
    throw sdk::Error(std::string("[") + op +
                     "] expected a non-empty input: the reduction has no identity");
  }
  reduce(ctx, op, Kind, self, dims, out);
  return out;
}

template <ReduceOp Kind>
Tensor any_all_out(const DispatchContext& ctx, const Tensor& self, OptionalDims dim, bool,
                   const Tensor& out) {
  reduce(ctx, Kind == ReduceOp::Any ? "any" : "all", Kind, self,
         dim.value_or(std::span<const int64_t>{}), out);
  return out;
}

// max.dim / min.dim: one row per kept position along the wrapped dim `d`.
template <bool IsMax>
std::tuple<Tensor, Tensor> extremum_dim_out(const DispatchContext& ctx, const Tensor& self,
                                            int64_t dim, bool, const Tensor& values,
                                            const Tensor& indices) {
  const char* op = IsMax ? "max" : "min";
  prepare(op, values, {&self, &indices});
  const int64_t nd = self.dim();
  const int64_t d = dim < 0 ? dim + std::max<int64_t>(nd, 1) : dim;
  if (d < 0 || d >= std::max<int64_t>(nd, 1)) {
    throw sdk::Error("[" + std::string(op) + "] dim " + std::to_string(dim) +
                     " is out of range for a tensor of " + std::to_string(nd) + " dims");
  }
  const int64_t length = nd == 0 ? 1 : self.sizes()[d];
  if (length == 0 && values.numel() > 0) {
    throw sdk::Error("[" + std::string(op) + "] expected a non-empty dim " + std::to_string(dim) +
                     ": the reduction has no identity");
  }
  std::vector<int64_t> sizes, value_strides, index_strides, self_strides;
  const bool keepdim = values.dim() == nd;
  for (int64_t k = 0, o = 0; k < nd; ++k) {
    if (k == d) {
      if (keepdim) ++o;
      continue;
    }
    sizes.push_back(self.sizes()[k]);
    self_strides.push_back(self.strides()[k]);
    value_strides.push_back(values.strides()[o]);
    index_strides.push_back(indices.strides()[o]);
    ++o;
  }
  const int64_t* strides[3] = {value_strides.data(), index_strides.data(), self_strides.data()};
  StridedSpace<3> rows;
  if (!make_strided_space<3>(sizes.data(), static_cast<int>(sizes.size()), strides, &rows)) {
    throw sdk::Error("[" + std::string(op) +
                     "] too many dims for the " LOOM_GPU_PLATFORM_NAME " reduction kernel");
  }
  check_launch(launch_arg_reduce(IsMax, self.dtype(), length, nd == 0 ? 0 : self.strides()[d], rows,
                                 values.data(), static_cast<int64_t*>(indices.data()), self.data(),
                                 stream_of(ctx)),
               op);
  return {values, indices};
}

// Note [Variance by passes]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// var on the GPU is the two-pass formula from kernels the plugin has: the sum over the
// reduced dims (kept as size-1 dims), each element's deviation x - sum / N (a Sub with
// alpha 1/N against the sum broadcast back), its square, the sum of squares, and the
// division by max(0, N - correction). Every pass runs in float32 (float64 for float64
// inputs), as the CPU's moments do in double; an empty reduction divides 0 by 0 (NaN), as
// on the CPU. Five launches and two temporaries the size of the input, where one fused
// kernel would read the input twice: correct and deterministic first.
Tensor var_out(const DispatchContext& ctx, const Tensor& self, OptionalDims dim,
               std::optional<sdk::Scalar> correction, bool, const Tensor& out) {
  const char* op = "var";
  prepare(op, out, {&self});
  const int32_t acc = self.dtype() == LOOM_DTYPE_FLOAT64 ? LOOM_DTYPE_FLOAT64 : LOOM_DTYPE_FLOAT32;
  const LoomDType acc_type = static_cast<LoomDType>(acc);
  const Tensor x = self.dtype() == acc ? self : contiguous(ctx, op, self, acc);
  const std::span<const int64_t> dims = dim.value_or(std::span<const int64_t>{});
  const int64_t nd = x.dim();
  std::vector<bool> reduced(static_cast<size_t>(nd), dims.empty());
  for (int64_t d : dims) {
    if (nd > 0) reduced[static_cast<size_t>(wrapped_dim(op, d, nd))] = true;
  }
  // the sums, with the reduced dims kept (size 1)
  std::vector<int64_t> kept(x.sizes().begin(), x.sizes().end());
  int64_t count = 1;
  for (int64_t d = 0; d < nd; ++d) {
    if (!reduced[static_cast<size_t>(d)]) continue;
    count *= kept[static_cast<size_t>(d)];
    kept[static_cast<size_t>(d)] = 1;
  }
  const Tensor sums = sdk::empty(kept, acc_type, out.device());
  reduce(ctx, op, ReduceOp::Sum, x, dims, sums);
  // deviations x - sums / N, squared in place
  const Tensor dev = sdk::empty(x.sizes(), acc_type, out.device());
  broadcast_binary(ctx, op, BinaryOp::Sub, 1.0 / static_cast<double>(count), dev, x, sums);
  broadcast_binary(ctx, op, BinaryOp::Mul, 1.0, dev, dev, dev);
  // the sum of squares (out's shape), divided by max(0, N - correction)
  const Tensor result = out.dtype() == acc ? out : sdk::empty(out.sizes(), acc_type, out.device());
  reduce(ctx, op, ReduceOp::Sum, dev, dims, result);
  const double c = correction ? correction->to_double() : 1.0;
  const Tensor divisor =
      scalar_tensor(ctx, op, std::max(0.0, static_cast<double>(count) - c), acc, out.device());
  broadcast_binary(ctx, op, BinaryOp::Div, 1.0, result, result, divisor);
  copy_into(ctx, op, out, result);
  return out;
}

}  // namespace

void register_reduction_ops(sdk::Registrar& r, uint32_t key) {
  using namespace sdk::dtypes;
  r.impl<&sum_out>("loom::sum.dim_IntList_out", key, all);
  r.impl<&prod_out>("loom::prod.dim_int_out", key, all);
  r.impl<&extremum_out<ReduceOp::Max>>("loom::amax.out", key, all);
  r.impl<&extremum_out<ReduceOp::Min>>("loom::amin.out", key, all);
  r.impl<&extremum_dim_out<true>>("loom::max.dim_out", key, all);
  r.impl<&extremum_dim_out<false>>("loom::min.dim_out", key, all);
  r.impl<&any_all_out<ReduceOp::Any>>("loom::any.dims_out", key, all);
  r.impl<&any_all_out<ReduceOp::All>>("loom::all.dims_out", key, all);
  r.impl<&var_out>("loom::var.correction_out", key, sdk::dtypes::floating);
}

}  // namespace loom::gpu
