// The SDK's sequence (loom/sdk/reference/sequence.hpp) as the creation kernel's plain fields
// (kernels/creation_math.h): no SDK type crosses into device code.
#pragma once

#include "../kernels/creation_math.h"
#include "loom/sdk/reference/sequence.hpp"

namespace loom::gpu {

inline SequenceSpec spec_of(const sdk::Sequence& q) {
  SequenceSpec s;
  s.integral = q.integral;
  s.start_i = q.start_i;
  s.step_i = q.step_i;
  s.start = q.start;
  s.step = q.step;
  s.end = q.end;
  s.length = q.length;
  s.half = q.half;
  return s;
}

}  // namespace loom::gpu
