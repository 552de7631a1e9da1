// map_elements: the loop under every CPU pointwise kernel. Computes
//   out[i] = f(in0[i], in1[i], ...)
// over out's shape, where every input already has out's shape (the structured-op
// contract: broadcast dims have stride 0, any operand may be non-contiguous) and the C++
// element types given as template arguments. map_strided is the same over raw operands
// with explicit strides (copy_ from a broadcast source).
//
// Two paths, both split over the thread pool with parallel_for above kGrainSize
// elements (parallel.h):
//  * all operands contiguous: one flat loop over raw pointers, chunked by index;
//  * otherwise the N-d plan of strided_loop.h (size-1 dims dropped, dims ordered by
//    out's strides, adjacent dims coalesced), chunked by the plan's linear index, each
//    chunk walked as runs of the innermost dim (for_each_run); a run whose inputs are
//    contiguous or broadcast along it takes the contiguous loop (Note [Broadcast runs]);
//    short rows that inputs repeat go through it a tile of rows at a time (Note
//    [Periodic runs]).
// The innermost loops are plain code GCC auto-vectorizes when f is simple; the
// contiguous and scalar-broadcast ones run in the AVX2 / AVX-512 clone chosen at init
// (Note [ISA dispatch] in isa.h). f is called concurrently from several threads: it
// must not write shared state except through atomics.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <utility>

#include "isa.h"
#include "loom/sdk/tensor.hpp"
#include "parallel.h"
#include "scalar_types.h"
#include "strided_loop.h"

