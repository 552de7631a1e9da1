// The GPU shape kernels' copy blocks on the host (host_kernels/shape_plan.h): the blocks
// of cat, flip, roll and repeat, applied to arrays as the copy kernel would, give the
// same output as the ops' definitions, for contiguous and strided inputs; and tril's and
// triu's choice of elements (kernels/shape_math.h).
#include "../../plugins/gpu/host_kernels/shape_plan.h"
#include "../../plugins/gpu/kernels/shape_math.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace loom::gpu {
namespace {

// A host tensor: values in a buffer, read through sizes and strides.
struct HostTensor {
  std::vector<double> data;
  std::vector<int64_t> sizes, strides;
  TensorLayout layout() const { return {sizes, strides}; }
  int64_t numel() const {
    return std::accumulate(sizes.begin(), sizes.end(), int64_t{1}, std::multiplies<>());
  }
  // The element at a row-major index.
  double at(const std::vector<int64_t>& index) const {
    int64_t offset = 0;
    for (size_t d = 0; d < index.size(); ++d) offset += index[d] * strides[d];
    return data[static_cast<size_t>(offset)];
  }
};

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> strides(sizes.size());
  int64_t running = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    strides[d] = running;
    running *= sizes[d];
  }
  return strides;
}

// Values 0, 1, 2, ... in row-major order.
HostTensor arange(const std::vector<int64_t>& sizes) {
  HostTensor t{{}, sizes, contiguous_strides(sizes)};
  t.data.resize(static_cast<size_t>(t.numel()));
  std::iota(t.data.begin(), t.data.end(), 0.0);
  return t;
}

// The transpose of an arange of the reversed shape: the same sizes, strides not row-major.
HostTensor strided(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> reversed(sizes.rbegin(), sizes.rend());
  HostTensor t = arange(reversed);
  t.sizes = sizes;
  t.strides.assign(t.strides.rbegin(), t.strides.rend());
  return t;
}

HostTensor zeros(const std::vector<int64_t>& sizes) {
  HostTensor t{{}, sizes, contiguous_strides(sizes)};
  t.data.assign(static_cast<size_t>(t.numel()), -1.0);
  return t;
}

// Calls f with every row-major index of `sizes`.
template <typename F>
void for_each_index(const std::vector<int64_t>& sizes, F f) {
  for (int64_t s : sizes) {
    if (s == 0) return;
  }
  std::vector<int64_t> index(sizes.size(), 0);
  while (true) {
    f(index);
    size_t d = sizes.size();
    while (d > 0) {
      --d;
      if (++index[d] < sizes[d]) break;
      index[d] = 0;
      if (d == 0) return;
    }
    if (sizes.empty()) return;
  }
}

// What the copy kernel does with the blocks.
void apply(const std::vector<CopyBlock>& blocks, HostTensor& out,
           const std::vector<const HostTensor*>& sources) {
  for (const CopyBlock& b : blocks) {
    const HostTensor& src = *sources[b.input];
    for_each_index(b.sizes, [&](const std::vector<int64_t>& i) {
      int64_t dst = b.dst_offset, from = b.src_offset;
      for (size_t d = 0; d < i.size(); ++d) {
        dst += i[d] * b.dst_strides[d];
        from += i[d] * b.src_strides[d];
      }
      out.data.at(static_cast<size_t>(dst)) = src.data.at(static_cast<size_t>(from));
    });
  }
}

TEST(GpuShapePlan, CatBlocksPlaceEachInputAtItsOffset) {
  for (int64_t dim : {0, 1, 2}) {
    std::vector<int64_t> a_sizes = {2, 3, 4}, b_sizes = a_sizes, c_sizes = a_sizes;
    b_sizes[static_cast<size_t>(dim)] = 1;
    c_sizes[static_cast<size_t>(dim)] = 0;  // an empty input gets no block
    HostTensor a = arange(a_sizes), b = strided(b_sizes), c = arange(c_sizes);
    HostTensor legacy{{}, {0}, {1}};  // the legacy empty [0] tensor is skipped
    std::vector<int64_t> out_sizes = a_sizes;
    out_sizes[static_cast<size_t>(dim)] += 1;
    HostTensor out = zeros(out_sizes);
    const std::vector<TensorLayout> layouts = {a.layout(), legacy.layout(), c.layout(), b.layout()};
    const std::vector<CopyBlock> blocks = plan_cat(layouts, dim, out.layout());
    ASSERT_EQ(blocks.size(), 2u);
    apply(blocks, out, {&a, &legacy, &c, &b});
    for_each_index(out_sizes, [&](const std::vector<int64_t>& i) {
      std::vector<int64_t> j = i;
      const int64_t split = a_sizes[static_cast<size_t>(dim)];
      const bool from_a = i[static_cast<size_t>(dim)] < split;
      if (!from_a) j[static_cast<size_t>(dim)] -= split;
      EXPECT_EQ(out.at(i), from_a ? a.at(j) : b.at(j)) << "dim " << dim;
    });
  }
}

