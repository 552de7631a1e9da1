// arange and linspace on GPU tensors: the SDK's sequence (loom/sdk/reference/sequence.hpp: the
// checks, the length and the values every backend shares) written by one kernel.
#include <string>

#include "../kernels/launch.h"
#include "loom/sdk/reference/sequence.hpp"
#include "op_support.h"
#include "sequence_spec.h"

namespace loom::gpu {
namespace {

using sdk::DispatchContext;
using sdk::Scalar;
using sdk::Tensor;

Tensor write_sequence(const DispatchContext& ctx, const sdk::Sequence& q, const Tensor& out,
                      const char* op) {
  prepare(op, out, {});
  if (out.dim() != 1 || out.sizes()[0] != q.length) {
    std::string shape = "[";
    for (int64_t d = 0; d < out.dim(); ++d) {
      shape += (d ? ", " : "") + std::to_string(out.sizes()[d]);
    }
    throw sdk::Error(std::string("[") + op + "] expected a 1-D out of " + std::to_string(q.length) +
                     " elements, found shape " + shape + "]");
  }
  check_launch(
      launch_sequence(out.dtype(), spec_of(q), out.strides()[0], out.data(), stream_of(ctx)), op);
  return out;
}

Tensor arange_out(const DispatchContext& ctx, Scalar start, Scalar end, Scalar step,
                  const Tensor& out) {
  return write_sequence(
      ctx, sdk::arange_sequence(start, end, step, out.dtype() <= LOOM_DTYPE_INT64), out, "arange");
}

Tensor linspace_out(const DispatchContext& ctx, Scalar start, Scalar end, int64_t steps,
                    const Tensor& out) {
  return write_sequence(ctx, sdk::linspace_sequence(start, end, steps), out, "linspace");
}

}  // namespace

void register_creation_ops(sdk::Registrar& r, uint32_t key) {
  r.impl<&arange_out>("loom::arange.start_out", key, sdk::dtypes::numeric);
  r.impl<&linspace_out>("loom::linspace.out", key, sdk::dtypes::numeric);
}

}  // namespace loom::gpu
