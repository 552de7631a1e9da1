// Random factories: allocate with empty(), fill with the random ops (every device's
// plugin fills its own memory from the shared Philox stream).
#include "loom/random.h"

#include "loom/ops/generated/ops.h"

namespace loom {

void manual_seed(uint64_t seed) {
  manual_seed_all(seed);
}

Tensor rand(IntList sizes, TensorOptions options) {
  return uniform_(empty(sizes, options), 0.0, 1.0);
}

Tensor randn(IntList sizes, TensorOptions options) {
  return normal_(empty(sizes, options), 0.0, 1.0);
}

Tensor randint(int64_t low, int64_t high, IntList sizes, TensorOptions options) {
  return random_(empty(sizes, options), low, high);
}

Tensor randint(int64_t high, IntList sizes, TensorOptions options) {
  return randint(0, high, sizes, options);
}

Tensor randperm(int64_t n, TensorOptions options) {
  // A negative n is reported by the op itself, not by the allocation of out.
  int64_t size = n < 0 ? 0 : n;
  return randperm_out(empty(IntArrayRef(&size, 1), options.dtype_, options.device_), n);
}

Tensor rand_like(const Tensor& t) {
  return uniform_(empty_like(t), 0.0, 1.0);
}

Tensor randn_like(const Tensor& t) {
  return normal_(empty_like(t), 0.0, 1.0);
}

Tensor randint_like(const Tensor& t, int64_t low, int64_t high) {
  return random_(empty_like(t), low, high);
}

Tensor randint_like(const Tensor& t, int64_t high) {
  return randint_like(t, 0, high);
}

}  // namespace loom
