// softmax and log_softmax on GPU tensors: one block per line along `dim`
// (kernels/softmax.cu); a non-contiguous input is made contiguous on the device first.
#include <optional>
#include <string>

#include "../kernels/launch.h"
#include "op_support.h"

namespace loom::gpu {
namespace {

using sdk::DispatchContext;
using sdk::Tensor;

template <bool Log>
Tensor softmax_out(const DispatchContext& ctx, const Tensor& self, int64_t dim,
                   std::optional<LoomDType>, const Tensor& out) {
  const char* op = Log ? "log_softmax" : "softmax";
  prepare(op, out, {&self});
  const int64_t nd = self.dim();
  const int64_t d = dim < 0 ? dim + std::max<int64_t>(nd, 1) : dim;
  if (d < 0 || d >= std::max<int64_t>(nd, 1)) {
    throw sdk::Error("[" + std::string(op) + "] dim " + std::to_string(dim) +
                     " is out of range for a tensor of " + std::to_string(nd) + " dims");
  }
  const Tensor input = self.is_contiguous() && self.dtype() == out.dtype()
                           ? self
                           : contiguous(ctx, op, self, out.dtype());
  Tensor target = out.is_contiguous() ? out : sdk::empty(out.sizes(), out.dtype(), out.device());
  int64_t outer = 1, inner = 1;
  const int64_t length = nd == 0 ? 1 : self.sizes()[d];
  for (int64_t k = 0; k < d; ++k) outer *= self.sizes()[k];
  for (int64_t k = d + 1; k < nd; ++k) inner *= self.sizes()[k];
  check_launch(launch_softmax(Log, out.dtype(), outer, length, inner, target.data(), input.data(),
                              stream_of(ctx)),
               op);
  if (target.get() != out.get()) {
    const Tensor* operands[2] = {&out, &target};
    check_launch(launch_copy(out.dtype(), target.dtype(), space_of(op, out, operands), out.data(),
                             target.data(), stream_of(ctx)),
                 op);
  }
  return out;
}

}  // namespace

void register_softmax_ops(sdk::Registrar& r, uint32_t key) {
  r.impl<&softmax_out<false>>("loom::softmax.int_out", key, sdk::dtypes::floating);
  r.impl<&softmax_out<true>>("loom::log_softmax.int_out", key, sdk::dtypes::floating);
}

}  // namespace loom::gpu
