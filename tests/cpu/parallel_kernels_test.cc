// The CPU kernels that split lines, planes or rows over the thread pool (softmax, scans,
// layer_norm, sort/topk, reductions by chunks, pooling, gather/scatter/index_select,
// shape kernels, embedding, random) on operands large enough to be split: each result
// must equal, bit for bit, the same op on the pieces alone (each below the parallel grain,
// so computed on one thread) or a reference computed here. tests/CMakeLists.txt reruns
// these under LOOM_NUM_THREADS=1, 2 and 3; parallel_test.cc compares their bits
// across thread counts in child processes.
#include <algorithm>
#include <numeric>

#include "cpu_test_util.h"
#include "loom/loom.h"

namespace loom::testing {
namespace {

// Above the grain (32768 elements) in total, each row well below it.
constexpr int64_t kRows = 389, kCols = 457;

// Deterministic, irregular values in [-5, 5], multiples of 1/16 (exact in every floating
// dtype), with many repeats (ties for sort).
Values wave(int64_t n, double phase) {
  Values v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    v[i] = std::round(80 * std::sin(0.37 * static_cast<double>(i) + phase)) / 16;
  }
  return v;
}

Tensor matrix(ScalarType dtype = ScalarType::Float32, double phase = 0) {
  return make(dtype, {kRows, kCols}, wave(kRows * kCols, phase));
}

// Expects `whole`'s slice [i, i + 1) along `dim` to equal `piece` bit for bit (as doubles).
void expect_slice_equals(const Tensor& whole, int64_t dim, int64_t i, const Tensor& piece,
                         const std::string& what) {
  const Values got = values(whole.slice(dim, i, i + 1));
  const Values want = values(piece);
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t k = 0; k < got.size(); ++k) {
    if (std::isnan(want[k])) {
      EXPECT_TRUE(std::isnan(got[k])) << what << " slice " << i << " element " << k;
    } else {
      ASSERT_EQ(got[k], want[k]) << what << " slice " << i << " element " << k;
    }
  }
}

class CpuParallelKernels : public CpuPointwise {};

TEST_F(CpuParallelKernels, LineKernelsMatchTheirLinesAlone) {
  for (ScalarType dtype : {ScalarType::Float32, ScalarType::Float64, ScalarType::BFloat16}) {
    SCOPED_TRACE(scalar_type_name(dtype));
    const Tensor x = matrix(dtype);
    for (int64_t dim : {0, 1}) {
      SCOPED_TRACE("dim " + std::to_string(dim));
      const Tensor sm = softmax(x, dim), lsm = log_softmax(x, dim), cs = cumsum(x, dim);
      const auto [sorted, order] = sort(x, dim, /*descending=*/dim == 1);
      const auto [top, top_index] = topk(x, 7, dim);
      const Tensor v = var(x, IntList{dim}, std::nullopt, /*keepdim=*/true);
      const auto [best, best_index] = max(x, dim, /*keepdim=*/true);
      const int64_t other = 1 - dim;
      for (int64_t i : {int64_t{0}, int64_t{5}, x.size(other) / 2, x.size(other) - 1}) {
        const Tensor line = x.slice(other, i, i + 1).contiguous();
        expect_slice_equals(sm, other, i, softmax(line, dim), "softmax");
        expect_slice_equals(lsm, other, i, log_softmax(line, dim), "log_softmax");
        expect_slice_equals(cs, other, i, cumsum(line, dim), "cumsum");
        expect_slice_equals(sorted, other, i, std::get<0>(sort(line, dim, dim == 1)), "sort");
        expect_slice_equals(order, other, i, std::get<1>(sort(line, dim, dim == 1)), "argsort");
        expect_slice_equals(top, other, i, std::get<0>(topk(line, 7, dim)), "topk");
        expect_slice_equals(top_index, other, i, std::get<1>(topk(line, 7, dim)), "topk indices");
        expect_slice_equals(v, other, i, var(line, IntList{dim}, std::nullopt, true), "var");
        expect_slice_equals(best, other, i, std::get<0>(max(line, dim, true)), "max.dim");
        expect_slice_equals(best_index, other, i, std::get<1>(max(line, dim, true)), "argmax");
      }
    }
    const auto [y, mean, rstd] = native_layer_norm(x, {kCols}, std::nullopt, std::nullopt, 1e-5);
    for (int64_t i : {int64_t{0}, int64_t{7}, kRows - 1}) {
      const auto [yi, mi, ri] =
          native_layer_norm(x.slice(0, i, i + 1), {kCols}, std::nullopt, std::nullopt, 1e-5);
      expect_slice_equals(y, 0, i, yi, "layer_norm");
      expect_slice_equals(mean, 0, i, mi, "layer_norm mean");
      expect_slice_equals(rstd, 0, i, ri, "layer_norm rstd");
    }
  }
}

