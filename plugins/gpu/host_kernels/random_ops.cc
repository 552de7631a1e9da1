// The random ops on GPU tensors: uniform_, normal_, bernoulli_ and bernoulli of a tensor
// of probabilities, dropout, random_ over integer ranges and randperm (its keys sorted
// by the sort kernel). The bounds checks of the CPU plugin, then one Philox reservation
// from the device type's generator and the kernels of kernels/random.cu, so the values
// equal the CPU's for the same seed.
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

#include "../kernels/launch.h"
#include "loom/sdk/random.hpp"
#include "op_support.h"

namespace loom::gpu {
namespace {

using sdk::DispatchContext;
using sdk::Tensor;

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

// The op library checked the arguments of uniform_, normal_, bernoulli_ and dropout
// (Note [Argument checks]).
Tensor uniform_(const DispatchContext& ctx, const Tensor& self, double from, double to) {
  fill_random(ctx, "uniform_", RandomOp::Uniform, self, from, to);
  return self;
}

Tensor normal_(const DispatchContext& ctx, const Tensor& self, double mean, double std) {
  fill_random(ctx, "normal_", RandomOp::Normal, self, mean, std);
  return self;
}

Tensor bernoulli_(const DispatchContext& ctx, const Tensor& self, double p) {
  fill_random(ctx, "bernoulli_", RandomOp::Bernoulli, self, p, 0);
  return self;
}

// A new contiguous tensor of element i = op(in[i], Philox block i).
Tensor random_of(const DispatchContext& ctx, const char* op, RandomOfOp kind, const Tensor& in,
                 double p, double scale, int64_t* check) {
  Tensor out = sdk::empty(in.sizes(), in.dtype(), in.device());
  prepare(op, out, {&in});
  const sdk::PhiloxStream stream =
      sdk::reserve_random(in.device(), static_cast<uint64_t>(in.numel()));
  const Tensor* operands[2] = {&out, &in};
  check_launch(
      launch_random_of(kind, in.dtype(), stream.seed, stream.offset, p, scale,
                       space_of(op, out, operands), out.data(), in.data(), check, stream_of(ctx)),
      op);
  return out;
}

Tensor bernoulli(const DispatchContext& ctx, const Tensor& self) {
  const InputCheck check = input_check(ctx, self, [](int64_t element) {
    return "[loom::bernoulli] expected probabilities in [0, 1], found one outside at element " +
           std::to_string(element);
  });
  return random_of(ctx, "bernoulli", RandomOfOp::BernoulliOf, self, 0, 0, check.slot());
}

Tensor dropout(const DispatchContext& ctx, const Tensor& input, double p, bool train) {
  if (!train) return input;
  return random_of(ctx, "dropout", RandomOfOp::Dropout, input, p, p < 1.0 ? 1.0 / (1.0 - p) : 0.0,
                   nullptr);
}

Tensor random_from_(const DispatchContext& ctx, const Tensor& self, int64_t from,
                    std::optional<int64_t> to) {
  const auto [first, count] = sdk::random_integer_range(self.dtype(), from, to);
  prepare("random_", self, {});
  const sdk::PhiloxStream stream =
      sdk::reserve_random(self.device(), static_cast<uint64_t>(self.numel()));
  const Tensor* operands[1] = {&self};
  check_launch(
      launch_random_integers(false, self.dtype(), stream.seed, stream.offset, first, count,
                             space_of("random_", self, operands), self.data(), stream_of(ctx)),
      "random_");
  return self;
}

// The CPU plugin's permutation: positions sorted by their Philox block's 64 bits (ties by
// position), here the sort kernel over int64 keys whose order is the bits' order.
Tensor randperm_out(const DispatchContext& ctx, int64_t n, const Tensor& out) {
  sdk::check_randperm(n, out.dtype(), out.sizes());
  prepare("randperm", out, {});
  const sdk::PhiloxStream stream = sdk::reserve_random(out.device(), static_cast<uint64_t>(n));
  if (n == 0) return out;
  Tensor keys = sdk::empty({n}, LOOM_DTYPE_INT64, out.device());
  Tensor sorted_keys = sdk::empty({n}, LOOM_DTYPE_INT64, out.device());
  Tensor positions = sdk::empty({n}, LOOM_DTYPE_INT64, out.device());
  const Tensor* key_operands[1] = {&keys};
  check_launch(
      launch_random_integers(true, LOOM_DTYPE_INT64, stream.seed, stream.offset, 0, 0,
                             space_of("randperm", keys, key_operands), keys.data(), stream_of(ctx)),
      "randperm");
  sort_along(ctx, "randperm", keys, 0, n, false, sorted_keys, positions);
  copy_into(ctx, "randperm", out, positions);
  return out;
}

}  // namespace

void register_random_ops(sdk::Registrar& r, uint32_t key) {
  using namespace sdk::dtypes;
  r.impl<&uniform_>("loom::uniform_", key, floating);
  r.impl<&normal_>("loom::normal_", key, floating);
  r.impl<&bernoulli_>("loom::bernoulli_.float", key, floating | boolean);
  r.impl<&bernoulli>("loom::bernoulli", key, floating);
  r.impl<&dropout>("loom::dropout", key, floating);
  r.impl<&random_from_>("loom::random_.from", key, all);
  r.impl<&randperm_out>("loom::randperm.out", key, numeric);
}

}  // namespace loom::gpu
