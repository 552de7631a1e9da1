// Indexing kernels on CPU tensors: index_select, gather, scatter (src, value),
// scatter_add, scatter_reduce, nonzero and advanced indexing (index.Tensor). Index tensors are
// int64 (int32 too for index_select); an index out of range is an error naming the op, the index
// and the size. Outputs of the structured ops arrive allocated and contiguous; nonzero and
// index.Tensor (data-dependent shapes) allocate their own.
#include <algorithm>
#include <cstring>

#include "../index_loop.h"
#include "../isa.h"
#include "../kernels.h"
#include "../parallel.h"
#include "../scalar_types.h"
#include "../strided_loop.h"
#include "loom/sdk/reference/advanced_index.hpp"
#include "loom/sdk/reference/scatter_reduce.hpp"

namespace loom::cpu {
namespace {

sdk::Tensor index_select_out(const sdk::Tensor& self, int64_t dim, const sdk::Tensor& index,
                             const sdk::Tensor& out) {
  const int64_t d = wrap_dim(dim, self.dim(), "index_select");
  const std::vector<int64_t> sizes = sizes_at_least_1d(self);
  std::vector<int64_t> storage;
  const std::span<const int64_t> indices =
      checked_indices(index, sizes[d], d, "index_select", storage);
  if (out.numel() == 0) return out;
  // Each index copies one slice of self (self without dim d) into out's slice: a strided
  // copy per index, the indices split over the thread pool (a large slice is split by
  // the copy itself when there are few indices).
  const StridedBytes src(self), dst(out);
  std::vector<int64_t> slice = sizes, src_strides(src.strides), dst_strides(dst.strides);
  slice[d] = 1;
  for (size_t k = 0; k < slice.size(); ++k) {
    src_strides[k] /= src.item;
    dst_strides[k] /= dst.item;
  }
  const int64_t slice_numel = count_of(slice);
  parallel_for(0, static_cast<int64_t>(indices.size()), grain_for(slice_numel),
               [&](int64_t begin, int64_t end) {
                 for (int64_t j = begin; j < end; ++j) {
                   copy_strided(slice, dst.base + j * dst.strides[d], dst_strides.data(),
                                src.base + indices[j] * src.strides[d], src_strides.data(),
                                src.item);
                 }
               });
  return out;
}

// One row of gather: dst[i] = src[i * step + idx[i] * jump] (element strides), in
// run_with_isa's clones, where the loop becomes vector gathers.
struct GatherRow {
  template <typename U>
  [[gnu::always_inline]] static inline void run(int, const U* src, const int64_t* idx, U* dst,
                                                int64_t width, int64_t step, int64_t jump) {
    if (jump == 1 && step == 0) {
      for (int64_t i = 0; i < width; ++i) dst[i] = src[idx[i]];
    } else {
      for (int64_t i = 0; i < width; ++i) dst[i] = src[i * step + idx[i] * jump];
    }
  }
};

// gather: out[..., i, ...] = self[..., index[..., i, ...], ...] along dim d, row by row
// of the last dim (rows split over the thread pool), typed by element size.
template <typename U>
void gather_rows(const StridedBytes& self, const std::vector<int64_t>& shape, int64_t d,
                 const int64_t* indices, U* out) {
  const size_t last = shape.size() - 1;
  const int64_t width = shape[last];
  const bool along_last = static_cast<int64_t>(last) == d;
  // Within a row, element i moves by `step` in self and its index moves it by `jump`.
  const int64_t step = along_last ? 0 : self.strides[last] / self.item;
  const int64_t jump = self.strides[d] / self.item;
  std::vector<int64_t> rows = shape;
  rows[last] = 1;
  parallel_for(0, count_of(rows), grain_for(4 * width), [&](int64_t begin, int64_t end) {
    for_each_index_in(rows, begin, end, [&](const int64_t* at, int64_t row) {
      int64_t offset = 0;  // the row's start in self, without dim d
      for (size_t k = 0; k < last; ++k) {
        if (static_cast<int64_t>(k) != d) offset += at[k] * self.strides[k];
      }
      run_with_isa<GatherRow, true>(0, reinterpret_cast<const U*>(self.base + offset),
                                    indices + row * width, out + row * width, width, step, jump);
    });
  });
}

sdk::Tensor gather_out(const sdk::Tensor& self, int64_t dim, const sdk::Tensor& index, bool,
                       const sdk::Tensor& out) {
  const int64_t d = wrap_dim(dim, self.dim(), "gather");
  const int64_t size = sizes_at_least_1d(self)[d];
  std::vector<int64_t> storage;
  // every index is checked before out is written: a bad one leaves out= untouched
  const std::span<const int64_t> indices = checked_indices(index, size, d, "gather", storage);
  if (out.numel() == 0) return out;
  // out has index's shape and is contiguous: its row-major order is the indices' order
  const StridedBytes src(self);
  const std::vector<int64_t> shape = sizes_at_least_1d(out);
  switch (src.item) {
    case 1:
      gather_rows(src, shape, d, indices.data(), out.data<uint8_t>());
      break;
    case 2:
      gather_rows(src, shape, d, indices.data(), out.data<uint16_t>());
      break;
    case 4:
      gather_rows(src, shape, d, indices.data(), out.data<uint32_t>());
      break;
    default:
      gather_rows(src, shape, d, indices.data(), out.data<uint64_t>());
      break;
  }
  return out;
}

// Calls write(dst, from) for every element of `index`, where dst points at the element of
// the contiguous `out` (self's shape) that the index addresses and `from` at the element
// of `src` at the index element's position (null without src). The lines of
// `index` along `dim` are split over the thread pool; each line is walked in order by one
// thread, and two lines never address the same element, so writes do not race and a
// repeated index keeps the last write as in a serial loop.
template <typename Write>
void for_each_scatter_target(const sdk::Tensor& out, int64_t dim, const sdk::Tensor& index,
                             const StridedBytes* src, const char* op, Write&& write) {
  const int64_t d = wrap_dim(dim, out.dim(), op);
  StridedBytes dst(out);
  std::vector<int64_t> storage;
  const std::span<const int64_t> indices = checked_indices(index, dst.sizes[d], d, op, storage);
  const std::vector<int64_t> shape = sizes_at_least_1d(index);
  if (count_of(shape) == 0) return;
  std::vector<int64_t> lines = shape;
  lines[d] = 1;
  const int64_t length = shape[d];
  int64_t inner = 1;  // the row-major stride of `dim` in index
  for (size_t j = d + 1; j < shape.size(); ++j) inner *= shape[j];
  const int64_t dst_step = dst.strides[d], src_step = src ? src->strides[d] : 0;
  parallel_for(0, count_of(lines), grain_for(8 * length), [&](int64_t begin, int64_t end) {
    for_each_index_in(lines, begin, end, [&](const int64_t* line, int64_t) {
      // the line's first element: its row-major position in index and its byte offsets
      // in out and src (line[d] is 0, so dim d adds nothing)
      int64_t k = 0, dst_offset = 0, src_offset = 0;
      for (size_t j = 0; j < shape.size(); ++j) {
        k = k * shape[j] + line[j];
        dst_offset += line[j] * dst.strides[j];
        if (src) src_offset += line[j] * src->strides[j];
      }
      char* dst_line = dst.base + dst_offset;
      const char* src_at = src ? src->base + src_offset : nullptr;
      for (int64_t i = 0; i < length; ++i, k += inner) {
        write(dst_line + indices[k] * dst_step, src_at);
        if (src) src_at += src_step;
      }
    });
  });
}

// The scatter family's first step, out = self. Both are usually dense and alike (a
// gradient's zeros, or self itself when the op runs in place): then a block copy, or
// nothing; other layouts go element by element.
void copy_self(const sdk::Tensor& self, const sdk::Tensor& out) {
  if (self.is_contiguous() && out.is_contiguous() && self.dtype() == out.dtype() &&
      self.numel() == out.numel()) {
    if (self.data<char>() == out.data<char>()) return;
    const int64_t item = static_cast<int64_t>(sdk::element_size(self.dtype()));
    const char* src = self.data<const char>();
    char* dst = out.data<char>();
    parallel_for(0, self.numel() * item, kGrainSize * 4, [&](int64_t begin, int64_t end) {
      std::memcpy(dst + begin, src + begin, static_cast<size_t>(end - begin));
    });
    return;
  }
  const size_t n = sizes_at_least_1d(self).size();
  copy_mapped(self, out, [&](const int64_t* at, int64_t* src) {
    for (size_t d = 0; d < n; ++d) src[d] = at[d];
  });
}

sdk::Tensor scatter_src_out(const sdk::Tensor& self, int64_t dim, const sdk::Tensor& index,
                            const sdk::Tensor& src, const sdk::Tensor& out) {
  copy_self(self, out);
  StridedBytes s(src);
  for_each_scatter_target(out, dim, index, &s, "scatter", [&](char* dst, const char* from) {
    std::memcpy(dst, from, static_cast<size_t>(s.item));
  });
  return out;
}

sdk::Tensor scatter_value_out(const sdk::Tensor& self, int64_t dim, const sdk::Tensor& index,
                              sdk::Scalar value, const sdk::Tensor& out) {
  copy_self(self, out);
  dispatch_all_types(out.dtype(), "scatter", [&](auto tag) {
    using T = decltype(tag);
    T v;
    if constexpr (std::is_same_v<T, bool>) {
      v = value.to_double() != 0.0;
    } else if constexpr (is_integral_v<T>) {
      v = static_cast<T>(value.to_int());
    } else {
      v = static_cast<T>(value.to_double());
    }
    for_each_scatter_target(out, dim, index, nullptr, "scatter",
                            [&](char* dst, const char*) { std::memcpy(dst, &v, sizeof(T)); });
  });
  return out;
}

sdk::Tensor scatter_add_out(const sdk::Tensor& self, int64_t dim, const sdk::Tensor& index,
                            const sdk::Tensor& src, const sdk::Tensor& out) {
  copy_self(self, out);
  StridedBytes s(src);
  dispatch_all_types(out.dtype(), "scatter_add", [&](auto tag) {
    using T = decltype(tag);
    for_each_scatter_target(out, dim, index, &s, "scatter_add", [&](char* dst, const char* from) {
      T a, b;
      std::memcpy(&a, dst, sizeof(T));
      std::memcpy(&b, from, sizeof(T));
      T sum;
      if constexpr (std::is_same_v<T, bool>) {
        sum = a || b;
      } else if constexpr (is_integral_v<T>) {
        sum = static_cast<T>(static_cast<wrap_type<T>>(a) + static_cast<wrap_type<T>>(b));
      } else {
        sum = static_cast<T>(static_cast<acc_type<T>>(a) + static_cast<acc_type<T>>(b));
      }
      std::memcpy(dst, &sum, sizeof(T));
    });
  });
  return out;
}

template <typename T>
bool is_nonzero(T v) {
  if constexpr (is_reduced_float_v<T>) {
    return static_cast<float>(v) != 0.0f;
  } else {
    return v != T(0);
  }
}

// The multi-indices (row-major) of the nonzero elements of `self`.
std::vector<std::vector<int64_t>> nonzero_indices(const sdk::Tensor& self, const char* op) {
  std::vector<std::vector<int64_t>> found;
  StridedBytes s(self);
  dispatch_all_types(self.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    for_each_index(s.sizes, [&](const int64_t* at) {
      T v;
      std::memcpy(&v, s.at(at), sizeof(T));
      if (is_nonzero(v)) found.emplace_back(at, at + s.sizes.size());
    });
  });
  return found;
}

sdk::Tensor nonzero(const sdk::Tensor& self) {
  std::vector<std::vector<int64_t>> found = nonzero_indices(self, "nonzero");
  const int64_t ndim = self.dim();
  sdk::Tensor out =
      sdk::empty({static_cast<int64_t>(found.size()), ndim}, LOOM_DTYPE_INT64, self.device());
  int64_t* p = out.data<int64_t>();
  for (const auto& index : found) {
    for (int64_t d = 0; d < ndim; ++d) *p++ = index[static_cast<size_t>(d)];
  }
  return out;
}

// index.Tensor: Note [Advanced indexing] in loom/sdk/reference/advanced_index.hpp.
sdk::Tensor index_tensor(const sdk::Tensor& self, const std::vector<sdk::Tensor>& raw) {
  constexpr const char* op = "index.Tensor";
  // Expand bool masks into int64 index lists; keep per-dim entries (undefined = None).
  struct Entry {
    bool defined = false;
    std::vector<int64_t> shape;
    std::vector<int64_t> values;  // row-major
  };
  std::vector<Entry> entries;
  for (size_t i = 0; i < raw.size(); ++i) {
    const sdk::Tensor& t = raw[i];
    if (!t.defined()) {
      entries.emplace_back();
      continue;
    }
    if (t.dtype() == LOOM_DTYPE_BOOL || t.dtype() == LOOM_DTYPE_UINT8) {
      const int64_t first = static_cast<int64_t>(entries.size());
      sdk::check_index_mask(op, i, first, t.sizes(), self.sizes());
      std::vector<std::vector<int64_t>> found = nonzero_indices(t, op);
      for (int64_t d = 0; d < t.dim(); ++d) {
        Entry e{true, {static_cast<int64_t>(found.size())}, {}};
        for (const auto& idx : found) e.values.push_back(idx[static_cast<size_t>(d)]);
        entries.push_back(std::move(e));
      }
      continue;
    }
    // An int64 index tensor: the op library checked the dtypes (Note [Argument checks]).
    entries.push_back(
        Entry{true, std::vector<int64_t>(t.sizes().begin(), t.sizes().end()), read_indices(t, op)});
  }
  std::vector<const std::vector<int64_t>*> index_shapes;
  for (const Entry& e : entries) index_shapes.push_back(e.defined ? &e.shape : nullptr);
  const sdk::AdvancedIndexLayout layout =
      sdk::advanced_index_layout(self.sizes(), index_shapes, op);
  const std::vector<int64_t>& indexed = layout.indexed;
  if (indexed.empty()) {  // only None entries: a copy of self
    sdk::Tensor out = sdk::empty(self.sizes(), self.dtype(), self.device());
    copy_self(self, out);
    return out;
  }
  const std::vector<int64_t>& bshape = layout.broadcast_shape;
  const std::vector<int64_t>& out_shape = layout.out_shape;
  const std::vector<int64_t>& source_dim = layout.source_dim;
  const int64_t insert_at = layout.broadcast_at;
  // Range check every index once, wrapping negatives.
  for (int64_t d : indexed) {
    for (int64_t& v : entries[d].values) v = checked_index(v, self.sizes()[d], d, op, true);
  }
  sdk::Tensor out = sdk::empty(out_shape, self.dtype(), self.device());
  // Row-major strides of each index over the broadcast shape (0 on broadcast dims).
  std::vector<std::vector<int64_t>> bstrides;
  for (int64_t d : indexed) {
    const std::vector<int64_t>& s = entries[d].shape;
    std::vector<int64_t> st(bshape.size(), 0);
    int64_t stride = 1;
    for (size_t k = s.size(); k-- > 0;) {
      const size_t b = bshape.size() - s.size() + k;
      st[b] = s[k] == 1 ? 0 : stride;
      stride *= s[k];
    }
    bstrides.push_back(std::move(st));
  }
  copy_mapped(self, out, [&](const int64_t* at, int64_t* src) {
    const int64_t* b = at + insert_at;  // the broadcast part of the output index
    for (size_t o = 0; o < out_shape.size(); ++o) {
      if (source_dim[o] >= 0) src[source_dim[o]] = at[o];
    }
    for (size_t k = 0; k < indexed.size(); ++k) {
      int64_t flat = 0;
      for (size_t j = 0; j < bshape.size(); ++j) flat += b[j] * bstrides[k][j];
      src[indexed[k]] = entries[indexed[k]].values[flat];
    }
  });
  return out;
}

// Note [scatter_reduce] in loom/sdk/reference/scatter_reduce.hpp. Each out element counts
// the src values that reached it (lines of index never share a target, so the counts do
// not race); the first one replaces self's value when include_self is false, and the
// counts divide the means at the end.
sdk::Tensor scatter_reduce_out(const sdk::Tensor& self, int64_t dim, const sdk::Tensor& index,
                               const sdk::Tensor& src, std::string_view reduce, bool include_self,
                               const sdk::Tensor& out) {
  const char* op = "scatter_reduce";
  const sdk::ScatterReduce kind = sdk::scatter_reduce_of(op, reduce);
  copy_self(self, out);
  StridedBytes s(src), o(out);
  // counts[k] for the out element k items past out's first (strides are non-negative)
  int64_t extent = 1;
  for (size_t d = 0; d < o.sizes.size(); ++d) extent += (o.sizes[d] - 1) * (o.strides[d] / o.item);
  const bool counted = kind == sdk::ScatterReduce::Mean || !include_self;
  std::vector<int64_t> counts(counted && out.numel() > 0 ? static_cast<size_t>(extent) : 0, 0);
  dispatch_numeric_types(out.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    // sums and products of integers wrap (wrap_type); comparisons keep T's sign
    auto combine = [kind](T a, T b) -> T {
      if constexpr (is_integral_v<T>) {
        if (kind != sdk::ScatterReduce::Max && kind != sdk::ScatterReduce::Min) {
          using W = wrap_type<T>;
          return static_cast<T>(
              sdk::scatter_combine<W>(kind, static_cast<W>(a), static_cast<W>(b)));
        }
      }
      using A = acc_type<T>;
      return static_cast<T>(sdk::scatter_combine<A>(kind, static_cast<A>(a), static_cast<A>(b)));
    };
    for_each_scatter_target(out, dim, index, &s, op, [&](char* dst, const char* from) {
      T a, b;
      std::memcpy(&a, dst, sizeof(T));
      std::memcpy(&b, from, sizeof(T));
      bool first = false;
      if (counted) first = counts[static_cast<size_t>((dst - o.base) / o.item)]++ == 0;
      const T result = first && !include_self ? b : combine(a, b);
      std::memcpy(dst, &result, sizeof(T));
    });
    if (kind != sdk::ScatterReduce::Mean) return;
    // integer means divide in int64 (a count may not fit T)
    using M = std::conditional_t<is_integral_v<T>, int64_t, acc_type<T>>;
    const int64_t self_count = include_self ? 1 : 0;
    for (size_t k = 0; k < counts.size(); ++k) {
      if (counts[k] == 0) continue;
      char* dst = o.base + static_cast<int64_t>(k) * o.item;
      T sum;
      std::memcpy(&sum, dst, sizeof(T));
      const T mean =
          static_cast<T>(sdk::scatter_mean<M>(static_cast<M>(sum), counts[k] + self_count));
      std::memcpy(dst, &mean, sizeof(T));
    }
  });
  return out;
}

}  // namespace

void register_indexing_kernels(sdk::Registrar& r) {
  r.impl<&index_select_out>("loom::index_select.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&gather_out>("loom::gather.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&scatter_src_out>("loom::scatter.src_out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&scatter_value_out>("loom::scatter.value_out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&scatter_add_out>("loom::scatter_add.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&scatter_reduce_out>("loom::scatter_reduce.two_out", LOOM_KEY_CPU, sdk::dtypes::numeric);
  r.impl<&nonzero>("loom::nonzero", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&index_tensor>("loom::index.Tensor", LOOM_KEY_CPU, sdk::dtypes::all);
}

}  // namespace loom::cpu
