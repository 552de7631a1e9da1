// Index math of the shape family's GPU kernel (tril and triu, shape.cu), compiled for
// host and device and unit-tested on the host (tests/gpu/shape_plan_test.cc).
#pragma once

#include <cstdint>

#include "index_math.h"

namespace loom::gpu {

// Whether tril (lower) or triu keeps element `i` of a row-major [..., rows, cols] tensor:
// its column minus its row is at most (tril) or at least (triu) `diagonal`.
LOOM_GPU_HD bool triangle_keeps(bool lower, int64_t i, int64_t rows, int64_t cols,
                                int64_t diagonal) {
  const int64_t col = i % cols, row = (i / cols) % rows;
  return lower ? col - row <= diagonal : col - row >= diagonal;
}

}  // namespace loom::gpu
