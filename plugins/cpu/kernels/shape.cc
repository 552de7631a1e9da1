// Shape kernels on CPU tensors: cat, flip, roll, repeat, tril, triu. They move elements
// (bytes) without arithmetic, so every dtype takes the same path, with the elements split
// over the thread pool; outputs arrive allocated (shape and dtype from the op's shape
// rule) and contiguous.
#include <algorithm>
#include <cstring>

#include "../index_loop.h"
#include "../kernels.h"

namespace loom::cpu {
namespace {

// Note [Contiguous cat]
// ~~~~~~~~~~~~~~~~~~~~~
// With contiguous inputs, a row of the output (one index of the dims before `dim`) is
// each input's block of that row, one after the other: out is the inputs' blocks
// interleaved, so the copy is memcpy of byte ranges. The output's bytes are split over
// the thread pool evenly (a cat along dim 0 of two tensors still uses every thread), each
// range copied as the pieces of the blocks it covers. Other inputs copy through the
// strided loop, one input at a time.
void cat_contiguous(const std::vector<sdk::Tensor>& srcs, int64_t d, const sdk::Tensor& out,
                    int64_t item) {
  int64_t inner = item;  // bytes per index of dim d
  for (int64_t i = d + 1; i < out.dim(); ++i) inner *= out.sizes()[i];
  std::vector<int64_t> starts;  // each block's first byte in a row of out
  std::vector<int64_t> block_bytes;
  int64_t row = 0;
  for (const sdk::Tensor& t : srcs) {
    starts.push_back(row);
    block_bytes.push_back(t.sizes()[d] * inner);
    row += block_bytes.back();
  }
  if (row == 0) return;
  char* const dst = out.data<char>();
  const int64_t total = out.numel() * item;
  constexpr int64_t kGrainBytes = 64 * 1024;
  parallel_for(0, total, kGrainBytes, [&](int64_t begin, int64_t end) {
    while (begin < end) {
      const int64_t r = begin / row, in_row = begin % row;
      // the last block starting at or before in_row (empty blocks are skipped past)
      const size_t k = static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), in_row) -
                                           starts.begin() - 1);
      const int64_t within = in_row - starts[k];
      const int64_t n = std::min(end - begin, block_bytes[k] - within);
      std::memcpy(dst + begin, srcs[k].data<char>() + r * block_bytes[k] + within,
                  static_cast<size_t>(n));
      begin += n;
    }
  });
}

sdk::Tensor cat_out(const std::vector<sdk::Tensor>& tensors, int64_t dim, const sdk::Tensor& out) {
  if (out.numel() == 0) return out;
  const int64_t d = wrap_dim(dim, out.dim(), "cat");
  const int64_t item = StridedBytes(out).item;
  std::vector<sdk::Tensor> srcs;
  bool all_contiguous = out.is_contiguous();
  for (const sdk::Tensor& t : tensors) {
    if (t.dim() == 1 && t.sizes()[0] == 0) continue;  // Note [Legacy empty tensors in cat]
    srcs.push_back(converted(t, out.dtype(), "cat"));
    all_contiguous = all_contiguous && srcs.back().is_contiguous();
  }
  if (all_contiguous) {
    cat_contiguous(srcs, d, out, item);
    return out;
  }
  int64_t offset = 0;
  for (const sdk::Tensor& src : srcs) {
    // each input is a strided copy into its slice of out along d
    copy_strided(src.sizes(), out.data<char>() + offset * out.strides()[d] * item,
                 out.strides().data(), src.data<char>(), src.strides().data(), item);
    offset += src.sizes()[d];
  }
  return out;
}

sdk::Tensor flip_out(const sdk::Tensor& self, std::span<const int64_t> dims,
                     const sdk::Tensor& out) {
  std::vector<int64_t> sizes = sizes_at_least_1d(self);
  std::vector<bool> flipped(sizes.size(), false);
  for (int64_t d : dims) flipped[wrap_dim(d, self.dim(), "flip")] = true;
  copy_mapped(self, out, [&](const int64_t* index, int64_t* src) {
    for (size_t d = 0; d < sizes.size(); ++d) {
      src[d] = flipped[d] ? sizes[d] - 1 - index[d] : index[d];
    }
  });
  return out;
}

