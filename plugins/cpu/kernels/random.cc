// Random ops on CPU tensors: uniform_, normal_, bernoulli_ / bernoulli, random_,
// randperm and dropout, all computed from the Philox stream of loom/sdk/philox.hpp.
//
// Note [CPU random kernels]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// Each kernel checks its arguments first (a rejected call leaves the generator where
// it was), then reserves numel counters once (sdk::reserve_random) and gives element i
// (its row-major position in the logical shape, whatever the strides) the block of
// counter offset + i (Note [Random stream layout]). So a value depends only on
// (seed, offset, i): splitting [0, numel) into chunks for threads, in any way, gives
// the same tensor. The value formulas, which a vendor backend follows to match CPU:
//   uniform_(from, to)   T(from + (to - from) * u), u = uniform_float(w0) for float32 and
//                        narrower, uniform_double(w0, w1) for float64, computed in double;
//                        a result that rounds up to `to` becomes T(from) (stays in [from, to))
//   normal_(mean, std)   T(mean + std * z), z = normal_float / normal_double, in double
//   bernoulli*(p)        1 if uniform_double(w0, w1) < p else 0, converted to T
//   random_(from, to)    T(from + uniform_below(block, to - from)), 64-bit wrapping
//   dropout(p, train)    0 if uniform_double(w0, w1) < p else T(x * (1 / (1 - p))) in double
//                        (a dropped NaN becomes 0)
//   randperm(n)          indices 0..n-1 sorted by (bits64(w0, w1) of the index, index)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "../isa.h"
#include "../kernels.h"
#include "../parallel.h"
#include "../scalar_types.h"
#include "../strided_loop.h"
#include "loom/sdk/random.hpp"

