// Reductions on CPU tensors: sum, prod, amax, amin, max/min with indices, var, any, all
// (the out= kernels of the Shaped reduction ops; outputs arrive allocated and contiguous),
// and var_mean (a decomposition's kernel, which allocates its outputs).
// All run on the thread pool with results independent of the thread count: sum, prod,
// amax, amin, var and var_mean fold chunks of each output (below), the others split the
// outputs.
//
// Note [Deterministic sum]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// Floating-point addition is not associative, so a sum grouped by thread would change
// with LOOM_NUM_THREADS. Here the grouping depends on the input's shape alone: each
// output's reduced elements, in for_each_reduction's order, are cut into the fewest
// chunks of at most kReduceChunk elements, all of one size but the last (smaller by
// less than their count); one thread folds a chunk sequentially, and the chunks' partial
// results are folded in chunk order on the calling thread. The pool only decides who
// computes which chunk (whole outputs when each has a single chunk), so sum and prod
// give the same bits for any thread count; an output of at most kReduceChunk elements
// is folded by one thread in one pass. Floats accumulate in double, integers in
// uint64 (wrapping, read back as int64).
//
// Even chunks keep a reduction with few outputs balanced: a channels-last batch's
// statistics over [8, 64, 56, 56] are one group of 64 columns of 25088 rows, cut into
// 16384 + 8704 rows, one thread would wait a third of each pass; as 12544 + 12544 the
// two threads finish together.
#include <cmath>
#include <limits>
#include <memory>

#include "../isa.h"
#include "../kernels.h"
#include "../parallel.h"
#include "../reduction_loop.h"

namespace loom::cpu {
namespace {

using OptionalDims = std::optional<std::span<const int64_t>>;

// Reduced elements per chunk of one output (Note [Deterministic sum]).
constexpr int64_t kReduceChunk = 16384;

// How one output's reduced elements are cut (Note [Deterministic sum]).
struct Chunks {
  int64_t count;  // chunks per output
  int64_t size;   // elements per chunk (the last may have fewer)

  explicit Chunks(const ReductionPlan& plan)
      : count(std::max<int64_t>(1, (plan.reduced_numel + kReduceChunk - 1) / kReduceChunk)),
        size(std::max<int64_t>(1, (plan.reduced_numel + count - 1) / count)) {}