namespace loom::cpu {

namespace detail {

// The innermost loops, always inlined into run_with_isa's clones. Each copies f so its
// captures are locals the stores through `out` cannot alias.
struct ContiguousLoop {
  template <typename F, typename Out, typename... In>
  [[gnu::always_inline]] static inline void run(const F& f, int64_t n, Out* out, const In*... in) {
    const F fn = f;
    for (int64_t i = 0; i < n; ++i) out[i] = fn(in[i]...);
  }
};

// out[i] = f(a[i], b): the second input broadcast along the run.
struct ScalarSecondLoop {
  template <typename F, typename Out, typename A, typename B>
  [[gnu::always_inline]] static inline void run(const F& f, int64_t n, Out* out, const A* a, B b) {
    const F fn = f;
    for (int64_t i = 0; i < n; ++i) out[i] = fn(a[i], b);
  }
};

// out[i] = f(a, b[i]): the first input broadcast along the run.
struct ScalarFirstLoop {
  template <typename F, typename Out, typename A, typename B>
  [[gnu::always_inline]] static inline void run(const F& f, int64_t n, Out* out, A a, const B* b) {
    const F fn = f;
    for (int64_t i = 0; i < n; ++i) out[i] = fn(a, b[i]);
  }
};

template <typename Out, typename... In, typename F>
inline void contiguous_loop(const F& f, int64_t n, Out* out, const In*... in) {
  run_with_isa<ContiguousLoop, kIsaCloned<Out, In...>>(f, n, out, in...);
}

// Note [Broadcast runs]
// ~~~~~~~~~~~~~~~~~~~~~
// A run whose inputs are each contiguous or one value broadcast along it (a per-channel
// scale on [N, C, H, W]: stride 0 on the run) goes through the contiguous loop, so it
// vectorises in every ISA clone for any number of inputs: each broadcast value is copied
// into a block of kBroadcastBlock elements on the stack, and the run is taken block by
// block with the broadcast inputs pointing at their filled blocks. f sees the same values
// as on the strided path, so the results are the same bits.
constexpr int64_t kBroadcastBlock = 256;

// A block of kBroadcastBlock elements left uninitialised (a std::tuple of std::arrays
// would zero every block on every run: 3 KiB of stores per run of 3136 floats).
template <typename T>
struct BroadcastBlock {
  BroadcastBlock() {}  // NOLINT: no member initialisation, on purpose
  T values[kBroadcastBlock];
};

template <typename Out, typename... In, typename F, size_t... K>
inline void broadcast_run(const F& f, int64_t n, Out* out, [[maybe_unused]] char* const* ptrs,
                          const int64_t* s, std::index_sequence<K...>) {
  [[maybe_unused]] const int64_t filled = std::min(n, kBroadcastBlock);
  std::tuple<BroadcastBlock<In>...> blocks;
  const std::tuple<const In*...> base{[&]() -> const In* {
    const In* p = reinterpret_cast<const In*>(ptrs[K + 1]);
    if (s[K + 1] != 0) return p;
    std::fill_n(std::get<K>(blocks).values, filled, *p);
    return std::get<K>(blocks).values;
  }()...};
  for (int64_t i = 0; i < n; i += kBroadcastBlock) {
    const int64_t count = std::min(kBroadcastBlock, n - i);
    contiguous_loop<Out, In...>(f, count, out + i, (std::get<K>(base) + s[K + 1] * i)...);
  }
}

// One run of the innermost dim: n elements, element strides s[0] (out), s[1 + k] (input k).
template <typename Out, typename... In, typename F, size_t... K>
inline void inner_loop(const F& f, int64_t n, char* const* ptrs, const int64_t* s,
                       std::index_sequence<K...>) {
  Out* out = reinterpret_cast<Out*>(ptrs[0]);
  const int64_t so = s[0];
  if (so == 1 && ((s[K + 1] == 1) && ...)) {
    contiguous_loop<Out, In...>(f, n, out, reinterpret_cast<const In*>(ptrs[K + 1])...);
    return;
  }
  if constexpr (sizeof...(In) == 2) {
    using A = std::tuple_element_t<0, std::tuple<In...>>;
    using B = std::tuple_element_t<1, std::tuple<In...>>;
    constexpr bool cloned = kIsaCloned<Out, In...>;
    const A* a = reinterpret_cast<const A*>(ptrs[1]);
    const B* b = reinterpret_cast<const B*>(ptrs[2]);
    if (so == 1 && s[1] == 1 && s[2] == 0) {
      run_with_isa<ScalarSecondLoop, cloned>(f, n, out, a, *b);
      return;
    }
    if (so == 1 && s[1] == 0 && s[2] == 1) {
      run_with_isa<ScalarFirstLoop, cloned>(f, n, out, *a, b);
      return;
    }
  }
  if (so == 1 && ((s[K + 1] == 0 || s[K + 1] == 1) && ...)) {
    broadcast_run<Out, In...>(f, n, out, ptrs, s, std::index_sequence<K...>{});
    return;
  }
  const F fn = f;
  for (int64_t i = 0; i < n; ++i) {
    out[i * so] = fn(reinterpret_cast<const In*>(ptrs[K + 1])[i * s[K + 1]]...);
  }
}

// Note [Periodic runs]
// ~~~~~~~~~~~~~~~~~~~~
// A channels-last tensor times a per-channel factor ([N, C, H, W] with C innermost, the
// factor [1, C, 1, 1]) is a plan of N * H * W rows of C elements in which the tensor and
// the output run on across rows and the factor repeats the same row. Row by row, each
// row of 64 floats is a call of the contiguous loop through for_each_run, and the calls
// cost as much as the arithmetic (batch_norm on a channels-last input spent longer in its
// normalization than in both statistics passes). Instead each repeating input is tiled
// once per call into a buffer of whole rows (kPeriodicTile elements at most), and the
// flat index range of the output goes through the contiguous loop in pieces as long as
// that buffer, the tiled inputs read at the piece's offset in it. f sees the same
// values in the same order as row by row: the same bits.
constexpr int64_t kPeriodicTile = 2048;

template <typename Out, typename... In, typename F, size_t... K>
void periodic_rows_loop(const F& f, const StridedLoop& loop, const char* const* data,
                        std::index_sequence<K...>) {
  const int64_t period = loop.inner_size();
  const int64_t tile = kPeriodicTile / period * period;
  [[maybe_unused]] const int64_t* outer =
      loop.strides.data();  // each operand's step from row to row
  [[maybe_unused]] const int64_t* inner = loop.inner_strides();
  std::tuple<std::unique_ptr<In[]>...> tiles;
  const std::tuple<const In*...> base{[&]() -> const In* {
    const In* p = reinterpret_cast<const In*>(data[K + 1]);
    if (outer[K + 1] != 0) return p;
    auto& buffer = std::get<K>(tiles);
    buffer.reset(new In[static_cast<size_t>(tile)]);
    for (int64_t i = 0; i < tile; ++i) buffer[i] = p[(i % period) * inner[K + 1]];
    return buffer.get();
  }()...};
  Out* out = reinterpret_cast<Out*>(const_cast<char*>(data[0]));
  parallel_for(0, loop.numel, kGrainSize, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end;) {
      const int64_t at = i % tile, count = std::min(end - i, tile - at);
      contiguous_loop<Out, In...>(f, count, out + i,
                                  (std::get<K>(base) + (outer[K + 1] == 0 ? at : i))...);
      i += count;
    }
  });
}

