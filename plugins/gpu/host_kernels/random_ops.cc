// uniform_, normal_ and bernoulli_ on GPU tensors: the bounds checks of the CPU plugin,
// then one Philox reservation from the device type's generator and the kernel of
// kernels/random.cu, so the values equal the CPU's for the same seed.
#include <cmath>
#include <string>

#include "../kernels/launch.h"
#include "loom/sdk/random.hpp"
#include "op_support.h"

namespace loom::gpu {
namespace {

using sdk::DispatchContext;
using sdk::Tensor;

[[noreturn]] void fail(const char* op, const std::string& message) {
  throw sdk::Error("[" + std::string(op) + "] " + message, LOOM_STATUS_INVALID_ARGUMENT);
}

void fill_random(const DispatchContext& ctx, const char* op, RandomOp kind, const Tensor& self,
                 double a, double b) {
  prepare(op, self, {});
  const sdk::PhiloxStream stream =
      sdk::reserve_random(self.device(), static_cast<uint64_t>(self.numel()));
  const Tensor* operands[1] = {&self};
  check_launch(launch_random(kind, self.dtype(), stream.seed, stream.offset, a, b,
                             space_of(op, self, operands), self.data(), stream_of(ctx)),
               op);
}

Tensor uniform_(const DispatchContext& ctx, const Tensor& self, double from, double to) {
  if (!(from <= to)) {
    fail("uniform_",
         "expected from <= to, found from=" + std::to_string(from) + " to=" + std::to_string(to));
  }
  if (!std::isfinite(to - from)) {
    fail("uniform_", "the range to - from of " + std::to_string(from) + " and " +
                         std::to_string(to) + " overflows (expected a finite width)");
  }
  fill_random(ctx, "uniform_", RandomOp::Uniform, self, from, to);
  return self;
}

Tensor normal_(const DispatchContext& ctx, const Tensor& self, double mean, double std) {
  if (!(std >= 0.0)) fail("normal_", "expected std >= 0, found std=" + std::to_string(std));
  if (!std::isfinite(mean) || !std::isfinite(std)) {
    fail("normal_", "expected a finite mean and std, found mean=" + std::to_string(mean) +
                        " std=" + std::to_string(std));
  }
  fill_random(ctx, "normal_", RandomOp::Normal, self, mean, std);
  return self;
}

Tensor bernoulli_(const DispatchContext& ctx, const Tensor& self, double p) {
  if (!(p >= 0.0 && p <= 1.0))
    fail("bernoulli_", "expected p in [0, 1], found p=" + std::to_string(p));
  fill_random(ctx, "bernoulli_", RandomOp::Bernoulli, self, p, 0);
  return self;
}

}  // namespace

void register_random_ops(sdk::Registrar& r, uint32_t key) {
  using namespace sdk::dtypes;
  r.impl<&uniform_>("loom::uniform_", key, floating);
  r.impl<&normal_>("loom::normal_", key, floating);
  r.impl<&bernoulli_>("loom::bernoulli_.float", key, floating | boolean);
}

}  // namespace loom::gpu
