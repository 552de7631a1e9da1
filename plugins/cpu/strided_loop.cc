// The iteration plan of strided element-wise loops and its odometer (strided_loop.h).
#include "strided_loop.h"

#include <algorithm>
#include <cstdlib>

namespace loom::cpu {

bool StridedLoop::first_operand_repeats() const {
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] > 1 && strides[d * num_operands] == 0) return true;
  }
  return false;
}

bool StridedLoop::periodic_rows(int64_t max_period) const {
  if (sizes.size() != 2 || sizes[1] > max_period) return false;
  const int64_t period = sizes[1];
  const int64_t* outer = strides.data();
  const int64_t* inner = inner_strides();
  if (outer[0] != period || inner[0] != 1) return false;
  bool repeats = false;
  for (size_t k = 1; k < num_operands; ++k) {
    if (inner[k] != 0 && inner[k] != 1) return false;
    if (outer[k] == 0) {
      repeats = true;
    } else if (outer[k] != period || inner[k] != 1) {
      return false;
    }
  }
  return repeats;
}

StridedLoop plan_strided_loop(std::span<const int64_t> shape,
                              std::span<const int64_t* const> element_strides,
                              std::span<const int64_t> item_sizes) {
  const size_t n = element_strides.size();
  if (n == 0 || n > kMaxLoopOperands || item_sizes.size() != n) {
    throw sdk::Error("[cpu] a strided loop takes 1 to " + std::to_string(kMaxLoopOperands) +
                         " operands, found " + std::to_string(n),
                     LOOM_STATUS_INTERNAL);
  }
  StridedLoop loop;
  loop.num_operands = n;
  std::copy(item_sizes.begin(), item_sizes.end(), loop.item_size);
  loop.numel = 1;
  for (int64_t s : shape) loop.numel *= s;

  // Dims with size > 1, outermost first, ordered by operand 0's strides (largest first).
  std::vector<size_t> order;
  order.reserve(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] != 1) order.push_back(d);
  }
  const int64_t* first = element_strides[0];
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return std::llabs(first[a]) > std::llabs(first[b]); });

  // Coalesce from the innermost dim outwards (built innermost first, reversed below).
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  for (size_t j = order.size(); j-- > 0;) {
    const size_t d = order[j];
    if (!sizes.empty()) {
      const int64_t* prev = strides.data() + strides.size() - n;
      bool mergeable = true;
      for (size_t k = 0; k < n; ++k) {
        mergeable = mergeable && element_strides[k][d] == prev[k] * sizes.back();
      }
      if (mergeable) {
        sizes.back() *= shape[d];
        continue;
      }
    }
    sizes.push_back(shape[d]);
    for (size_t k = 0; k < n; ++k) strides.push_back(element_strides[k][d]);
  }
  if (sizes.empty()) {  // a single element (or none: numel says)
    sizes.push_back(loop.numel == 0 ? 0 : 1);
    strides.assign(n, 0);
  }
  const size_t nd = sizes.size();
  loop.sizes.assign(sizes.rbegin(), sizes.rend());
  loop.strides.resize(nd * n);
  for (size_t d = 0; d < nd; ++d) {
    std::copy_n(strides.data() + (nd - 1 - d) * n, n, loop.strides.data() + d * n);
  }
  return loop;
}

void for_each_run(const StridedLoop& loop, char* const* base, int64_t begin, int64_t end,
                  RunFn run) {
  if (begin >= end) return;
  const size_t n = loop.num_operands;
  const size_t nd = loop.sizes.size();
  const int64_t inner = loop.inner_size();
  const int64_t* inner_stride = loop.inner_strides();
  int64_t byte_stride[kMaxLoopOperands];  // per operand: the inner step in bytes
  for (size_t k = 0; k < n; ++k) byte_stride[k] = inner_stride[k] * loop.item_size[k];

  // The outer index of `begin` (an odometer over dims 0 .. nd-2) and its row pointers.
  std::vector<int64_t> index(nd, 0);
  int64_t rest = begin / inner;
  int64_t offset_in_row = begin % inner;
  for (size_t d = nd - 1; d-- > 0;) {
    index[d] = rest % loop.sizes[d];
    rest /= loop.sizes[d];
  }
  char* row[kMaxLoopOperands];
  for (size_t k = 0; k < n; ++k) {
    int64_t elements = 0;
    for (size_t d = 0; d + 1 < nd; ++d) elements += index[d] * loop.strides[d * n + k];
    row[k] = base[k] + elements * loop.item_size[k];
  }

  char* ptrs[kMaxLoopOperands];
  int64_t position = begin;
  for (;;) {
    const int64_t count = std::min(inner - offset_in_row, end - position);
    for (size_t k = 0; k < n; ++k) ptrs[k] = row[k] + offset_in_row * byte_stride[k];
    run(ptrs, count);
    position += count;
    if (position >= end) return;
    offset_in_row = 0;
    // Advance the outer dims, moving each operand's row pointer.
    for (size_t d = nd - 1; d-- > 0;) {
      if (++index[d] < loop.sizes[d]) {
        for (size_t k = 0; k < n; ++k) row[k] += loop.strides[d * n + k] * loop.item_size[k];
        break;
      }
      for (size_t k = 0; k < n; ++k) {
        row[k] -= loop.strides[d * n + k] * loop.item_size[k] * (loop.sizes[d] - 1);
      }
      index[d] = 0;
    }
  }
}

std::vector<int64_t> broadcast_strides(const sdk::Tensor& t, size_t ndim) {
  std::vector<int64_t> strides(ndim, 0);
  const size_t lead = ndim - static_cast<size_t>(t.dim());
  for (size_t d = 0; d < static_cast<size_t>(t.dim()); ++d) {
    strides[lead + d] = t.sizes()[d] == 1 ? 0 : t.strides()[d];
  }
  return strides;
}

}  // namespace loom::cpu
