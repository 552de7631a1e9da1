// Sorting kernels on CPU tensors: sort (stable) and topk along one dim, for every dtype,
// lines split over the thread pool. NaN sorts as the largest value, as in PyTorch. Outputs (values
// of self's dtype, int64 indices) arrive allocated and contiguous.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "index_loop.h"
#include "kernels.h"
#include "parallel.h"
#include "scalar_types.h"

namespace loom::cpu {
namespace {

template <typename K>
bool is_nan_key(K v) {
  if constexpr (std::is_floating_point_v<K>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

// Sorts every line of `self` along `dim` and writes the first `k` elements of each
// (ascending, or descending) to the contiguous `values` and `indices`.
void sort_lines(const sdk::Tensor& self, int64_t dim, int64_t k, bool descending,
                const sdk::Tensor& values, const sdk::Tensor& indices, const char* op) {
  const int64_t d = wrap_dim(dim, self.dim(), op);
  StridedBytes s(self);
  const int64_t length = s.sizes[d];
  if (k == 0 || self.numel() == 0) return;
  std::vector<int64_t> outer = s.sizes;
  outer[d] = 1;
  // Contiguous outputs: the stride of `d` is the product of the later sizes.
  int64_t inner = 1;
  for (size_t j = d + 1; j < outer.size(); ++j) inner *= outer[j];
  // Lines split over the thread pool; sorting one costs about length * log2(length).
  int64_t log_length = 1;
  while ((int64_t{1} << log_length) < length) ++log_length;
  dispatch_all_types(self.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    using Key = std::conditional_t<std::is_same_v<T, bool>, int, acc_type<T>>;
    T* out_values = values.data<T>();
    int64_t* out_indices = indices.data<int64_t>();
    auto sort_range = [&](int64_t begin, int64_t end) {
      std::vector<Key> keys(static_cast<size_t>(length));
      std::vector<int64_t> order(static_cast<size_t>(length));
      std::vector<int64_t> at(outer.size());
      for_each_index_in(outer, begin, end, [&](const int64_t* index, int64_t) {
        at.assign(index, index + outer.size());
        int64_t base = 0;  // row-major position of this line's first output element
        for (size_t j = 0; j < outer.size(); ++j) {
          base = base * (static_cast<int64_t>(j) == d ? k : outer[j]) + index[j];
        }
        for (int64_t i = 0; i < length; ++i) {
          at[d] = i;
          T v;
          std::memcpy(&v, s.at(at.data()), sizeof(T));
          keys[i] = static_cast<Key>(v);
        }
        std::iota(order.begin(), order.end(), 0);
        // A strict total order: NaN last (first when descending), ties by position, so
        // partial_sort for topk keeps the stable order too.
        auto before = [&](int64_t a, int64_t b) {
          const Key x = keys[a], y = keys[b];
          const bool nx = is_nan_key(x), ny = is_nan_key(y);
          if (nx || ny) return nx == ny ? a < b : (descending ? nx : ny);
          if (x != y) return descending ? x > y : x < y;
          return a < b;
        };
        if (k < length) {
          std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
        } else {
          std::sort(order.begin(), order.end(), before);
        }
        for (int64_t i = 0; i < k; ++i) {
          at[d] = order[i];
          std::memcpy(out_values + base + i * inner, s.at(at.data()), sizeof(T));
          out_indices[base + i * inner] = order[i];
        }
      });
    };
    parallel_for(0, count_of(outer), grain_for(length * log_length), sort_range);
  });
}

std::tuple<sdk::Tensor, sdk::Tensor> sort_out(const sdk::Tensor& self, int64_t dim, bool descending,
                                              const sdk::Tensor& values,
                                              const sdk::Tensor& indices) {
  const int64_t d = wrap_dim(dim, self.dim(), "sort");
  sort_lines(self, d, sizes_at_least_1d(self)[d], descending, values, indices, "sort");
  return {values, indices};
}

std::tuple<sdk::Tensor, sdk::Tensor> topk_out(const sdk::Tensor& self, int64_t k, int64_t dim,
                                              bool largest, bool, const sdk::Tensor& values,
                                              const sdk::Tensor& indices) {
  const int64_t d = wrap_dim(dim, self.dim(), "topk");
  const int64_t size = sizes_at_least_1d(self)[d];
  if (k < 0 || k > size) {
    throw sdk::Error("[topk] expected k in [0, " + std::to_string(size) +
                     "], found k = " + std::to_string(k));
  }
  // Always sorted (sorted=False allows any order, so sorted order is valid too).
  sort_lines(self, d, k, largest, values, indices, "topk");
  return {values, indices};
}

}  // namespace

void register_sort_kernels(sdk::Registrar& r) {
  register_kernel<&sort_out>(r, "loom::sort.out", DTypeSet::All);
  register_kernel<&topk_out>(r, "loom::topk.out", DTypeSet::All);
}

}  // namespace loom::cpu