  int64_t begin(int64_t chunk) const { return chunk * size; }
  int64_t end(const ReductionPlan& plan, int64_t chunk) const {
    return std::min(plan.reduced_numel, (chunk + 1) * size);
  }
};

// acc[o] = the fold with `combine` of output o's chunks, each folded by
// fold_range(o, begin, end) over its reduced elements [begin, end); chunked and parallel
// as in Note [Deterministic sum].
template <typename Acc, typename FoldRange, typename Combine>
void fold_in_chunks(const ReductionPlan& plan, FoldRange fold_range, Combine combine,
                    std::vector<Acc>& acc) {
  const int64_t outputs = plan.out_numel;
  const Chunks chunks(plan);
  const int64_t per_output = chunks.count;
  auto fold = [&](int64_t o, int64_t chunk) {
    return fold_range(o, chunks.begin(chunk), chunks.end(plan, chunk));
  };
  if (per_output == 1) {  // whole outputs per thread, each folded serially
    parallel_for(0, outputs, grain_for(plan.reduced_numel), [&](int64_t first, int64_t last) {
      for (int64_t o = first; o < last; ++o) acc[o] = fold(o, 0);
    });
    return;
  }
  std::vector<Acc> partial(static_cast<size_t>(outputs * per_output));
  parallel_for(0, outputs * per_output, 1, [&](int64_t first, int64_t last) {
    for (int64_t w = first; w < last; ++w) partial[w] = fold(w / per_output, w % per_output);
  });
  for (int64_t o = 0; o < outputs; ++o) {
    Acc total = partial[o * per_output];
    for (int64_t c = 1; c < per_output; ++c) total = combine(total, partial[o * per_output + c]);
    acc[o] = total;
  }
}

// fold_in_chunks for a plan that folds in columns (Note [Column reductions]):
// fold_columns(first, width, begin, end, results) folds the reduced elements
// [begin, end) of the outputs [first, first + width) into results[0, width).
template <typename Acc, typename FoldColumns, typename Combine>
void fold_columns_in_chunks(const ReductionPlan& plan, FoldColumns fold_columns, Combine combine,
                            std::vector<Acc>& acc) {
  const ColumnGroups groups(plan);
  const int64_t outputs = plan.out_numel;
  const Chunks chunks(plan);
  const int64_t per_output = chunks.count;
  // acc may be a std::vector<bool>: results go through an array of the group's
  auto fold_into = [&](int64_t g, int64_t begin, int64_t end, auto&& store) {
    Acc results[kColumnWidth];
    fold_columns(groups.first(g), groups.width(g), begin, end, results);
    for (int64_t c = 0; c < groups.width(g); ++c) store(groups.first(g) + c, results[c]);
  };
  if (per_output == 1) {
    parallel_for(0, groups.count, grain_for(plan.reduced_numel * kColumnWidth),
                 [&](int64_t first, int64_t last) {
                   for (int64_t g = first; g < last; ++g) {
                     fold_into(g, 0, plan.reduced_numel, [&](int64_t o, Acc v) { acc[o] = v; });
                   }
                 });
    return;
  }
  std::unique_ptr<Acc[]> partial(new Acc[outputs * per_output]);  // [chunk][output]
  parallel_for(0, groups.count * per_output, 1, [&](int64_t first, int64_t last) {
    for (int64_t w = first; w < last; ++w) {
      const int64_t chunk = w % per_output;
      fold_into(w / per_output, chunks.begin(chunk), chunks.end(plan, chunk),
                [&](int64_t o, Acc v) { partial[chunk * outputs + o] = v; });
    }
  });
  for (int64_t o = 0; o < outputs; ++o) {
    Acc total = partial[o];
    for (int64_t c = 1; c < per_output; ++c) total = combine(total, partial[c * outputs + o]);
    acc[o] = total;
  }
}

// fold_in_chunks for a fold of single elements: each converted by `load` and combined
// with `combine`, starting from `identity`.
template <typename T, typename Acc, typename Load, typename Combine>
void fold_elements_in_chunks(const ReductionPlan& plan, const T* base, Acc identity, Load load,
                             Combine combine, std::vector<Acc>& acc) {
  if (folds_in_columns(plan)) {
    auto fold_columns = [&](int64_t first, int64_t width, int64_t begin, int64_t end,
                            Acc* results) {
      std::fill(results, results + width, identity);
      for_each_reduced_row_in_range(plan, base, first, begin, end,
                                    [&](const T* p, int64_t count, int64_t stride) {
                                      for (int64_t i = 0; i < count; ++i, p += stride) {
                                        for (int64_t g = 0; g < width; ++g) {
                                          results[g] = combine(results[g], load(p[g]));
                                        }
                                      }
                                    });
    };
    fold_columns_in_chunks(plan, fold_columns, combine, acc);
    return;
  }
  auto fold_range = [&](int64_t o, int64_t begin, int64_t end) {
    Acc total = identity;
    for_each_reduced_in_range(plan, base, o, begin, end,
                              [&](T v) { total = combine(total, load(v)); });
    return total;
  };
  fold_in_chunks(plan, fold_range, combine, acc);
}

// Note [Lane sums]
// ~~~~~~~~~~~~~~~~
// With one accumulator every addition waits for the one before: a pass over a chunk is a
// chain of add latencies, several times slower than reading the chunk. LaneSum keeps
// kLanes accumulators, element k of the chunk (in for_each_reduction's order) going to
// lane k % kLanes, and adds the lanes in a fixed tree at the end; the additions of a run
// of elements are independent, and a contiguous run vectorises. The grouping depends
// only on each element's position in its chunk, so a floating sum and var give the same
// bits for any thread count and for any split of the chunk into runs.
//
// 32 lanes are four AVX-512 registers of doubles (eight AVX2 ones): with 8, one register
// held them all and a run was a chain of its add latencies (a batch_norm's statistics
// 366 us against 255 us with 32, the 16M var 2.1 ms against 1.5 ms, 2 threads).
constexpr int kSumLanes = 32;

// The lanes lane[0], lane[stride], ... added in a fixed tree: halves added pairwise.
double add_lanes(const double* lane, int64_t stride) {
  double t[kSumLanes];
  for (int l = 0; l < kSumLanes; ++l) t[l] = lane[l * stride];
  for (int half = kSumLanes / 2; half > 0; half /= 2) {
    for (int l = 0; l < half; ++l) t[l] = t[l] + t[l + half];
  }
  return t[0];
}

// A contiguous run of `count` elements starting at lane `first`: element i goes to lane
// (first + i) % kSumLanes, in the active ISA's clone (Note [ISA dispatch]: the same bits
// at every level). The lanes are loaded rotated so that blocks of kSumLanes elements add
// lane-wise in registers for the whole run, the last partial block included.
struct LaneBlocks {
  template <typename Value, typename T>
  [[gnu::always_inline]] static inline void run(const Value& value, const T* p, int64_t count,
                                                double* lane, int first) {
    double acc[kSumLanes];
    for (int l = 0; l < kSumLanes; ++l) acc[l] = lane[(first + l) % kSumLanes];
    const int64_t blocks = count / kSumLanes;
    for (int64_t b = 0; b < blocks; ++b, p += kSumLanes) {
      for (int l = 0; l < kSumLanes; ++l) acc[l] += value(p[l]);
    }
    for (int64_t l = 0; l < count - blocks * kSumLanes; ++l) acc[l] += value(p[l]);
    for (int l = 0; l < kSumLanes; ++l) lane[(first + l) % kSumLanes] = acc[l];
  }
};

struct LaneSum {
  static constexpr int kLanes = kSumLanes;
  double lane[kLanes] = {};
  int next = 0;  // the lane of the next element