TEST_F(CpuParallelKernels, SortIsStableWithNaNLast) {
  Values v = wave(kRows * kCols, 1);
  for (size_t i = 0; i < v.size(); i += 101) v[i] = kNaN;
  const Tensor x = make(ScalarType::Float32, {kRows * kCols}, v);
  for (bool descending : {false, true}) {
    const auto [sorted, order] = sort(x, 0, descending);
    std::vector<int64_t> want(v.size());
    std::iota(want.begin(), want.end(), 0);
    std::stable_sort(want.begin(), want.end(), [&](int64_t a, int64_t b) {
      const bool na = std::isnan(v[a]), nb = std::isnan(v[b]);
      if (na || nb) return descending ? na && !nb : nb && !na;
      return descending ? v[a] > v[b] : v[a] < v[b];
    });
    const Values got = values(order);
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got[i], static_cast<double>(want[i])) << "descending " << descending << " at " << i;
    }
    const auto [top, top_index] = topk(x, 1000, 0, /*largest=*/descending);
    expect_values(top_index, Values(got.begin(), got.begin() + 1000), "topk indices");
  }
}

TEST_F(CpuParallelKernels, ChunkedReductionsMatchReferences) {
  // full reductions of a million elements: many chunks folded on the pool
  const int64_t n = 1 << 20;
  Values v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>((i * 7919) % 1000) / 8 - 60;
  const Tensor x = make(ScalarType::Float64, {n}, v);
  long double sum = 0;  // the reference in extended precision
  for (double e : v) sum += e;
  const long double mean = sum / n;
  long double squares = 0;
  for (double e : v) squares += (e - mean) * (e - mean);
  expect_close(var(x).item<double>(), static_cast<double>(squares / (n - 1)), ScalarType::Float64,
               "var");
  EXPECT_EQ(amax(x).item<double>(), *std::max_element(v.begin(), v.end()));
  EXPECT_EQ(amin(x).item<double>(), *std::min_element(v.begin(), v.end()));
  // a NaN anywhere makes the extremum NaN
  v[n - 3] = kNaN;
  const Tensor with_nan = make(ScalarType::Float64, {n}, v);
  EXPECT_TRUE(std::isnan(amax(with_nan).item<double>()));
  EXPECT_TRUE(std::isnan(amin(with_nan).item<double>()));
  // integers, over a transposed (strided) view
  Values iv(static_cast<size_t>(kRows * kCols));
  for (size_t i = 0; i < iv.size(); ++i) iv[i] = static_cast<double>((i * 37) % 100003) - 50000;
  const Tensor xi = make(ScalarType::Int64, {kRows, kCols}, iv).t();
  EXPECT_EQ(amax(xi).item<int64_t>(),
            static_cast<int64_t>(*std::max_element(iv.begin(), iv.end())));
  EXPECT_EQ(amin(xi).item<int64_t>(),
            static_cast<int64_t>(*std::min_element(iv.begin(), iv.end())));
  EXPECT_TRUE(any(xi > Scalar(int64_t{49999})).item<bool>());
  EXPECT_FALSE(all(xi > Scalar(int64_t{-50000})).item<bool>());
}

TEST_F(CpuParallelKernels, PoolingMatchesEachPlaneAlone) {
  // 6 x 40 planes of 33 x 35: the planes are split over the pool
  const Tensor x = make(ScalarType::Float32, {6, 40, 33, 35}, wave(6 * 40 * 33 * 35, 2));
  const auto [mp, mp_index] = max_pool2d_with_indices(x, {3, 3}, {2, 2}, {1, 1});
  const Tensor ap = avg_pool2d(x, {3, 2}, {2, 1}, {1, 0}, false, false);
  const Tensor aap = adaptive_avg_pool2d(x, {5, 7});
  for (int64_t n : {0, 3, 5}) {
    for (int64_t c : {0, 17, 39}) {
      SCOPED_TRACE("plane " + std::to_string(n) + "," + std::to_string(c));
      const Tensor plane = x.slice(0, n, n + 1).slice(1, c, c + 1);
      const auto [p, pi] = max_pool2d_with_indices(plane, {3, 3}, {2, 2}, {1, 1});
      expect_slice_equals(mp.slice(0, n, n + 1), 1, c, p, "max_pool2d");
      expect_slice_equals(mp_index.slice(0, n, n + 1), 1, c, pi, "max_pool2d indices");
      expect_slice_equals(ap.slice(0, n, n + 1), 1, c,
                          avg_pool2d(plane, {3, 2}, {2, 1}, {1, 0}, false, false), "avg_pool2d");
      expect_slice_equals(aap.slice(0, n, n + 1), 1, c, adaptive_avg_pool2d(plane, {5, 7}),
                          "adaptive_avg_pool2d");
    }
  }
}

