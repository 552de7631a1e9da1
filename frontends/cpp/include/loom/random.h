// Random tensors in the C++ API: seeding the default generators and the random
// factories (rand, randn, randint, randperm and their *_like forms). The values come
// from the backends' random ops (uniform_, normal_, random_, randperm), so they are the
// same for any thread count (Note [Random stream layout] in loom/sdk/philox.hpp).
#pragma once

#include <cstdint>

#include "loom/core/generator.h"
#include "loom/factories.h"
#include "loom/ops/tensor.h"

namespace loom {

// Seeds the default generator of every device type (cpu first among them) and restarts
// their streams: the same seed gives the same sequence of random tensors.
void manual_seed(uint64_t seed);

// Uniform in [0, 1).
Tensor rand(IntList sizes, TensorOptions options = {});
// Standard normal.
Tensor randn(IntList sizes, TensorOptions options = {});
// Integers uniform in [low, high). The default options are int64 on cpu; options given
// replace them entirely (set dtype too when you pass a device).
Tensor randint(int64_t low, int64_t high, IntList sizes,
               TensorOptions options = TensorOptions().dtype(ScalarType::Int64));
Tensor randint(int64_t high, IntList sizes,
               TensorOptions options = TensorOptions().dtype(ScalarType::Int64));
// A random permutation of 0 .. n-1 (int64 by default, like randint).
Tensor randperm(int64_t n, TensorOptions options = TensorOptions().dtype(ScalarType::Int64));

// Same shape, dtype and device as t.
Tensor rand_like(const Tensor& t);
Tensor randn_like(const Tensor& t);
Tensor randint_like(const Tensor& t, int64_t low, int64_t high);
Tensor randint_like(const Tensor& t, int64_t high);

}  // namespace loom