// sdk::Tensor, one per element type of a pack.
template <typename T>
struct TensorForT {
  using type = sdk::Tensor;
};
template <typename T>
using TensorFor = typename TensorForT<T>::type;

[[noreturn]] inline void operand_mismatch(const sdk::Tensor& out, const sdk::Tensor& t,
                                          LoomDType expected) {
  throw sdk::Error("[cpu] pointwise kernel expected an operand of shape " +
                       shape_string(out.sizes()) + " and dtype " + dtype_name(expected) +
                       ", found shape " + shape_string(t.sizes()) + " and dtype " +
                       dtype_name(t.dtype()),
                   LOOM_STATUS_INTERNAL);
}

template <typename T>
inline void check_operand(const sdk::Tensor& out, const sdk::Tensor& t) {
  std::span<const int64_t> sizes = t.sizes();
  std::span<const int64_t> out_sizes = out.sizes();
  bool same = sizes.size() == out_sizes.size();
  for (size_t i = 0; same && i < sizes.size(); ++i) same = sizes[i] == out_sizes[i];
  if (t.dtype() != dtype_of<T>() || !same) {
    operand_mismatch(out, t, dtype_of<T>());
  }
}

}  // namespace detail

// out[i] = f(in[i]...) over `shape` for raw operands: data[0] / element_strides[0] are
// out's, data[1 + k] / element_strides[1 + k] input k's (strides aligned with shape, 0
// on broadcast dims).
template <typename Out, typename... In, typename F>
void map_strided(const F& f, std::span<const int64_t> shape,
                 const std::array<const int64_t*, 1 + sizeof...(In)>& element_strides,
                 const std::array<char*, 1 + sizeof...(In)>& data) {
  static constexpr int64_t kItemSizes[] = {sizeof(Out), sizeof(In)...};
  const StridedLoop loop = plan_strided_loop(shape, element_strides, kItemSizes);
  if (loop.numel == 0) return;
  if (loop.numel >= detail::kPeriodicTile &&
      loop.periodic_rows(detail::kPeriodicTile / 4)) {  // Note [Periodic runs]
    detail::periodic_rows_loop<Out, In...>(f, loop, data.data(), std::index_sequence_for<In...>{});
    return;
  }
  const int64_t* inner_strides = loop.inner_strides();
  auto chunk = [&](int64_t begin, int64_t end) {
    for_each_run(loop, data.data(), begin, end, [&](char* const* ptrs, int64_t n) {
      detail::inner_loop<Out, In...>(f, n, ptrs, inner_strides, std::index_sequence_for<In...>{});
    });
  };
  if (loop.first_operand_repeats()) {  // several elements write one place: stay serial
    chunk(0, loop.numel);
  } else {
    parallel_for(0, loop.numel, kGrainSize, chunk);
  }
}

template <typename Out, typename... In, typename F>
void map_elements(const sdk::Tensor& out, F f, const detail::TensorFor<In>&... inputs) {
  static_assert(sizeof...(In) == sizeof...(inputs), "one element type per input");
  if (out.dtype() != dtype_of<Out>()) detail::operand_mismatch(out, out, dtype_of<Out>());
  (detail::check_operand<In>(out, inputs), ...);
  const int64_t numel = out.numel();
  if (numel == 0) return;

  if (out.is_contiguous() && (inputs.is_contiguous() && ...)) {
    Out* out_data = out.template data<Out>();
    const std::tuple<const In*...> in_data{inputs.template data<const In>()...};
    parallel_for(0, numel, kGrainSize, [&](int64_t begin, int64_t end) {
      std::apply(
          [&](const In*... in) {
            detail::contiguous_loop<Out, In...>(f, end - begin, out_data + begin, (in + begin)...);
          },
          in_data);
    });
    return;
  }
  map_strided<Out, In...>(f, out.sizes(), {out.strides().data(), inputs.strides().data()...},
                          {out.template data<char>(), inputs.template data<char>()...});
}

}  // namespace loom::cpu