  // Adds value(p[i * stride]) for i in [0, count).
  template <typename T, typename Value>
  void add_run(const T* p, int64_t count, int64_t stride, Value value) {
    if (stride == 1) {
      run_with_isa<LaneBlocks, kIsaCloned<T>>(value, p, count, +lane, next);
    } else {
      for (int64_t i = 0, l = next; i < count; ++i, l = (l + 1) % kLanes) {
        lane[l] += value(p[i * stride]);
      }
    }
    next = static_cast<int>((next + count) % kLanes);
  }

  double total() const { return add_lanes(lane, 1); }
};

// LaneSum for a group of up to kColumnWidth adjacent outputs (Note [Column
// reductions]): rows of a run, lane[l][g] += value(row[g], g) for the row's lane l and
// the group's `width` columns g, in the active ISA's clone. The lanes of a group (16 KiB)
// stay in the L1 cache.
struct ColumnLaneRows {
  template <typename Value, typename T>
  [[gnu::always_inline]] static inline void run(const Value& value, const T* p, int64_t count,
                                                int64_t stride, int64_t width, double* lanes,
                                                int lane) {
    if (width == kColumnWidth) {  // a constant trip count: no remainder loop per row
      rows<kColumnWidth>(value, p, count, stride, width, lanes, lane);
    } else {
      rows<0>(value, p, count, stride, width, lanes, lane);
    }
  }

