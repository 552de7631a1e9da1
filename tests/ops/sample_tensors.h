// Tensors and argument values built from the op library's samples (Note [Op samples]),
// shared by the op sweep and the autograd formula sweep: the same seeds give the same
// values in both.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "loom/call.h"
#include "loom/loom.h"
#include "loom/ops/samples.h"

namespace loom::ops::testing {

enum class Layout { Contiguous, NonContiguous, Meta };

struct Built {
  std::vector<Value> args;
  Kwargs kwargs;
};

uint64_t hash_of(std::string_view text);
// An uninitialised tensor of `shape` laid out with reversed dims and stride 2 (never
// contiguous when it has more than one element).
Tensor non_contiguous_empty(const std::vector<int64_t>& shape, ScalarType dtype);
Tensor build_tensor(const TensorSpec& spec, uint64_t seed, Layout layout);
Value build_value(const SampleArg& arg, uint64_t seed, Layout layout);
// The arguments of `sample` (the `ordinal`-th of its op), seeded by the op's name.
Built build(const OpSample& sample, int ordinal, Layout layout);

}  // namespace loom::ops::testing
