// The shape family's GPU kernels as strided copies: cat, flip, roll and repeat each
// become a few blocks, every block one launch of the copy kernel with its own sizes,
// offsets and strides. Plain host arithmetic over sizes and strides (no SDK, no runtime),
// unit-tested on the host (tests/gpu/shape_plan_test.cc) by applying the blocks to
// arrays.
//
// Note [Shape ops as copies]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// Each output element of these ops is one input element, found by index arithmetic that
// is affine within a block: flip reads its input backwards (a negative stride from the
// last element), repeat reads each repeated dim modulo its size (the output dim split
// into [repeats, size] with the input's stride 0 on the first), cat writes each input at
// its offset along the dim, and roll splits each rolled dim at the shift into two blocks
// (2^k blocks for k rolled dims). So the copy kernel, with its dtype conversion and
// vector and 32-bit index paths, serves all of them, and no new device code is needed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace loom::gpu {

// One strided copy: dst[dst_offset + i . dst_strides] = src[src_offset + i . src_strides]
// for every index i of `sizes` (elements, row-major order of dims).
struct CopyBlock {
  std::vector<int64_t> sizes;
  int64_t dst_offset = 0;
  std::vector<int64_t> dst_strides;
  int64_t src_offset = 0;
  std::vector<int64_t> src_strides;
  size_t input = 0;  // cat: which input the block reads
};

// A tensor's layout as the plan needs it.
struct TensorLayout {
  std::span<const int64_t> sizes;
  std::span<const int64_t> strides;
};

// cat along `dim` (wrapped, in range): one block per input, written at its offset in out.
// Inputs that are the legacy empty [0] tensor get no block.
std::vector<CopyBlock> plan_cat(std::span<const TensorLayout> inputs, int64_t dim,
                                const TensorLayout& out);

// flip of the dims marked in `flipped` (one flag per dim of `self`).
CopyBlock plan_flip(const TensorLayout& self, const std::vector<bool>& flipped,
                    const TensorLayout& out);

// roll by `shifts[d]` along each dim d (0 <= shift < size; 0 leaves the dim): out index j
// takes self's (j - shift) mod size.
std::vector<CopyBlock> plan_roll(const TensorLayout& self, std::span<const int64_t> shifts,
                                 const TensorLayout& out);

// repeat: out has self's dims (after out.dim() - self.dim() leading ones), each `repeats`
// times as long.
CopyBlock plan_repeat(const TensorLayout& self, const TensorLayout& out);

}  // namespace loom::gpu