  // kWidth: the width when known at compile time, else 0
  template <int64_t kWidth, typename Value, typename T>
  [[gnu::always_inline]] static inline void rows(const Value& value, const T* p, int64_t count,
                                                 int64_t stride, int64_t width, double* lanes,
                                                 int lane) {
    const int64_t n = kWidth != 0 ? kWidth : width;
    for (int64_t i = 0; i < count; ++i, p += stride) {
      double* __restrict acc = lanes + lane * kColumnWidth;
      // kept a loop: fully unrolled first, GCC's loop vectoriser never sees it
#pragma GCC unroll 1
      for (int64_t g = 0; g < n; ++g) acc[g] += value(p[g], g);
      lane = (lane + 1) % kSumLanes;
    }
  }
};

// kColumnWidth LaneSums, one per column, whose element k goes to lane k % kSumLanes of
// its column: the same lanes, and so the same bits, as a LaneSum per output.
struct ColumnLaneSum {
  // lane l of column g at lanes[l * kColumnWidth + g]; columns past the group's width unused
  alignas(64) double lanes[kSumLanes * kColumnWidth];
  int next = 0;  // the lane of the next row

  // Zeroes the lanes of `width` columns only (a narrow group of a short reduction
  // would otherwise clear 16 KiB per chunk).
  explicit ColumnLaneSum(int64_t width) {
    for (int l = 0; l < kSumLanes; ++l) {
      std::fill_n(lanes + l * kColumnWidth, width, 0.0);
    }
  }

  // Adds value(p[i * stride + g], g) to column g for i in [0, count), g in [0, width).
  template <typename T, typename Value>
  void add_run(const T* p, int64_t count, int64_t stride, int64_t width, Value value) {
    run_with_isa<ColumnLaneRows, kIsaCloned<T>>(value, p, count, stride, width, +lanes, next);
    next = static_cast<int>((next + count) % kSumLanes);
  }