// shift mod size, in [0, size): any int64 shift, without overflow.
int64_t wrapped_shift(int64_t shift, int64_t size) {
  const int64_t r = shift % size;
  return r < 0 ? r + size : r;
}

// ((i - shift) mod size), in [0, size), for i and shift in [0, size).
int64_t rolled(int64_t i, int64_t shift, int64_t size) {
  const int64_t r = i - shift;
  return r < 0 ? r + size : r;
}

sdk::Tensor roll_out(const sdk::Tensor& self, std::span<const int64_t> shifts,
                     std::span<const int64_t> dims, const sdk::Tensor& out) {
  if (out.numel() == 0) return out;
  std::vector<int64_t> sizes = sizes_at_least_1d(self);
  if (dims.empty()) {
    // The flattened tensor rolls: element i of the row-major order comes from i - shift.
    const int64_t n = self.numel();
    const int64_t shift = wrapped_shift(shifts[0], n);
    copy_mapped(self, out, [&](const int64_t* index, int64_t* src) {
      int64_t flat = 0;
      for (size_t d = 0; d < sizes.size(); ++d) flat = flat * sizes[d] + index[d];
      flat = rolled(flat, shift, n);
      for (size_t d = sizes.size(); d-- > 0;) {
        src[d] = flat % sizes[d];
        flat /= sizes[d];
      }
    });
    return out;
  }
  std::vector<int64_t> shift(sizes.size(), 0);
  for (size_t i = 0; i < dims.size(); ++i) {  // a dim given twice rolls by both shifts
    const int64_t d = wrap_dim(dims[i], self.dim(), "roll");
    shift[d] = wrapped_shift(shift[d] + wrapped_shift(shifts[i], sizes[d]), sizes[d]);
  }
  copy_mapped(self, out, [&](const int64_t* index, int64_t* src) {
    for (size_t d = 0; d < sizes.size(); ++d) src[d] = rolled(index[d], shift[d], sizes[d]);
  });
  return out;
}

sdk::Tensor repeat_out(const sdk::Tensor& self, std::span<const int64_t>, const sdk::Tensor& out) {
  if (out.numel() == 0) return out;
  const std::vector<int64_t> sizes = sizes_at_least_1d(self);
  const size_t lead = static_cast<size_t>(out.dim()) - static_cast<size_t>(self.dim());
  copy_mapped(self, out, [&](const int64_t* index, int64_t* src) {
    if (self.dim() == 0) {
      src[0] = 0;
      return;
    }
    for (size_t d = 0; d < sizes.size(); ++d) src[d] = index[lead + d] % sizes[d];
  });
  return out;
}

// tril keeps the elements with column - row <= diagonal, triu those with >= diagonal.
template <bool Lower>
sdk::Tensor triangle_out(const sdk::Tensor& self, int64_t diagonal, const sdk::Tensor& out) {
  StridedBytes s(self);
  const size_t n = s.sizes.size();
  char* const dst = out.data<char>();
  parallel_for(0, count_of(s.sizes), grain_for(8), [&](int64_t begin, int64_t end) {
    for_each_index_in(s.sizes, begin, end, [&](const int64_t* index, int64_t linear) {
      const int64_t offset = index[n - 1] - index[n - 2];
      char* to = dst + linear * s.item;
      if (Lower ? offset <= diagonal : offset >= diagonal) {
        copy_element(to, s.at(index), s.item);
      } else {
        std::memset(to, 0, static_cast<size_t>(s.item));  // zero bits are 0 in every dtype
      }
    });
  });
  return out;
}

}  // namespace

void register_shape_kernels(sdk::Registrar& r) {
  r.impl<&cat_out>("loom::cat.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&flip_out>("loom::flip.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&roll_out>("loom::roll.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&repeat_out>("loom::repeat.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&triangle_out<true>>("loom::tril.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&triangle_out<false>>("loom::triu.out", LOOM_KEY_CPU, sdk::dtypes::all);
}

}  // namespace loom::cpu
