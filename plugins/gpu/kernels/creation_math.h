// The positions of arange and linspace on the device: loom/sdk/reference/sequence.hpp's values
// (the CPU's) as plain fields and a __host__ __device__ formula, checked against the
// SDK's on the host (tests/gpu/shape_plan_test.cc).
#pragma once

#include <cstdint>

#include "index_math.h"

namespace loom::gpu {

// sdk::Sequence's fields (no SDK types cross into device code).
struct SequenceSpec {
  bool integral = false;  // integral arange: start_i + i * step_i
  int64_t start_i = 0, step_i = 0;
  double start = 0, step = 0, end = 0;
  int64_t length = 0;
  int64_t half = INT64_MAX;  // linspace: from here on, values count back from end
};

LOOM_GPU_HD double sequence_at(const SequenceSpec& q, int64_t i) {
  return i < q.half ? q.start + q.step * static_cast<double>(i)
                    : q.end - q.step * static_cast<double>(q.length - 1 - i);
}

LOOM_GPU_HD int64_t sequence_integer_at(const SequenceSpec& q, int64_t i) {
  return q.start_i + i * q.step_i;
}

}  // namespace loom::gpu