  // Column g's total, added as LaneSum::total adds.
  double total(int64_t g) const { return add_lanes(lanes + g, kColumnWidth); }
};

// sum and prod: integers accumulate in int64 (wrapping), everything else in double; a
// floating sum in lanes (Note [Lane sums]).
template <bool IsProd>
void sum_or_prod(const sdk::Tensor& self, std::span<const int64_t> dims, const sdk::Tensor& out,
                 const char* op) {
  ReductionPlan plan = plan_reduction(self, dims);
  bool integral_out = out.dtype() <= LOOM_DTYPE_INT64;
  dispatch_all_types(self.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    auto run = [&](auto acc_tag) {
      using Acc = decltype(acc_tag);
      std::vector<Acc> acc(static_cast<size_t>(plan.out_numel));
      auto load = [&](T v) {
        if constexpr (std::is_same_v<Acc, uint64_t>) {
          return static_cast<Acc>(static_cast<int64_t>(v));  // wraps like int64
        } else {
          return static_cast<Acc>(static_cast<acc_type<T>>(v));
        }
      };
      auto combine = [&](Acc a, Acc b) { return IsProd ? a * b : a + b; };
      if constexpr (!IsProd && std::is_same_v<Acc, double>) {
        // a floating sum adds in lanes (Note [Lane sums]): a chain of dependent additions
        // would be several times slower than reading the elements
        auto fold_range = [&](int64_t o, int64_t begin, int64_t end) {
          LaneSum lanes;
          for_each_reduced_row_in_range(plan, self.data<T>(), o, begin, end,
                                        [&](const T* p, int64_t count, int64_t stride) {
                                          lanes.add_run(p, count, stride, load);
                                        });
          return lanes.total();
        };
        auto fold_columns = [&](int64_t first, int64_t width, int64_t begin, int64_t end,
                                Acc* results) {
          ColumnLaneSum lanes(width);
          for_each_reduced_row_in_range(plan, self.data<T>(), first, begin, end,
                                        [&](const T* p, int64_t count, int64_t stride) {
                                          lanes.add_run(p, count, stride, width,
                                                        [&](T v, int64_t) { return load(v); });
                                        });
          for (int64_t g = 0; g < width; ++g) results[g] = lanes.total(g);
        };
        if (folds_in_columns(plan)) {
          fold_columns_in_chunks(plan, fold_columns, combine, acc);
        } else {
          fold_in_chunks(plan, fold_range, combine, acc);
        }
      } else {
        fold_elements_in_chunks(plan, self.data<T>(), IsProd ? Acc(1) : Acc(0), load, combine, acc);
      }
      if constexpr (std::is_same_v<Acc, uint64_t>) {
        std::vector<int64_t> signed_acc(acc.begin(), acc.end());
        store_values(out, signed_acc, op);
      } else {
        store_values(out, acc, op);
      }
    };
    if (is_integral_v<T> && integral_out) {
      run(uint64_t{});
    } else {
      run(double{});
    }
  });
}

sdk::Tensor sum_out(const sdk::Tensor& self, OptionalDims dim, bool, std::optional<LoomDType>,
                    const sdk::Tensor& out) {
  sum_or_prod<false>(self, dim.value_or(std::span<const int64_t>{}), out, "sum");
  return out;
}

sdk::Tensor prod_out(const sdk::Tensor& self, int64_t dim, bool, std::optional<LoomDType>,
                     const sdk::Tensor& out) {
  sum_or_prod<true>(self, {&dim, 1}, out, "prod");
  return out;
}

// amax / amin: NaN propagates (any NaN gives NaN), as in PyTorch. The extremum does not
// depend on grouping, so it folds in chunks like the sum.
template <bool IsMax>
sdk::Tensor extremum_out(const sdk::Tensor& self, std::span<const int64_t> dims, bool,
                         const sdk::Tensor& out) {
  const char* op = IsMax ? "amax" : "amin";
  ReductionPlan plan = plan_reduction(self, dims);
  dispatch_all_types(self.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    using A = acc_type<T>;
    std::vector<A> acc(static_cast<size_t>(plan.out_numel));
    A identity = IsMax ? std::numeric_limits<A>::lowest() : std::numeric_limits<A>::max();
    if constexpr (is_floating_v<T>) {
      identity = IsMax ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::infinity();
    }
    auto combine = [](A best, A v) {
      if constexpr (is_floating_v<T>) {
        if (best != best) return best;
        if (v != v) return v;
      }
      return (IsMax ? v > best : v < best) ? v : best;
    };
    fold_elements_in_chunks(
        plan, self.data<T>(), identity, [](T v) { return static_cast<A>(v); }, combine, acc);
    T* dst = out.data<T>();
    for (int64_t o = 0; o < plan.out_numel; ++o) dst[o] = static_cast<T>(acc[o]);
  });
  return out;
}

// max.dim / min.dim: the value and the index of its first occurrence (NaN wins).
template <bool IsMax>
std::tuple<sdk::Tensor, sdk::Tensor> extremum_dim_out(const sdk::Tensor& self, int64_t dim, bool,
                                                      const sdk::Tensor& values,
                                                      const sdk::Tensor& indices) {
  const char* op = IsMax ? "max" : "min";
  ReductionPlan plan = plan_reduction(self, {&dim, 1});
  dispatch_all_types(self.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    using A = acc_type<T>;
    T* dst = values.data<T>();
    int64_t* idx = indices.data<int64_t>();
    parallel_for_each_reduction(plan, self.data<T>(), [&] {
      return [&](int64_t o, auto&& visit) {
        int64_t i = 0, best_index = 0;
        A best{};
        visit([&](T raw) {
          A v = static_cast<A>(raw);
          bool take = i == 0;
          if constexpr (is_floating_v<T>) {
            take = take || (best == best && (v != v || (IsMax ? v > best : v < best)));
          } else {
            take = take || (IsMax ? v > best : v < best);
          }
          if (take) {
            best = v;
            best_index = i;
          }
          ++i;
        });
        dst[o] = static_cast<T>(best);
        idx[o] = best_index;
      };
    });
  });
  return {values, indices};
}

