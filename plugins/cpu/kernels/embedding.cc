// Index-driven nn ops on CPU tensors: embedding (the out= kernel of the Shaped op: rows of
// the weight gathered by indices of any shape), embedding_bag (bags reduced straight from
// the weight) and one_hot (not structured: its output size may depend on the data).
#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>

#include "../isa.h"
#include "../kernels.h"
#include "../parallel.h"
#include "../scalar_types.h"
#include "../strided_loop.h"

namespace loom::cpu {
namespace {

// Calls f(index) for every element of an int32 or int64 tensor, in row-major order.
template <typename F>
void for_each_index(const sdk::Tensor& indices, const char* op, F&& f) {
  const sdk::Tensor* operands[] = {&indices};
  auto run = [&](auto tag) {
    using I = decltype(tag);
    for_each_element(indices.sizes(), operands, [&](char* const* p) {
      f(static_cast<int64_t>(*reinterpret_cast<const I*>(p[0])));
    });
  };
  if (indices.dtype() == LOOM_DTYPE_INT32) {
    run(int32_t{});
  } else if (indices.dtype() == LOOM_DTYPE_INT64) {
    run(int64_t{});
  } else {
    unsupported_dtype(indices.dtype(), op, "int32 or int64 indices");
  }
}

// padding_idx, scale_grad_by_freq and sparse only change the gradient.
sdk::Tensor embedding_out(const sdk::Tensor& weight, const sdk::Tensor& indices, int64_t, bool,
                          bool, const sdk::Tensor& out) {
  const char* op = "loom::embedding";
  const int64_t rows = weight.sizes()[0], width = weight.sizes()[1];
  const int64_t row_stride = weight.strides()[0], col_stride = weight.strides()[1];
  const int64_t item = weight.view().dl.dtype.bits / 8;
  const char* src = weight.data<char>();
  char* dst = out.data<char>();
  std::vector<int64_t> picked;
  picked.reserve(static_cast<size_t>(indices.numel()));
  for_each_index(indices, op, [&](int64_t index) {
    if (index < 0 || index >= rows) {
      throw sdk::Error(std::string("[") + op + "] index " + std::to_string(index) +
                       " is out of range for a weight of " + std::to_string(rows) + " rows");
    }
    picked.push_back(index);
  });
  // the rows are copied on the thread pool
  const int64_t count = static_cast<int64_t>(picked.size());
  parallel_for(0, count, grain_for(width), [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const char* row = src + picked[p] * row_stride * item;
      char* target = dst + p * width * item;
      if (col_stride == 1) {
        std::memcpy(target, row, static_cast<size_t>(width * item));
      } else {
        for (int64_t j = 0; j < width; ++j) {
          std::memcpy(target + j * item, row + j * col_stride * item, static_cast<size_t>(item));
        }
      }
    }
  });
  return out;
}

// int64 classes in [0, num_classes) to rows of zeros with a 1 at the class; num_classes
// -1 means the largest class + 1.
sdk::Tensor one_hot(const sdk::Tensor& self, int64_t num_classes) {
  const char* op = "loom::one_hot";
  auto fail = [&](const std::string& detail) {
    throw sdk::Error(std::string("[") + op + "] " + detail);
  };
  if (self.dtype() != LOOM_DTYPE_INT64) {
    fail(std::string("expected an int64 input, found ") + dtype_name(self.dtype()));
  }
  if (num_classes < -1) {
    fail("expected num_classes >= 0 (or -1 to infer it), found " + std::to_string(num_classes));
  }
  std::vector<int64_t> classes;
  classes.reserve(static_cast<size_t>(self.numel()));
  for_each_index(self, op, [&](int64_t c) { classes.push_back(c); });
  if (num_classes == -1) {
    if (classes.empty()) fail("can't infer num_classes from an empty input; pass num_classes");
    num_classes = 0;
    for (int64_t c : classes) num_classes = std::max(num_classes, c + 1);
  }
  for (int64_t c : classes) {
    if (c < 0 || c >= num_classes) {
      fail("class " + std::to_string(c) + " is out of range for " + std::to_string(num_classes) +
           " classes");
    }
  }
  std::vector<int64_t> sizes(self.sizes().begin(), self.sizes().end());
  sizes.push_back(num_classes);
  sdk::Tensor out = sdk::empty(sizes, LOOM_DTYPE_INT64, self.device());
  int64_t* dst = out.data<int64_t>();
  std::fill(dst, dst + out.numel(), int64_t{0});
  for (size_t i = 0; i < classes.size(); ++i) dst[i * num_classes + classes[i]] = 1;
  return out;
}

// Note [embedding_bag kernel]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The op library decomposes embedding_bag into an index_select of every row and a
// scatter_add by bag, which writes all the gathered rows out once; here each bag's rows
// are summed (or maxed) straight from the weight into the bag's result row, the bags split
// over the thread pool. The checks, the bag bookkeeping (offset2bag, bag_size,
// max_indices) and the results are the decomposition's: sums accumulate in the dtype's
// opmath type in index order, means divide by the bag's count of indices other than
// padding_idx, empty bags give zeros, and max keeps the first of equal maxima (a NaN only
// wins as a bag's first value, as in PyTorch's CPU kernel). Each bag's indices are
// range-checked before its rows are read. The weight's rows are scattered, so the sum
// is bound by their loads: contiguous float rows are summed in the AVX-512/AVX2 clone in
// blocks of 64 columns held in registers, and each bag first prefetches the rows
// kPrefetchDistance indices ahead (16 measured best of 4-64; non-temporal prefetches
// were 4x slower).
constexpr int64_t kPrefetchDistance = 16;

template <typename T>
[[gnu::always_inline]] inline void prefetch_row(const T* row, int64_t width) {
  for (int64_t at = 0; at < width * static_cast<int64_t>(sizeof(T)); at += 64) {
    __builtin_prefetch(reinterpret_cast<const char*>(row) + at);
  }
}

// One bag's sum of contiguous rows (ids[begin, end) other than pad) added into sums, in
// the active instruction set's clone; rows kPrefetchDistance ahead are prefetched, as the
// rows are scattered over the weight.
struct BagSumLoop {
  // The bag's rows summed into sums[column, column + Block), the block's partial sums held
  // in registers across the bag (a compile-time Block unrolls fully).
  template <int64_t Block, typename T, typename Acc>
  [[gnu::always_inline]] static inline void sum_block(const T* weight, int64_t row_stride,
                                                      const int64_t* ids, int64_t begin,
                                                      int64_t end, int64_t pad, int64_t column,
                                                      Acc* __restrict sums) {
    Acc block[Block];
    for (int64_t j = 0; j < Block; ++j) block[j] = sums[column + j];
    for (int64_t i = begin; i < end; ++i) {
      if (ids[i] == pad) continue;
      const T* __restrict row = weight + ids[i] * row_stride + column;
      for (int64_t j = 0; j < Block; ++j) block[j] += static_cast<Acc>(row[j]);
    }
    for (int64_t j = 0; j < Block; ++j) sums[column + j] = block[j];
  }