TEST_F(CpuParallelKernels, IndexingAndShapeKernelsMatchReferences) {
  const Tensor x = make(ScalarType::Float32, {kRows, kCols}, wave(kRows * kCols, 3));
  const Values xv = values(x);
  auto at = [&](int64_t r, int64_t c) { return xv[r * kCols + c]; };
  // gather along dim 1 with an index of x's shape
  Values gv(xv.size());
  for (size_t i = 0; i < gv.size(); ++i) gv[i] = static_cast<double>((i * 13) % kCols);
  const Tensor g = gather(x, 1, make(ScalarType::Int64, {kRows, kCols}, gv));
  Values want(xv.size());
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t c = 0; c < kCols; ++c) want[r * kCols + c] = at(r, gv[r * kCols + c]);
  }
  expect_values(g, want, "gather");
  // scatter_add along dim 0 with repeated targets: every line adds in order
  Values sv(xv.size());
  for (size_t i = 0; i < sv.size(); ++i) sv[i] = static_cast<double>((i / kCols) % 4);
  const Tensor zeros_like_x = zeros({kRows, kCols});
  const Tensor sa = scatter_add(zeros_like_x, 0, make(ScalarType::Int64, {kRows, kCols}, sv), x);
  want.assign(xv.size(), 0);
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t c = 0; c < kCols; ++c) {
      const int64_t target = static_cast<int64_t>(sv[r * kCols + c]);
      want[target * kCols + c] = static_cast<float>(want[target * kCols + c] + at(r, c));
    }
  }
  expect_values(sa, want, "scatter_add");
  // index_select of rows, reversed
  Values rows(kRows);
  for (int64_t r = 0; r < kRows; ++r) rows[r] = static_cast<double>(kRows - 1 - r);
  const Tensor picked = index_select(x, 0, make(ScalarType::Int64, {kRows}, rows));
  const Tensor flipped = flip(x, {0});
  want.clear();
  for (int64_t r = kRows - 1; r >= 0; --r) {
    for (int64_t c = 0; c < kCols; ++c) want.push_back(at(r, c));
  }
  expect_values(picked, want, "index_select");
  expect_values(flipped, want, "flip");
  // tril of the transposed view, roll, cat
  want.clear();
  for (int64_t c = 0; c < kCols; ++c) {
    for (int64_t r = 0; r < kRows; ++r) want.push_back(r - c <= 2 ? at(r, c) : 0.0);
  }
  expect_values(tril(x.t(), 2), want, "tril");
  want.clear();
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t c = 0; c < kCols; ++c) want.push_back(at(r, (c - 5 + kCols) % kCols));
  }
  expect_values(roll(x, {5}, {1}), want, "roll");
  const Tensor both = cat({x, x.t().contiguous().t()}, 1);
  want.clear();
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t k = 0; k < 2; ++k) {
      for (int64_t c = 0; c < kCols; ++c) want.push_back(at(r, c));
    }
  }
  expect_values(both, want, "cat");
  // embedding: rows of the weight by index
  const Tensor weight = x.slice(0, 0, 100);
  Values ev(5000);
  for (size_t i = 0; i < ev.size(); ++i) ev[i] = static_cast<double>((i * 31) % 100);
  const Tensor e = embedding(weight, make(ScalarType::Int64, {50, 100}, ev));
  want.clear();
  for (double r : ev) {
    for (int64_t c = 0; c < kCols; ++c) want.push_back(at(static_cast<int64_t>(r), c));
  }
  expect_values(e, want, "embedding");
}

TEST_F(CpuParallelKernels, RandomValuesDependOnPositionOnly) {
  // one call over a large tensor equals calls over its pieces, which run on one thread
  const int64_t n = 200003, first = 70001;
  for (ScalarType dtype : {ScalarType::Float32, ScalarType::Float64}) {
    SCOPED_TRACE(scalar_type_name(dtype));
    const TensorOptions options = TensorOptions().dtype(dtype);
    manual_seed(11);
    const Values whole_u = values(rand({n}, options)), whole_n = values(randn({n}, options));
    manual_seed(11);
    Values pieces = values(rand({first}, options));
    const Values rest = values(rand({n - first}, options));
    pieces.insert(pieces.end(), rest.begin(), rest.end());
    EXPECT_EQ(pieces, whole_u);
    // a transposed destination takes the values in its logical order
    manual_seed(11);
    rand({n}, options);
    const Tensor t = empty({n / 7, 7}, options).t();
    normal_(t);
    const Values tv = values(t);
    EXPECT_EQ(tv, Values(whole_n.begin(), whole_n.begin() + static_cast<int64_t>(tv.size())));
  }
  // dropout keeps or zeroes by position, scaled by 1 / (1 - p)
  const Tensor ones_t = ones({n});
  manual_seed(5);
  const Values kept = values(dropout(ones_t, 0.25, true));
  manual_seed(5);
  const Values u = values(rand({n}, TensorOptions().dtype(ScalarType::Float64)));
  int64_t zeros_seen = 0;
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_TRUE(kept[i] == 0.0 || std::abs(kept[i] - 1 / 0.75) < 1e-6) << i;
    zeros_seen += kept[i] == 0.0;
    ASSERT_EQ(kept[i] == 0.0, u[i] < 0.25) << i;
  }
  EXPECT_NEAR(static_cast<double>(zeros_seen) / n, 0.25, 0.01);
}

}  // namespace
}  // namespace loom::testing
