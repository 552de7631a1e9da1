// Sorting kernels on CPU tensors: sort (stable) and topk along one dim, for every dtype,
// lines split over the thread pool (float32 and int32 as packed integer keys). NaN sorts
// as the largest value, as in PyTorch.
// Outputs (values of self's dtype, int64 indices) arrive allocated and contiguous.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "../index_loop.h"
#include "../isa.h"
#include "../kernels.h"
#include "../parallel.h"
#include "../scalar_types.h"

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

// Note [Packed sort keys]
// ~~~~~~~~~~~~~~~~~~~~~~~
// float32 and int32 lines sort as one uint64 per element: the key mapped to a uint32 of
// the same order (int32: the sign bit flipped; float: positives get the sign bit,
// negatives are inverted, -0.0 counts as +0.0 and every NaN as the largest), inverted
// for descending, above the element's position. One integer comparison then gives the
// order of the general comparator below: ties by position (stable), NaN last (first when
// descending).
// Written without branches, so that PackKeysLoop's clones vectorise it.
[[gnu::always_inline]] inline uint32_t ordered_bits(int32_t v) {
  return static_cast<uint32_t>(v) ^ 0x80000000u;
}
[[gnu::always_inline]] inline uint32_t ordered_bits(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  bits = v == 0.0f ? 0u : bits;  // -0.0 ties with +0.0
  const uint32_t negative = static_cast<uint32_t>(static_cast<int32_t>(bits) >> 31);
  return v != v ? 0xFFFFFFFFu : bits ^ (negative | 0x80000000u);  // NaN: the largest
}

// Packs a contiguous line's keys (Note [Packed sort keys]) in the active ISA clone.
struct PackKeysLoop {
  template <typename T>
  [[gnu::always_inline]] static inline void run(int, const T* __restrict line, int64_t n,
                                                uint32_t flip, uint64_t* __restrict packed) {
    for (int64_t i = 0; i < n; ++i) {
      packed[i] =
          (static_cast<uint64_t>(ordered_bits(line[i]) ^ flip) << 32) | static_cast<uint64_t>(i);
    }
  }
};

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
    // (key, position) pairs sorted by a strict total order: NaN last (first when
    // descending), ties by position, so std::sort, and partial_sort for topk, give the
    // stable order.
    struct Keyed {
      Key key;
      int64_t position;
    };
    auto before = [descending](const Keyed& a, const Keyed& b) {
      const bool nx = is_nan_key(a.key), ny = is_nan_key(b.key);
      if (nx || ny) return nx == ny ? a.position < b.position : (descending ? nx : ny);
      if (a.key != b.key) return descending ? a.key > b.key : a.key < b.key;
      return a.position < b.position;
    };
    const int64_t stride = s.strides[d];  // bytes between a line's elements
    // Row-major position of a line's first output (index[d] is 0).
    auto line_base = [&](const int64_t* index) {
      int64_t base = 0;
      for (size_t j = 0; j < outer.size(); ++j) {
        base = base * (static_cast<int64_t>(j) == d ? k : outer[j]) + index[j];
      }
      return base;
    };
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, int32_t>) {
      if (length <= int64_t{0xFFFFFFFF}) {  // positions fit the low 32 bits
        parallel_for(
            0, count_of(outer), grain_for(length * log_length), [&](int64_t begin, int64_t end) {
              std::vector<uint64_t> packed(static_cast<size_t>(length));
              const uint32_t flip = descending ? 0xFFFFFFFFu : 0u;
              for_each_index_in(outer, begin, end, [&](const int64_t* index, int64_t) {
                const char* line = s.at(index);
                const int64_t base = line_base(index);
                if (stride == static_cast<int64_t>(sizeof(T))) {
                  run_with_isa<PackKeysLoop, true>(0, reinterpret_cast<const T*>(line), length,
                                                   flip, packed.data());
                } else {
                  for (int64_t i = 0; i < length; ++i) {
                    T v;
                    std::memcpy(&v, line + i * stride, sizeof(T));
                    packed[i] = (uint64_t{ordered_bits(v) ^ flip} << 32) | static_cast<uint64_t>(i);
                  }
                }
                if (k < length) {
                  std::partial_sort(packed.begin(), packed.begin() + k, packed.end());
                } else {
                  std::sort(packed.begin(), packed.end());
                }
                for (int64_t i = 0; i < k; ++i) {
                  const int64_t at = static_cast<int64_t>(packed[i] & 0xFFFFFFFFu);
                  std::memcpy(out_values + base + i * inner, line + at * stride, sizeof(T));
                  out_indices[base + i * inner] = at;
                }
              });
            });
        return;
      }
    }
    auto sort_range = [&](int64_t begin, int64_t end) {
      std::vector<Keyed> keyed(static_cast<size_t>(length));
      for_each_index_in(outer, begin, end, [&](const int64_t* index, int64_t) {
        const char* line = s.at(index);  // index[d] is 0: the line's first element
        const int64_t base = line_base(index);
        for (int64_t i = 0; i < length; ++i) {
          T v;
          std::memcpy(&v, line + i * stride, sizeof(T));
          keyed[i] = {static_cast<Key>(v), i};
        }
        if (k < length) {
          std::partial_sort(keyed.begin(), keyed.begin() + k, keyed.end(), before);
        } else {
          std::sort(keyed.begin(), keyed.end(), before);
        }
        for (int64_t i = 0; i < k; ++i) {
          std::memcpy(out_values + base + i * inner, line + keyed[i].position * stride, sizeof(T));
          out_indices[base + i * inner] = keyed[i].position;
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
  r.impl<&sort_out>("loom::sort.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&topk_out>("loom::topk.out", LOOM_KEY_CPU, sdk::dtypes::all);
}

}  // namespace loom::cpu
