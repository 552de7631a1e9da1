// Helpers of the shape and indexing kernels (declared in index_loop.h).
#include "index_loop.h"

#include <atomic>

#include "elementwise_loop.h"
#include "isa.h"
#include "parallel.h"
#include "scalar_types.h"
#include "strided_loop.h"

namespace loom::cpu {

StridedBytes::StridedBytes(const sdk::Tensor& t)
    : base(t.data<char>()), item(t.view().dl.dtype.bits / 8) {
  for (int64_t d = 0; d < t.dim(); ++d) {
    sizes.push_back(t.sizes()[d]);
    strides.push_back(t.strides()[d] * item);
  }
  if (sizes.empty()) {
    sizes.push_back(1);
    strides.push_back(0);
  }
}

void copy_strided(std::span<const int64_t> shape, char* dst, const int64_t* dst_strides,
                  const char* src, const int64_t* src_strides, int64_t item) {
  auto copy = [&](auto tag) {
    using U = decltype(tag);
    map_strided<U, U>([](U v) { return v; }, shape, {dst_strides, src_strides},
                      {dst, const_cast<char*>(src)});
  };
  switch (item) {
    case 1:
      return copy(uint8_t{});
    case 2:
      return copy(uint16_t{});
    case 4:
      return copy(uint32_t{});
    case 8:
      return copy(uint64_t{});
    default:
      throw sdk::Error("[cpu] copy_strided expected elements of 1, 2, 4 or 8 bytes, found " +
                       std::to_string(item));
  }
}

std::vector<int64_t> sizes_at_least_1d(const sdk::Tensor& t) {
  if (t.dim() == 0) return {1};
  return std::vector<int64_t>(t.sizes().begin(), t.sizes().end());
}

std::vector<int64_t> read_indices(const sdk::Tensor& index, const char* op) {
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(index.numel()));
  StridedBytes s(index);
  auto read = [&](auto tag) {
    using I = decltype(tag);
    if (index.is_contiguous()) {  // the common case: one pass over the elements
      const I* p = index.data<I>();
      out.assign(p, p + index.numel());
      return;
    }
    for_each_index(s.sizes, [&](const int64_t* i) {
      I v;
      std::memcpy(&v, s.at(i), sizeof(I));
      out.push_back(static_cast<int64_t>(v));
    });
  };
  if (index.dtype() == LOOM_DTYPE_INT64) {
    read(int64_t{});
  } else if (index.dtype() == LOOM_DTYPE_INT32) {
    read(int32_t{});
  } else {
    throw sdk::Error(std::string("[") + op + "] expected an int64 index tensor, found " +
                     dtype_name(index.dtype()));
  }
  return out;
}

std::span<const int64_t> index_values(const sdk::Tensor& index, const char* op,
                                      std::vector<int64_t>& storage) {
  if (index.dtype() == LOOM_DTYPE_INT64 && index.is_contiguous()) {
    return {index.data<int64_t>(), static_cast<size_t>(index.numel())};
  }
  storage = read_indices(index, op);
  return storage;
}

namespace {

// any_index_outside's pass: unsigned comparison catches negative values too.
struct IndexOutsideLoop {
  [[gnu::always_inline]] static inline void run(int, const int64_t* values, int64_t count,
                                                uint64_t size, uint64_t* outside) {
    uint64_t any = 0;
    for (int64_t k = 0; k < count; ++k) any |= static_cast<uint64_t>(values[k]) >= size;
    *outside = any;
  }
};

}  // namespace

bool any_index_outside(const int64_t* values, int64_t count, int64_t size) {
  uint64_t outside = 0;
  run_with_isa<IndexOutsideLoop, true>(0, values, count, static_cast<uint64_t>(size), &outside);
  return outside != 0;
}

void check_each_index(std::span<const int64_t> values, int64_t size, int64_t dim, const char* op) {
  for (int64_t i : values) checked_index(i, size, dim, op);
}

std::span<const int64_t> checked_indices(const sdk::Tensor& index, int64_t size, int64_t dim,
                                         const char* op, std::vector<int64_t>& storage) {
  const std::span<const int64_t> values = index_values(index, op, storage);
  // Only when some index is out of range is the first such index looked up for the message.
  std::atomic<bool> outside{false};
  parallel_for(0, static_cast<int64_t>(values.size()), kGrainSize, [&](int64_t begin, int64_t end) {
    if (any_index_outside(values.data() + begin, end - begin, size)) {
      outside.store(true, std::memory_order_relaxed);
    }
  });
  if (outside.load(std::memory_order_relaxed)) check_each_index(values, size, dim, op);
  return values;
}

int64_t checked_index(int64_t i, int64_t size, int64_t dim, const char* op, bool allow_negative) {
  if (i >= 0 && i < size) return i;
  if (allow_negative && i < 0 && i >= -size) return i + size;
  throw sdk::Error(std::string("[") + op + "] index " + std::to_string(i) +
                   " is out of range for dim " + std::to_string(dim) + " of size " +
                   std::to_string(size));
}

sdk::Tensor converted(const sdk::Tensor& t, LoomDType dtype, const char* op) {
  if (t.dtype() == dtype) return t;
  sdk::Tensor out = sdk::empty(t.sizes(), dtype, t.device());
  const sdk::Tensor* operands[2] = {&out, &t};
  dispatch_all_types(dtype, op, [&](auto out_tag) {
    using D = decltype(out_tag);
    dispatch_all_types(t.dtype(), op, [&](auto in_tag) {
      using S = decltype(in_tag);
      for_each_element(t.sizes(), operands, [](char* const* p) {
        S v;
        std::memcpy(&v, p[1], sizeof(S));
        D r;
        if constexpr (std::is_same_v<D, bool>) {
          r = static_cast<float>(v) != 0.0f;
        } else {
          r = static_cast<D>(v);
        }
        std::memcpy(p[0], &r, sizeof(D));
      });
    });
  });
  return out;
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  const int64_t n = std::max<int64_t>(ndim, 1);
  if (dim < -n || dim >= n) {
    throw sdk::Error(std::string("[") + op + "] dim " + std::to_string(dim) +
                     " is out of range for a tensor of " + std::to_string(ndim) + " dims");
  }
  return dim < 0 ? dim + n : dim;
}

}  // namespace loom::cpu