// var: each chunk of an output (Note [Deterministic sum]) takes two passes in double, the
// mean and then the squared deviations (no cancellation), each summed in lanes (Note
// [Lane sums]); chunks merge in order with Chan et al.'s pairwise update.
//

struct Moments {
  double count = 0, mean = 0, m2 = 0;  // m2: the sum of squared deviations from mean
};

Moments merge(const Moments& a, const Moments& b) {
  const double count = a.count + b.count;
  if (count == 0) return a;
  const double delta = b.mean - a.mean;
  return {count, a.mean + delta * (b.count / count),
          a.m2 + b.m2 + delta * delta * (a.count * b.count / count)};
}

// Each output's count, mean and sum of squared deviations over the reduced dims.
std::vector<Moments> moments_of(const sdk::Tensor& self, std::span<const int64_t> dims,
                                const char* op) {
  ReductionPlan plan = plan_reduction(self, dims);
  std::vector<Moments> moments(static_cast<size_t>(plan.out_numel));
  dispatch_floating_types(self.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const T* base = self.data<T>();
    auto fold_range = [&](int64_t o, int64_t begin, int64_t end) {
      auto value = [](T v) { return static_cast<double>(static_cast<acc_type<T>>(v)); };
      LaneSum sum;
      for_each_reduced_row_in_range(
          plan, base, o, begin, end,
          [&](const T* p, int64_t count, int64_t stride) { sum.add_run(p, count, stride, value); });
      Moments m{static_cast<double>(end - begin), 0, 0};
      const double mean = m.count > 0 ? sum.total() / m.count : 0;
      auto squared_deviation = [&](T v) {
        const double d = value(v) - mean;
        return d * d;
      };
      LaneSum squares;
      for_each_reduced_row_in_range(plan, base, o, begin, end,
                                    [&](const T* p, int64_t count, int64_t stride) {
                                      squares.add_run(p, count, stride, squared_deviation);
                                    });
      m.mean = mean;
      m.m2 = squares.total();
      return m;
    };
    auto fold_columns = [&](int64_t first, int64_t width, int64_t begin, int64_t end,
                            Moments* results) {
      auto value = [](T v, int64_t) { return static_cast<double>(static_cast<acc_type<T>>(v)); };
      ColumnLaneSum sums(width);
      for_each_reduced_row_in_range(plan, base, first, begin, end,
                                    [&](const T* p, int64_t count, int64_t stride) {
                                      sums.add_run(p, count, stride, width, value);
                                    });
      const double n = static_cast<double>(end - begin);
      double means[kColumnWidth] = {};
      for (int64_t g = 0; g < width; ++g) means[g] = n > 0 ? sums.total(g) / n : 0;
      auto squared_deviation = [&](T v, int64_t g) {
        const double d = value(v, g) - means[g];
        return d * d;
      };
      ColumnLaneSum squares(width);
      for_each_reduced_row_in_range(plan, base, first, begin, end,
                                    [&](const T* p, int64_t count, int64_t stride) {
                                      squares.add_run(p, count, stride, width, squared_deviation);
                                    });
      for (int64_t g = 0; g < width; ++g) results[g] = {n, means[g], squares.total(g)};
    };
    if (folds_in_columns(plan)) {
      fold_columns_in_chunks(plan, fold_columns, merge, moments);
    } else {
      fold_in_chunks(plan, fold_range, merge, moments);
    }
  });
  return moments;
}

sdk::Tensor var_out(const sdk::Tensor& self, OptionalDims dim,
                    std::optional<sdk::Scalar> correction, bool, const sdk::Tensor& out) {
  std::vector<Moments> moments = moments_of(self, dim.value_or(std::span<const int64_t>{}), "var");
  const double c = correction ? correction->to_double() : 1.0;
  std::vector<double> result(moments.size());
  for (size_t o = 0; o < moments.size(); ++o) {
    result[o] = moments[o].m2 / std::max(0.0, moments[o].count - c);
  }
  store_values(out, result, "var");
  return out;
}