TEST(GpuShapePlan, FlipReadsTheFlippedDimsBackwards) {
  for (bool transposed : {false, true}) {
    const std::vector<int64_t> sizes = {3, 1, 4, 2};
    HostTensor self = transposed ? strided(sizes) : arange(sizes);
    for (int mask = 0; mask < 16; ++mask) {
      std::vector<bool> flipped(4);
      for (int d = 0; d < 4; ++d) flipped[static_cast<size_t>(d)] = (mask >> d) & 1;
      HostTensor out = zeros(sizes);
      apply({plan_flip(self.layout(), flipped, out.layout())}, out, {&self});
      for_each_index(sizes, [&](const std::vector<int64_t>& i) {
        std::vector<int64_t> j = i;
        for (size_t d = 0; d < 4; ++d) {
          if (flipped[d]) j[d] = sizes[d] - 1 - i[d];
        }
        EXPECT_EQ(out.at(i), self.at(j)) << "mask " << mask;
      });
    }
  }
}

TEST(GpuShapePlan, RollSplitsEachRolledDimAtTheShift) {
  const std::vector<int64_t> sizes = {4, 3, 5};
  for (bool transposed : {false, true}) {
    HostTensor self = transposed ? strided(sizes) : arange(sizes);
    for (const std::vector<int64_t>& shifts :
         {std::vector<int64_t>{0, 0, 0}, {1, 0, 0}, {0, 2, 4}, {3, 1, 2}}) {
      HostTensor out = zeros(sizes);
      const std::vector<CopyBlock> blocks = plan_roll(self.layout(), shifts, out.layout());
      size_t rolled = 0;
      for (int64_t s : shifts) rolled += s != 0;
      EXPECT_EQ(blocks.size(), size_t{1} << rolled);
      apply(blocks, out, {&self});
      for_each_index(sizes, [&](const std::vector<int64_t>& i) {
        std::vector<int64_t> j = i;
        for (size_t d = 0; d < 3; ++d) j[d] = (i[d] - shifts[d] + sizes[d]) % sizes[d];
        EXPECT_EQ(out.at(i), self.at(j)) << shifts[0] << shifts[1] << shifts[2];
      });
    }
  }
}

TEST(GpuShapePlan, RepeatReadsEachDimModuloItsSize) {
  for (bool transposed : {false, true}) {
    const std::vector<int64_t> sizes = {2, 3};
    HostTensor self = transposed ? strided(sizes) : arange(sizes);
    for (const std::vector<int64_t>& repeats :
         {std::vector<int64_t>{1, 1}, {2, 3}, {3, 1, 2}, {2, 0, 1}}) {
      const size_t lead = repeats.size() - sizes.size();
      std::vector<int64_t> out_sizes(repeats.size());
      for (size_t d = 0; d < repeats.size(); ++d) {
        out_sizes[d] = repeats[d] * (d < lead ? 1 : sizes[d - lead]);
      }
      HostTensor out = zeros(out_sizes);
      apply({plan_repeat(self.layout(), out.layout())}, out, {&self});
      for_each_index(out_sizes, [&](const std::vector<int64_t>& i) {
        std::vector<int64_t> j(sizes.size());
        for (size_t d = 0; d < sizes.size(); ++d) j[d] = i[d + lead] % sizes[d];
        EXPECT_EQ(out.at(i), self.at(j));
      });
    }
  }
  // A 0-dim self (no dims) repeated into [3, 2].
  HostTensor scalar{{7.0}, {}, {}};
  HostTensor out = zeros({3, 2});
  apply({plan_repeat(scalar.layout(), out.layout())}, out, {&scalar});
  for (double v : out.data) EXPECT_EQ(v, 7.0);
}

TEST(GpuShapePlan, TriangleKeepsTheElementsOnEachSideOfTheDiagonal) {
  const int64_t batch = 2, rows = 3, cols = 4;
  for (int64_t diagonal : {-3, -1, 0, 1, 2, 5}) {
    for (int64_t i = 0; i < batch * rows * cols; ++i) {
      const int64_t row = i / cols % rows, col = i % cols;
      EXPECT_EQ(triangle_keeps(true, i, rows, cols, diagonal), col <= row + diagonal)
          << i << " " << diagonal;
      EXPECT_EQ(triangle_keeps(false, i, rows, cols, diagonal), col >= row + diagonal)
          << i << " " << diagonal;
    }
  }
}

}  // namespace
}  // namespace loom::gpu