  template <typename T, typename Acc>
  [[gnu::always_inline]] static inline void run(int, const T* weight, int64_t row_stride,
                                                const int64_t* ids, int64_t begin, int64_t end,
                                                int64_t n, int64_t pad, int64_t width,
                                                Acc* __restrict sums) {
    // The rows kPrefetchDistance indices ahead of this bag's are scattered over the
    // weight: ask for them before summing (one batch per bag measured best).
    for (int64_t i = begin + kPrefetchDistance; i < std::min(n, end + kPrefetchDistance); ++i) {
      prefetch_row(weight + ids[i] * row_stride, width);
    }
    int64_t column = 0;
    for (; column + 64 <= width; column += 64) {
      sum_block<64>(weight, row_stride, ids, begin, end, pad, column, sums);
    }
    for (; column + 16 <= width; column += 16) {
      sum_block<16>(weight, row_stride, ids, begin, end, pad, column, sums);
    }
    for (; column < width; ++column) {
      sum_block<1>(weight, row_stride, ids, begin, end, pad, column, sums);
    }
  }
};

// The values of a 1-D int64 or int32 index tensor: its own data when it is contiguous
// int64, else a converted copy.
struct IndexList {
  std::vector<int64_t> storage;
  const int64_t* data = nullptr;
  int64_t size = 0;
  int64_t operator[](int64_t i) const { return data[i]; }
};

IndexList read_index_list(const sdk::Tensor& t, const char* op, const char* name) {
  if (t.dim() != 1 || (t.dtype() != LOOM_DTYPE_INT64 && t.dtype() != LOOM_DTYPE_INT32)) {
    throw sdk::Error(std::string("[") + op + "] expected 1-D int64 or int32 " + name + ", found " +
                     shape_string(t.sizes()) + " " + dtype_name(t.dtype()));
  }
  IndexList list;
  list.size = t.numel();
  if (t.dtype() == LOOM_DTYPE_INT64 && (t.numel() < 2 || t.strides()[0] == 1)) {
    list.data = t.data<int64_t>();
    return list;
  }
  list.storage.reserve(static_cast<size_t>(t.numel()));
  for_each_index(t, op, [&](int64_t v) { list.storage.push_back(v); });
  list.data = list.storage.data();
  return list;
}

std::tuple<sdk::Tensor, sdk::Tensor, sdk::Tensor, sdk::Tensor> embedding_bag(
    const sdk::Tensor& weight, const sdk::Tensor& indices, const sdk::Tensor& offsets, bool,
    int64_t mode, bool, const std::optional<sdk::Tensor>& per_sample_weights,
    bool include_last_offset, std::optional<int64_t> padding_idx) {
  const char* op = "loom::embedding_bag";
  auto fail = [&](const std::string& detail) {
    throw sdk::Error(std::string("[") + op + "] " + detail);
  };
  // The op library checked the arguments and the offsets (Note [Argument checks]).
  const IndexList ids = read_index_list(indices, op, "indices");
  const IndexList starts = read_index_list(offsets, op, "offsets");
  const int64_t num_rows = weight.sizes()[0], width = weight.sizes()[1];
  const int64_t n = ids.size;
  // Indices are range-checked per bag, before the bag's rows are read; the first one out
  // of range is reported after the parallel loop.
  std::atomic<bool> out_of_range{false};
  auto report_out_of_range = [&] {
    for (int64_t i = 0; i < n; ++i) {
      if (ids[i] < 0 || ids[i] >= num_rows) {
        fail("index " + std::to_string(ids[i]) + " is out of range for a weight of " +
             std::to_string(num_rows) + " rows");
      }
    }
  };
  const int64_t bags = starts.size - (include_last_offset ? 1 : 0);
  const int64_t pad =
      padding_idx && *padding_idx < 0 ? *padding_idx + num_rows : padding_idx.value_or(-1);
  auto bag_end = [&](int64_t b) { return b + 1 < bags ? starts[b + 1] : n; };
  const std::vector<int64_t> shape_2d = {bags, width}, shape_bags = {bags}, shape_n = {n};
  sdk::Tensor out = sdk::empty(shape_2d, weight.dtype(), weight.device());
  sdk::Tensor offset2bag = sdk::empty(shape_n, LOOM_DTYPE_INT64, weight.device());
  sdk::Tensor bag_size = sdk::empty(shape_bags, LOOM_DTYPE_INT64, weight.device());
  sdk::Tensor max_indices =
      sdk::empty(mode == 2 ? shape_2d : shape_bags, LOOM_DTYPE_INT64, weight.device());
  int64_t* bag_of = offset2bag.data<int64_t>();
  int64_t* counts = bag_size.data<int64_t>();
  if (bags == 0) {  // else every index is in a bag
    std::fill(bag_of, bag_of + n, 0);
    report_out_of_range();
  }
  const int64_t row_stride = weight.strides()[0], col_stride = weight.strides()[1];
  dispatch_floating_types(weight.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    using Acc = acc_type<T>;
    const T* w = weight.data<T>();
    const T* sample_weights = per_sample_weights ? per_sample_weights->data<T>() : nullptr;
    const int64_t sample_stride = per_sample_weights ? per_sample_weights->strides()[0] : 0;
    T* result = out.data<T>();
    int64_t* arg = mode == 2 ? max_indices.data<int64_t>() : nullptr;
    const bool contiguous_sums = mode != 2 && !sample_weights && col_stride == 1;
    parallel_for(
        0, bags, grain_for(width * std::max<int64_t>(1, n / std::max<int64_t>(bags, 1))),
        [&](int64_t begin, int64_t end) {
          std::vector<Acc> acc(static_cast<size_t>(width));
          for (int64_t b = begin; b < end; ++b) {
            const int64_t first = starts[b], last = bag_end(b);
            std::fill(bag_of + first, bag_of + last, b);
            uint64_t largest = 0;  // as unsigned, a negative index is larger than any
            int64_t count = last - first;
            for (int64_t i = first; i < last; ++i) {
              largest = std::max(largest, static_cast<uint64_t>(ids[i]));
            }
            if (pad >= 0) {
              for (int64_t i = first; i < last; ++i) count -= ids[i] == pad;
            }
            counts[b] = count;
            if (largest >= static_cast<uint64_t>(num_rows)) {
              out_of_range.store(true, std::memory_order_relaxed);
              continue;
            }
            std::fill(acc.begin(), acc.end(), Acc(0));
            int64_t* where = arg ? arg + b * width : nullptr;
            if (where) std::fill(where, where + width, 0);
            if (contiguous_sums) {
              run_with_isa<BagSumLoop, kIsaCloned<T>>(0, w, row_stride, ids.data, starts[b],
                                                      bag_end(b), n, pad, width, acc.data());
            } else {
              bool first = true;
              for (int64_t i = starts[b]; i < bag_end(b); ++i) {
                // Rows are scattered over the weight: ask for a later one early.
                if (i + kPrefetchDistance < n)
                  prefetch_row(w + ids[i + kPrefetchDistance] * row_stride, width * col_stride);
                if (ids[i] == pad) continue;
                const T* row = w + ids[i] * row_stride;
                if (mode == 2) {
                  for (int64_t j = 0; j < width; ++j) {
                    const Acc v = static_cast<Acc>(row[j * col_stride]);
                    if (first || v > acc[j]) {
                      acc[j] = v;
                      where[j] = ids[i];
                    }
                  }
                  first = false;
                } else if (sample_weights) {
                  const Acc scale = static_cast<Acc>(sample_weights[i * sample_stride]);
                  for (int64_t j = 0; j < width; ++j) {
                    acc[j] += static_cast<Acc>(
                        static_cast<T>(static_cast<Acc>(row[j * col_stride]) * scale));
                  }
                } else {
                  for (int64_t j = 0; j < width; ++j)
                    acc[j] += static_cast<Acc>(row[j * col_stride]);
                }
              }
            }
            const Acc divisor = mode == 1 && counts[b] > 0 ? static_cast<Acc>(counts[b]) : Acc(1);
            for (int64_t j = 0; j < width; ++j)
              result[b * width + j] = static_cast<T>(acc[j] / divisor);
          }
        });
  });
  if (out_of_range.load()) report_out_of_range();
  if (mode != 2) std::copy(counts, counts + bags, max_indices.data<int64_t>());
  return {out, offset2bag, bag_size, max_indices};
}

}  // namespace

void register_embedding_kernels(sdk::Registrar& r) {
  r.impl<&embedding_out>("loom::embedding.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&embedding_bag>("loom::embedding_bag", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&one_hot>("loom::one_hot", LOOM_KEY_CPU);
  r.capability("loom::one_hot", LOOM_KEY_CPU, {LOOM_DTYPE_INT64});
}

}  // namespace loom::cpu