// Note [var_mean kernel]
// ~~~~~~~~~~~~~~~~~~~~~~
// var_mean is a decomposition (var, then mean: three passes over the input, var's two
// and mean's one). The CPU kernel returns the mean var computed on the way: two passes,
// which is what a batch_norm's training statistics cost (Note [batch_norm statistics]).
// The mean is each output's chunk means merged as var merges them, so it may differ from
// `mean` in the last bit; it is the same for any thread count. Autograd has a formula
// for it (a backend kernel hides the decomposition's pieces); the meta device and the
// backends without a kernel keep the decomposition.
std::tuple<sdk::Tensor, sdk::Tensor> var_mean(const sdk::Tensor& self, OptionalDims dim,
                                              std::optional<sdk::Scalar> correction, bool keepdim) {
  const char* op = "loom::var_mean.correction";
  if (!sdk::dtypes::floating.contains(self.dtype())) {
    throw sdk::Error(std::string("[") + op + "] expected a floating point input, found " +
                     sdk::dtype_name(self.dtype()));
  }
  std::span<const int64_t> dims = dim.value_or(std::span<const int64_t>{});
  std::vector<int64_t> sizes = reduced_sizes(self, dims, keepdim, op);
  sdk::Tensor var = sdk::empty(sizes, self.dtype(), self.device());
  sdk::Tensor mean = sdk::empty(sizes, self.dtype(), self.device());
  std::vector<Moments> moments = moments_of(self, dims, op);
  const double c = correction ? correction->to_double() : 1.0;
  std::vector<double> variances(moments.size()), means(moments.size());
  for (size_t o = 0; o < moments.size(); ++o) {
    const Moments& m = moments[o];
    variances[o] = m.m2 / std::max(0.0, m.count - c);
    means[o] = m.count > 0 ? m.mean : std::numeric_limits<double>::quiet_NaN();
  }
  store_values(var, variances, op);
  store_values(mean, means, op);
  return {var, mean};
}

template <bool IsAny>
sdk::Tensor any_all_out(const sdk::Tensor& self, OptionalDims dim, bool, const sdk::Tensor& out) {
  const char* op = IsAny ? "any" : "all";
  ReductionPlan plan = plan_reduction(self, dim.value_or(std::span<const int64_t>{}));
  bool* dst = out.data<bool>();
  dispatch_all_types(self.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    parallel_for_each_reduction(plan, self.data<T>(), [&] {
      return [&](int64_t o, auto&& visit) {
        bool r = !IsAny;
        visit([&](T v) {
          bool truthy = static_cast<acc_type<T>>(v) != acc_type<T>(0);
          r = IsAny ? (r || truthy) : (r && truthy);
        });
        dst[o] = r;
      };
    });
  });
  return out;
}

}  // namespace

void register_reduction_kernels(sdk::Registrar& r) {
  r.impl<&sum_out>("loom::sum.dim_IntList_out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&prod_out>("loom::prod.dim_int_out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&extremum_out<true>>("loom::amax.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&extremum_out<false>>("loom::amin.out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&extremum_dim_out<true>>("loom::max.dim_out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&extremum_dim_out<false>>("loom::min.dim_out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&var_out>("loom::var.correction_out", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&var_mean>("loom::var_mean.correction", LOOM_KEY_CPU, sdk::dtypes::floating);
  r.impl<&any_all_out<true>>("loom::any.dims_out", LOOM_KEY_CPU, sdk::dtypes::all);
  r.impl<&any_all_out<false>>("loom::all.dims_out", LOOM_KEY_CPU, sdk::dtypes::all);
}

}  // namespace loom::cpu
