// The copy blocks of the shape family's GPU kernels (Note [Shape ops as copies]).
#include "shape_plan.h"

namespace loom::gpu {
namespace {

CopyBlock whole(const TensorLayout& src, const TensorLayout& out) {
  CopyBlock b;
  b.sizes.assign(out.sizes.begin(), out.sizes.end());
  b.dst_strides.assign(out.strides.begin(), out.strides.end());
  b.src_strides.assign(src.strides.begin(), src.strides.end());
  return b;
}

}  // namespace

std::vector<CopyBlock> plan_cat(std::span<const TensorLayout> inputs, int64_t dim,
                                const TensorLayout& out) {
  std::vector<CopyBlock> blocks;
  int64_t at = 0;  // where the next input starts along dim
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorLayout& in = inputs[i];
    if (in.sizes.size() == 1 && in.sizes[0] == 0) continue;  // legacy empty tensor
    const int64_t length = in.sizes[static_cast<size_t>(dim)];
    if (length > 0) {
      CopyBlock b;
      b.sizes.assign(in.sizes.begin(), in.sizes.end());
      b.dst_offset = at * out.strides[static_cast<size_t>(dim)];
      b.dst_strides.assign(out.strides.begin(), out.strides.end());
      b.src_strides.assign(in.strides.begin(), in.strides.end());
      b.input = i;
      blocks.push_back(std::move(b));
    }
    at += length;
  }
  return blocks;
}

CopyBlock plan_flip(const TensorLayout& self, const std::vector<bool>& flipped,
                    const TensorLayout& out) {
  CopyBlock b = whole(self, out);
  for (size_t d = 0; d < b.sizes.size(); ++d) {
    if (!flipped[d] || b.sizes[d] <= 1) continue;
    b.src_offset += (b.sizes[d] - 1) * b.src_strides[d];  // start at the last element
    b.src_strides[d] = -b.src_strides[d];
  }
  return b;
}

std::vector<CopyBlock> plan_roll(const TensorLayout& self, std::span<const int64_t> shifts,
                                 const TensorLayout& out) {
  std::vector<CopyBlock> blocks{whole(self, out)};
  for (size_t d = 0; d < shifts.size(); ++d) {
    const int64_t shift = shifts[d], size = self.sizes[d];
    if (shift == 0) continue;
    // out [shift, size) <- self [0, size - shift); out [0, shift) <- self [size - shift, size)
    std::vector<CopyBlock> split;
    for (const CopyBlock& b : blocks) {
      CopyBlock tail = b;
      tail.sizes[d] = size - shift;
      tail.dst_offset += shift * out.strides[d];
      CopyBlock head = b;
      head.sizes[d] = shift;
      head.src_offset += (size - shift) * self.strides[d];
      split.push_back(std::move(tail));
      split.push_back(std::move(head));
    }
    blocks = std::move(split);
  }
  return blocks;
}

CopyBlock plan_repeat(const TensorLayout& self, const TensorLayout& out) {
  CopyBlock b;
  const size_t lead = out.sizes.size() - self.sizes.size();
  for (size_t d = 0; d < out.sizes.size(); ++d) {
    if (d < lead) {  // a new leading dim: every copy reads the same self
      b.sizes.push_back(out.sizes[d]);
      b.dst_strides.push_back(out.strides[d]);
      b.src_strides.push_back(0);
      continue;
    }
    const int64_t size = self.sizes[d - lead];
    const int64_t repeats = size == 0 ? 0 : out.sizes[d] / size;
    // out's dim as [repeats, size]: the repeat index moves by size elements of out
    b.sizes.push_back(repeats);
    b.dst_strides.push_back(size * out.strides[d]);
    b.src_strides.push_back(0);
    b.sizes.push_back(size);
    b.dst_strides.push_back(out.strides[d]);
    b.src_strides.push_back(self.strides[d - lead]);
  }
  return b;
}

}  // namespace loom::gpu