namespace loom::cpu {
namespace {

// "1.5", "-2", "inf": numbers in error messages.
std::string number(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%g", v);
  return buffer;
}

[[noreturn]] void fail(const char* op, const std::string& detail) {
  throw sdk::Error(std::string("[") + op + "] " + detail);
}

// Calls body(element, i) for the elements of t at row-major positions i in [begin, end)
// of its logical shape, for any strides. Chunks of [0, numel) may run on different
// threads; the position, not the visiting order, decides each element's random block.
template <typename T, typename Body>
void for_each_position(const sdk::Tensor& t, int64_t begin, int64_t end, Body&& body) {
  if (begin >= end) return;
  T* data = t.data<T>();
  if (t.is_contiguous()) {
    for (int64_t i = begin; i < end; ++i) body(data[i], static_cast<uint64_t>(i));
    return;
  }
  const std::span<const int64_t> sizes = t.sizes();
  const std::span<const int64_t> strides = t.strides();
  const size_t ndim = sizes.size();
  // The multi-index of `begin` and its element offset.
  std::vector<int64_t> index(ndim, 0);
  int64_t offset = 0;
  for (size_t d = ndim, rest = static_cast<size_t>(begin); d-- > 0;) {
    index[d] = static_cast<int64_t>(rest % static_cast<size_t>(sizes[d]));
    rest /= static_cast<size_t>(sizes[d]);
    offset += index[d] * strides[d];
  }
  const int64_t inner_size = sizes[ndim - 1];
  const int64_t inner_stride = strides[ndim - 1];
  int64_t i = begin;
  while (i < end) {
    // The rest of the current innermost row.
    const int64_t run = std::min(inner_size - index[ndim - 1], end - i);
    for (int64_t k = 0; k < run; ++k) {
      body(data[offset + k * inner_stride], static_cast<uint64_t>(i + k));
    }
    i += run;
    offset += run * inner_stride;
    index[ndim - 1] += run;
    // Carry into the outer dims.
    for (size_t d = ndim - 1; d > 0 && index[d] == sizes[d]; --d) {
      offset -= sizes[d] * strides[d];
      index[d] = 0;
      ++index[d - 1];
      offset += strides[d - 1];
    }
  }
}

// Every element of t, split over the thread pool: body runs concurrently on disjoint
// positions, and what it computes depends on the position alone (the Note above).
// Elementary operations per element of a random kernel: a Philox block (10 rounds) and
// a conversion; sets the pool's grain.
constexpr int64_t kRandomWorkPerElement = 32;

template <typename T, typename Body>
void for_each_position(const sdk::Tensor& t, const Body& body) {
  parallel_for(0, t.numel(), grain_for(kRandomWorkPerElement),
               [&](int64_t begin, int64_t end) { for_each_position<T>(t, begin, end, body); });
}

// The Philox blocks of `count` consecutive counters, word k of block j in words[k][j],
// in run_with_isa's clones: the loop over counters vectorises (its rounds unrolled), so
// each round's 32x32->64-bit products become vector multiplies. The words are those of
// sdk::PhiloxStream::block, bit for bit.
struct PhiloxBlocksLoop {
  [[gnu::always_inline]] static inline void run(int, uint64_t seed, uint64_t first_counter,
                                                int64_t count, uint32_t* __restrict w0,
                                                uint32_t* __restrict w1, uint32_t* __restrict w2,
                                                uint32_t* __restrict w3) {
    using namespace sdk::detail;
    const uint32_t seed_lo = static_cast<uint32_t>(seed);
    const uint32_t seed_hi = static_cast<uint32_t>(seed >> 32);
    for (int64_t j = 0; j < count; ++j) {
      const uint64_t counter = first_counter + static_cast<uint64_t>(j);
      uint32_t c0 = static_cast<uint32_t>(counter), c1 = static_cast<uint32_t>(counter >> 32);
      uint32_t c2 = 0, c3 = 0, k0 = seed_lo, k1 = seed_hi;
      for (int round = 0; round < 10; ++round) {
        const uint64_t p0 = static_cast<uint64_t>(kPhiloxMultiplier0) * c0;
        const uint64_t p1 = static_cast<uint64_t>(kPhiloxMultiplier1) * c2;
        c0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
        c1 = static_cast<uint32_t>(p1);
        c2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
        c3 = static_cast<uint32_t>(p0);
        k0 += kPhiloxWeyl0;  // the key of the next round
        k1 += kPhiloxWeyl1;
      }
      w0[j] = c0;
      w1[j] = c1;
      w2[j] = c2;
      w3[j] = c3;
    }
  }
};

// for_each_position with each element's block: body(element, stream.block(i), i). With
// AVX-512 the blocks of a run of positions are computed together (PhiloxBlocksLoop)
// before the run is visited. GCC's vector code for that loop pays off only there (one
// instruction narrows the 64-bit products to words); with AVX2 or the baseline it
// measured no faster than computing each element's block in its own scalar rounds, as
// done then.
template <typename T, typename Body>
void for_each_random_position(const sdk::Tensor& t, const sdk::PhiloxStream& stream,
                              const Body& body) {
  if (active_isa() != Isa::Avx512) {
    for_each_position<T>(t, [&](T& x, uint64_t i) { body(x, stream.block(i), i); });
    return;
  }
  constexpr int64_t kRun = 512;  // blocks per batch: 8 KiB of words, in L1
  parallel_for(0, t.numel(), grain_for(kRandomWorkPerElement), [&](int64_t begin, int64_t end) {
    uint32_t words[4][kRun];
    for (int64_t first = begin; first < end; first += kRun) {
      const int64_t last = std::min(end, first + kRun);
      run_with_isa<PhiloxBlocksLoop, true>(0, stream.seed,
                                           stream.offset + static_cast<uint64_t>(first),
                                           last - first, words[0], words[1], words[2], words[3]);
      for_each_position<T>(t, first, last, [&](T& x, uint64_t i) {
        const size_t j = static_cast<size_t>(i) - static_cast<size_t>(first);
        body(x, sdk::PhiloxBlock{words[0][j], words[1][j], words[2][j], words[3][j]}, i);
      });
    }
  });
}

// --- per-dtype facts ---

// True for the dtypes computed with uniform_float / normal_float.
template <typename T>
inline constexpr bool uses_float_words_v = !std::is_same_v<T, double>;

template <typename T>
double uniform01(const sdk::PhiloxBlock& b) {
  if constexpr (uses_float_words_v<T>) {
    return sdk::uniform_float(b[0]);
  } else {
    return sdk::uniform_double(b[0], b[1]);
  }
}

template <typename T>
double standard_normal(const sdk::PhiloxBlock& b) {
  if constexpr (uses_float_words_v<T>) {
    return sdk::normal_float(b);
  } else {
    return sdk::normal_double(b);
  }
}

// --- kernels ---

sdk::Tensor uniform_(const sdk::Tensor& self, double from, double to) {
  // The op library checked from <= to and the bounds (Note [Argument checks]).
  dispatch_floating_types(self.dtype(), "uniform_", [&]<typename T>(T) {
    const double range = to - from;
    const sdk::PhiloxStream stream =
        sdk::reserve_random(self.device(), static_cast<uint64_t>(self.numel()));
    const T low = static_cast<T>(from);
    for_each_random_position<T>(self, stream, [&](T& x, const sdk::PhiloxBlock& b, uint64_t) {
      T v = static_cast<T>(from + range * uniform01<T>(b));
      if (static_cast<double>(v) >= to && from < to) v = low;
      x = v;
    });
  });
  return self;
}

sdk::Tensor normal_(const sdk::Tensor& self, double mean, double std) {
  // The op library checked std and mean (Note [Argument checks]).
  dispatch_floating_types(self.dtype(), "normal_", [&]<typename T>(T) {
    const sdk::PhiloxStream stream =
        sdk::reserve_random(self.device(), static_cast<uint64_t>(self.numel()));
    for_each_random_position<T>(self, stream, [&](T& x, const sdk::PhiloxBlock& b, uint64_t) {
      x = static_cast<T>(mean + std * standard_normal<T>(b));
    });
  });
  return self;
}

sdk::Tensor bernoulli_float_(const sdk::Tensor& self, double p) {  // p checked by the op library
  dispatch_all_types(self.dtype(), "bernoulli_", [&]<typename T>(T) {
    const sdk::PhiloxStream stream =
        sdk::reserve_random(self.device(), static_cast<uint64_t>(self.numel()));
    for_each_random_position<T>(self, stream, [&](T& x, const sdk::PhiloxBlock& b, uint64_t) {
      x = static_cast<T>(sdk::uniform_double(b[0], b[1]) < p ? 1 : 0);
    });
  });
  return self;
}

// A new tensor like self (contiguous) whose element i is 1 with probability self[i].
sdk::Tensor bernoulli(const sdk::Tensor& self) {
  sdk::Tensor out = sdk::empty(self.sizes(), self.dtype(), self.device());
  dispatch_floating_types(self.dtype(), "bernoulli", [&]<typename T>(T) {
    // in order, on this thread: the first bad probability is the one reported
    for_each_position<const T>(self, 0, self.numel(), [&](const T& p, uint64_t i) {
      const double q = static_cast<double>(p);
      if (!(q >= 0.0 && q <= 1.0)) {
        fail("bernoulli", "expected probabilities in [0, 1], found " + number(q) + " at element " +
                              std::to_string(i));
      }
    });
    const sdk::PhiloxStream stream =
        sdk::reserve_random(self.device(), static_cast<uint64_t>(self.numel()));
    T* result = out.data<T>();
    for_each_random_position<const T>(
        self, stream, [&](const T& p, const sdk::PhiloxBlock& b, uint64_t i) {
          result[i] =
              static_cast<T>(sdk::uniform_double(b[0], b[1]) < static_cast<double>(p) ? 1 : 0);
        });
  });
  return out;
}

sdk::Tensor random_from_(const sdk::Tensor& self, int64_t from, std::optional<int64_t> to) {
  dispatch_all_types(self.dtype(), "random_", [&]<typename T>(T) {
    const auto [first, count] = sdk::random_integer_range(self.dtype(), from, to);
    const sdk::PhiloxStream stream =
        sdk::reserve_random(self.device(), static_cast<uint64_t>(self.numel()));
    for_each_random_position<T>(self, stream, [&](T& x, const sdk::PhiloxBlock& b, uint64_t) {
      const uint64_t v = static_cast<uint64_t>(first) + sdk::uniform_below(b, count);
      x = static_cast<T>(static_cast<int64_t>(v));
    });
  });
  return self;
}

sdk::Tensor randperm_out(int64_t n, const sdk::Tensor& out) {
  sdk::check_randperm(n, out.dtype(), out.sizes());
  dispatch_numeric_types(out.dtype(), "randperm", [&]<typename T>(T) {
    const sdk::PhiloxStream stream = sdk::reserve_random(out.device(), static_cast<uint64_t>(n));
    struct Keyed {
      uint64_t key;
      int64_t index;
    };
    std::vector<Keyed> keyed(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const sdk::PhiloxBlock b = stream.block(static_cast<uint64_t>(i));
      keyed[static_cast<size_t>(i)] = {sdk::philox_bits64(b[0], b[1]), i};
    }
    std::sort(keyed.begin(), keyed.end(), [](const Keyed& a, const Keyed& b) {
      return a.key != b.key ? a.key < b.key : a.index < b.index;
    });
    for_each_position<T>(
        out, [&](T& x, uint64_t i) { x = static_cast<T>(keyed[static_cast<size_t>(i)].index); });
  });
  return out;
}

sdk::Tensor dropout(const sdk::Tensor& input, double p,
                    bool train) {  // p checked by the op library
  if (!train) return input;
  sdk::Tensor out = sdk::empty(input.sizes(), input.dtype(), input.device());
  dispatch_floating_types(input.dtype(), "dropout", [&]<typename T>(T) {
    const double scale = p < 1.0 ? 1.0 / (1.0 - p) : 0.0;
    const sdk::PhiloxStream stream =
        sdk::reserve_random(input.device(), static_cast<uint64_t>(input.numel()));
    T* result = out.data<T>();
    for_each_random_position<const T>(
        input, stream, [&](const T& x, const sdk::PhiloxBlock& b, uint64_t i) {
          result[i] = sdk::uniform_double(b[0], b[1]) < p
                          ? static_cast<T>(0)
                          : static_cast<T>(static_cast<double>(x) * scale);
        });
  });
  return out;
}

}  // namespace

void register_random_kernels(sdk::Registrar& r) {
  r.impl<&uniform_>("loom::uniform_", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&normal_>("loom::normal_", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&bernoulli_float_>("loom::bernoulli_.float", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&bernoulli>("loom::bernoulli", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&random_from_>("loom::random_.from", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&randperm_out>("loom::randperm.out", LOOM_KEY_CPU, sdk::dtypes::numeric);
  r.impl<&dropout>("loom::dropout", LOOM_KEY_CPU, sdk::dtypes::floating);
}

}  // namespace loom::cpu
