// The CPU plugin's random ops and the C++ random factories: reproducibility by seed,
// values of strided fills equal to the Philox spec computed here from loom/sdk/philox.hpp
// (the proof that results do not depend on thread count or chunking), statistics with
// fixed seeds, dropout, the meta device, and the argument errors.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>

#include "../core/loom_error_assertions.h"
#include "cpu_test_util.h"
#include "loom/loom.h"
#include "loom/sdk/philox.hpp"

namespace loom::testing {
namespace {

using sdk::PhiloxStream;

class CpuRandom : public CpuPointwise {};

Generator& cpu_generator() {
  return default_generator(kCPU);
}

double mean_of(const Values& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}
double stddev_of(const Values& v) {
  const double m = mean_of(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size() - 1));
}

// The spec's uniform_ value of element i (Note [CPU random kernels]), before rounding to
// the tensor's dtype.
double spec_uniform(const PhiloxStream& s, uint64_t i, ScalarType t, double from, double to) {
  const sdk::PhiloxBlock b = s.block(i);
  const double u = t == ScalarType::Float64 ? sdk::uniform_double(b[0], b[1])
                                            : static_cast<double>(sdk::uniform_float(b[0]));
  return from + (to - from) * u;
}
double spec_normal(const PhiloxStream& s, uint64_t i, ScalarType t, double mean, double std) {
  const sdk::PhiloxBlock b = s.block(i);
  const double z =
      t == ScalarType::Float64 ? sdk::normal_double(b) : static_cast<double>(sdk::normal_float(b));
  return mean + std * z;
}

// got equals want rounded to dtype t: exact for float32 (one rounding in both), within an
// ulp of the value for the others.
void expect_rounded(double got, double want, ScalarType t, const std::string& what) {
  switch (t) {
    case ScalarType::Float32:
      EXPECT_EQ(got, static_cast<double>(static_cast<float>(want))) << what;
      break;
    case ScalarType::Float64:
      EXPECT_DOUBLE_EQ(got, want) << what;
      break;
    case ScalarType::Float16:
      EXPECT_NEAR(got, want, std::abs(want) * 0x1.0p-10 + 0x1.0p-24) << what;
      break;
    default:
      EXPECT_NEAR(got, want, std::abs(want) * 0x1.0p-7 + 1e-38) << what;
  }
}

// A 3-D view with a permuted, sliced-with-step layout over a larger buffer filled with a
// sentinel, so elements outside the view can be checked untouched.
struct StridedView {
  Tensor base;
  Tensor view;
};
StridedView strided_view(ScalarType dtype) {
  // 7 marks elements the fill must not touch (a bool holds no 7: full refuses it).
  Tensor base = full({4, 5, 6}, dtype == ScalarType::Bool ? 1 : 7, TensorOptions().dtype(dtype));
  Tensor view = base.permute({2, 0, 1}).slice(0, 1, 6, 2).slice(2, 0, 5, 2);  // [3, 4, 3]
  EXPECT_FALSE(view.is_contiguous());
  return {base, view};
}
int64_t untouched(const Tensor& base) {
  Values v = values(base);
  return std::count(v.begin(), v.end(), 7.0);
}

// ------------------------------ reproducibility ------------------------------

TEST_F(CpuRandom, SameSeedSameValuesDifferentSeedsDiffer) {
  manual_seed(42);
  Values a = values(rand({1000}));
  manual_seed(42);
  Values b = values(rand({1000}));
  EXPECT_EQ(a, b);
  manual_seed(43);
  Values c = values(rand({1000}));
  int same = 0;
  for (size_t i = 0; i < a.size(); ++i) same += a[i] == c[i];
  EXPECT_LT(same, 5);
  // consecutive calls continue the stream: they differ from each other
  manual_seed(42);
  rand({1000});
  Values d = values(rand({1000}));
  EXPECT_NE(a, d);
}

TEST_F(CpuRandom, ManualSeedThenRandSequenceIsReproducible) {
  manual_seed(7);
  EXPECT_EQ(cpu_generator().state(), (PhiloxState{7, 0}));
  Values r1 = values(rand({5}));
  Values r2 = values(randn({2, 3}, TensorOptions().dtype(ScalarType::Float64)));
  Values r3 = values(randint(0, 100, {4}));
  EXPECT_EQ(cpu_generator().offset(), 5u + 6u + 4u);  // one counter per element
  manual_seed(7);
  EXPECT_EQ(values(rand({5})), r1);
  EXPECT_EQ(values(randn({2, 3}, TensorOptions().dtype(ScalarType::Float64))), r2);
  EXPECT_EQ(values(randint(0, 100, {4})), r3);
  // the stream continues across calls: rand(5) then rand(5) equals rand(10)
  manual_seed(8);
  Values split = values(rand({5}));
  Values rest = values(rand({5}));
  split.insert(split.end(), rest.begin(), rest.end());
  manual_seed(8);
  EXPECT_EQ(values(rand({10})), split);
}

TEST_F(CpuRandom, ManualSeedSeedsEveryDeviceType) {
  manual_seed(99);
  EXPECT_EQ(default_generator(kCPU).state(), (PhiloxState{99, 0}));
  EXPECT_EQ(default_generator(kMeta).state(), (PhiloxState{99, 0}));
}

// --------------------------- values follow the spec ---------------------------

TEST_F(CpuRandom, UniformOfAStridedViewEqualsTheSpec) {
  for (ScalarType t : kFloatTypes) {
    SCOPED_TRACE(scalar_type_name(t));
    manual_seed(2024);
    cpu_generator().reserve(17);  // start mid-stream
    const PhiloxStream s{2024, 17};
    StridedView sv = strided_view(t);
    Tensor r = uniform_(sv.view, -2.0, 3.0);
    EXPECT_EQ(r.impl(), sv.view.impl());  // returns self
    Values got = values(sv.view);
    ASSERT_EQ(got.size(), 36u);
    for (size_t i = 0; i < got.size(); ++i) {
      expect_rounded(got[i], spec_uniform(s, i, t, -2.0, 3.0), t, "element " + std::to_string(i));
      EXPECT_GE(got[i], -2.0);
      EXPECT_LT(got[i], 3.0);
    }
    EXPECT_EQ(untouched(sv.base), 120 - 36);
    EXPECT_EQ(cpu_generator().offset(), 17u + 36u);
  }
}

TEST_F(CpuRandom, NormalOfAStridedViewEqualsTheSpec) {
  for (ScalarType t : kFloatTypes) {
    SCOPED_TRACE(scalar_type_name(t));
    manual_seed(5);
    const PhiloxStream s{5, 0};
    StridedView sv = strided_view(t);
    sv.view.normal_(1.5, 0.25);
    Values got = values(sv.view);
    for (size_t i = 0; i < got.size(); ++i) {
      expect_rounded(got[i], spec_normal(s, i, t, 1.5, 0.25), t, "element " + std::to_string(i));
    }
    EXPECT_EQ(untouched(sv.base), 120 - 36);
  }
}

TEST_F(CpuRandom, IntegerAndBernoulliFillsOfStridedViewsEqualTheSpec) {
  manual_seed(31);
  const PhiloxStream s{31, 0};
  StridedView ints = strided_view(ScalarType::Int32);
  random_(ints.view, -1000, 1000);
  Values got = values(ints.view);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i], -1000.0 + static_cast<double>(sdk::uniform_below(s.block(i), 2000)));
  }
  const PhiloxStream s2{31, 36};
  StridedView bools = strided_view(ScalarType::Bool);
  bools.view.bernoulli_(0.25);
  got = values(bools.view);
  for (size_t i = 0; i < got.size(); ++i) {
    const sdk::PhiloxBlock b = s2.block(i);
    EXPECT_EQ(got[i], sdk::uniform_double(b[0], b[1]) < 0.25 ? 1.0 : 0.0);
  }
  // bernoulli(p) reads p in the same logical order from a strided tensor
  manual_seed(32);
  StridedView probs = strided_view(ScalarType::Float64);
  uniform_(probs.view, 0.0, 1.0);
  cpu_generator().manual_seed(33);
  const PhiloxStream s4{33, 0};
  Tensor drawn = bernoulli(probs.view);
  EXPECT_TRUE(drawn.is_contiguous());
  EXPECT_EQ(shape_of(drawn), (Shape{3, 4, 3}));
  Values p = values(probs.view);
  got = values(drawn);
  for (size_t i = 0; i < got.size(); ++i) {
    const sdk::PhiloxBlock b = s4.block(i);
    EXPECT_EQ(got[i], sdk::uniform_double(b[0], b[1]) < p[i] ? 1.0 : 0.0);
  }
}

TEST_F(CpuRandom, LongContiguousFillsEqualTheSpec) {
  // Long enough for several batches of blocks and chunks of the pool, from an offset
  // that is no multiple of a vector's lanes.
  for (ScalarType t : {ScalarType::Float32, ScalarType::Float64}) {
    SCOPED_TRACE(scalar_type_name(t));
    manual_seed(91);
    cpu_generator().reserve(5);
    const PhiloxStream s{91, 5};
    Tensor r = rand({70001}, TensorOptions().dtype(t));
    Values got = values(r);
    ASSERT_EQ(got.size(), 70001u);
    for (size_t i = 0; i < got.size(); ++i) {
      expect_rounded(got[i], spec_uniform(s, i, t, 0.0, 1.0), t, "element " + std::to_string(i));
    }
    const PhiloxStream s2{91, 5 + 70001};
    Tensor ints = randint(-7, 7, {70001});
    got = values(ints);
    for (size_t i = 0; i < got.size(); i += 997) {
      EXPECT_EQ(got[i], -7.0 + static_cast<double>(sdk::uniform_below(s2.block(i), 14)));
    }
  }
}

TEST_F(CpuRandom, ContiguousAndStridedFillsOfTheSameShapeAgree) {
  // Element i is decided by its logical position, not by where it lives in memory.
  manual_seed(77);
  Tensor contiguous = rand({4, 3});
  manual_seed(77);
  Tensor transposed = empty({3, 4}).t();  // [4, 3] with strides (1, 4)
  uniform_(transposed, 0.0, 1.0);
  EXPECT_EQ(values(contiguous), values(transposed));
}

// ---------------------------------- statistics ----------------------------------

TEST_F(CpuRandom, UniformAndNormalMoments) {
  for (ScalarType t : {ScalarType::Float32, ScalarType::Float64}) {
    SCOPED_TRACE(scalar_type_name(t));
    manual_seed(1234);
    Values u = values(rand({100000}, TensorOptions().dtype(t)));
    EXPECT_NEAR(mean_of(u), 0.5, 0.005);
    EXPECT_NEAR(stddev_of(u), std::sqrt(1.0 / 12.0), 0.003);
    EXPECT_GE(*std::min_element(u.begin(), u.end()), 0.0);
    EXPECT_LT(*std::max_element(u.begin(), u.end()), 1.0);
    Values n = values(randn({100000}, TensorOptions().dtype(t)));
    EXPECT_NEAR(mean_of(n), 0.0, 0.015);
    EXPECT_NEAR(stddev_of(n), 1.0, 0.015);
    // about 68.3% within one sigma
    const double within = static_cast<double>(std::count_if(
                              n.begin(), n.end(), [](double x) { return std::abs(x) < 1; })) /
                          1e5;
    EXPECT_NEAR(within, 0.6827, 0.006);
    Values scaled = values(empty({100000}, TensorOptions().dtype(t)).normal_(-3.0, 2.0));
    EXPECT_NEAR(mean_of(scaled), -3.0, 0.03);
    EXPECT_NEAR(stddev_of(scaled), 2.0, 0.03);
  }
  for (ScalarType t : {ScalarType::Float16, ScalarType::BFloat16}) {
    SCOPED_TRACE(scalar_type_name(t));
    manual_seed(1235);
    Values u = values(empty({20000}, TensorOptions().dtype(t)).uniform_(-1.0, 1.0));
    EXPECT_NEAR(mean_of(u), 0.0, 0.03);
    EXPECT_GE(*std::min_element(u.begin(), u.end()), -1.0);
    EXPECT_LT(*std::max_element(u.begin(), u.end()), 1.0);  // rounding up to `to` is folded
  }
}

TEST_F(CpuRandom, BernoulliRates) {
  manual_seed(555);
  Values b = values(empty({100000}).bernoulli_(0.3));
  EXPECT_NEAR(mean_of(b), 0.3, 0.006);
  for (double x : b) ASSERT_TRUE(x == 0.0 || x == 1.0);
  EXPECT_EQ(
      mean_of(values(empty({1000}, TensorOptions().dtype(ScalarType::Int64)).bernoulli_(0.0))),
      0.0);
  EXPECT_EQ(mean_of(values(empty({1000}, TensorOptions().dtype(ScalarType::Bool)).bernoulli_(1.0))),
            1.0);
  // into every dtype, with the default p = 0.5
  for (ScalarType t : {ScalarType::Bool, ScalarType::UInt8, ScalarType::Int8, ScalarType::Int16,
                       ScalarType::Int32, ScalarType::Int64, ScalarType::Float16,
                       ScalarType::BFloat16, ScalarType::Float32, ScalarType::Float64}) {
    EXPECT_NEAR(mean_of(values(empty({20000}, TensorOptions().dtype(t)).bernoulli_())), 0.5, 0.02)
        << scalar_type_name(t);
  }
  // bernoulli(p): per-element probabilities
  Tensor p = empty({3, 20000}, TensorOptions().dtype(ScalarType::Float64));
  p.select(0, 0).fill_(0.0);
  p.select(0, 1).fill_(1.0);
  p.select(0, 2).fill_(0.8);
  Tensor drawn = bernoulli(p);
  EXPECT_EQ(drawn.dtype(), ScalarType::Float64);
  EXPECT_EQ(mean_of(values(drawn.select(0, 0))), 0.0);
  EXPECT_EQ(mean_of(values(drawn.select(0, 1))), 1.0);
  EXPECT_NEAR(mean_of(values(drawn.select(0, 2))), 0.8, 0.012);
}

TEST_F(CpuRandom, RandintRangeAndCoverage) {
  manual_seed(9);
  Tensor r = randint(-5, 5, {100000});
  EXPECT_EQ(r.dtype(), ScalarType::Int64);
  std::map<double, int> counts;
  for (double x : values(r)) ++counts[x];
  ASSERT_EQ(counts.size(), 10u);
  EXPECT_EQ(counts.begin()->first, -5.0);
  EXPECT_EQ(counts.rbegin()->first, 4.0);
  for (auto [value, count] : counts) EXPECT_NEAR(count, 10000, 500) << value;
  // randint(high), options, *_like
  Values small = values(randint(3, {1000}, TensorOptions().dtype(ScalarType::UInt8)));
  EXPECT_EQ(std::set<double>(small.begin(), small.end()), (std::set<double>{0, 1, 2}));
  Tensor like = randint_like(empty({50}, TensorOptions().dtype(ScalarType::Int16)), 100, 103);
  EXPECT_EQ(like.dtype(), ScalarType::Int16);
  for (double x : values(like)) EXPECT_TRUE(x >= 100 && x < 103);
  // integer values into float tensors
  for (double x : values(randint(-4, 4, {200}, TensorOptions().dtype(ScalarType::Float32)))) {
    EXPECT_EQ(x, std::floor(x));
    EXPECT_TRUE(x >= -4 && x < 4);
  }
}

TEST_F(CpuRandom, RandomWithoutUpperBoundCoversTheDtype) {
  manual_seed(10);
  Values bools = values(random_(empty({200}, TensorOptions().dtype(ScalarType::Bool)), 0, {}));
  EXPECT_EQ(std::set<double>(bools.begin(), bools.end()), (std::set<double>{0, 1}));
  Values i8 = values(random_(empty({20000}, TensorOptions().dtype(ScalarType::Int8)), -128, {}));
  std::set<double> seen(i8.begin(), i8.end());
  EXPECT_EQ(seen.size(), 256u);
  // all 2^64 int64 values: some negative, some positive
  Tensor full_range = random_(empty({1000}, TensorOptions().dtype(ScalarType::Int64)),
                              std::numeric_limits<int64_t>::min(), {});
  const int64_t* v = full_range.data<int64_t>();
  EXPECT_TRUE(std::any_of(v, v + 1000, [](int64_t x) { return x < -(int64_t{1} << 60); }));
  EXPECT_TRUE(std::any_of(v, v + 1000, [](int64_t x) { return x > (int64_t{1} << 60); }));
  // float16 holds the integers up to 2^11
  Values h = values(random_(empty({2000}, TensorOptions().dtype(ScalarType::Float16)), 2040, {}));
  for (double x : h) EXPECT_TRUE(x >= 2040 && x <= 2048 && x == std::floor(x)) << x;
}

TEST_F(CpuRandom, RandpermIsADeterministicPermutation) {
  manual_seed(3);
  Tensor p = randperm(1000);
  EXPECT_EQ(p.dtype(), ScalarType::Int64);
  Values v = values(p);
  Values sorted = v;
  std::sort(sorted.begin(), sorted.end());
  Values iota(1000);
  std::iota(iota.begin(), iota.end(), 0.0);
  EXPECT_EQ(sorted, iota);
  EXPECT_NE(v, iota);
  manual_seed(3);
  EXPECT_EQ(values(randperm(1000)), v);
  manual_seed(4);
  EXPECT_NE(values(randperm(1000)), v);
  // the spec: indices ordered by their 64-bit Philox keys
  manual_seed(6);
  Values small = values(randperm(8, TensorOptions().dtype(ScalarType::Int32)));
  std::vector<std::pair<uint64_t, int>> keyed;
  for (int i = 0; i < 8; ++i) {
    sdk::PhiloxBlock b = PhiloxStream{6, 0}.block(static_cast<uint64_t>(i));
    keyed.emplace_back(sdk::philox_bits64(b[0], b[1]), i);
  }
  std::sort(keyed.begin(), keyed.end());
  for (int j = 0; j < 8; ++j) EXPECT_EQ(small[j], keyed[j].second);
  // into a strided out, and the edge sizes
  Tensor out = empty({2, 10}, TensorOptions().dtype(ScalarType::Int64)).select(1, 3);
  manual_seed(6);
  randperm_out(out, 2);
  Values two = values(out);
  EXPECT_EQ(std::set<double>(two.begin(), two.end()), (std::set<double>{0, 1}));
  EXPECT_EQ(randperm(0).numel(), 0);
  EXPECT_EQ(values(randperm(1)), (Values{0}));
  Values f = values(randperm(50, TensorOptions().dtype(ScalarType::Float32)));
  EXPECT_EQ(std::set<double>(f.begin(), f.end()).size(), 50u);
}

// ------------------------------------ dropout ------------------------------------

TEST_F(CpuRandom, DropoutScalesKeptElementsAndZeroesTheRest) {
  manual_seed(12);
  Tensor x = ones({100000});
  Values y = values(dropout(x, 0.25, true));
  int zeros = 0;
  for (double v : y) {
    if (v == 0) {
      ++zeros;
    } else {
      ASSERT_FLOAT_EQ(v, 1.0 / 0.75);
    }
  }
  EXPECT_NEAR(zeros / 1e5, 0.25, 0.006);
  EXPECT_NEAR(mean_of(y), 1.0, 0.01);  // the expectation is kept
  // the spec on a strided input: dropped iff uniform_double(w0, w1) < p
  manual_seed(13);
  StridedView sv = strided_view(ScalarType::Float16);
  uniform_(sv.view, 1.0, 2.0);
  Values in = values(sv.view);
  cpu_generator().manual_seed(14);
  Values out = values(dropout(sv.view, 0.5, true));
  for (size_t i = 0; i < out.size(); ++i) {
    const sdk::PhiloxBlock b = PhiloxStream{14, 0}.block(i);
    EXPECT_EQ(out[i], sdk::uniform_double(b[0], b[1]) < 0.5 ? 0.0 : 2 * in[i]) << i;
  }
}

TEST_F(CpuRandom, DropoutEdgeCases) {
  Tensor x = make(ScalarType::Float32, {2, 3}, {1, -2, 3, 4, kNaN, 6});
  Tensor same = dropout(x, 0.5, false);
  EXPECT_EQ(same.impl(), x.impl());  // train=false returns the input itself
  Tensor kept = dropout(x, 0.0, true);
  EXPECT_NE(kept.impl(), x.impl());
  Values k = values(kept);
  EXPECT_EQ(k[0], 1);
  EXPECT_EQ(k[1], -2);
  EXPECT_TRUE(std::isnan(k[4]));
  EXPECT_EQ(values(dropout(x, 1.0, true)), (Values{0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(dropout(empty({0, 4}), 0.5, true).numel(), 0);
}

// ---------------------------- meta, zero-size, generator ----------------------------

TEST_F(CpuRandom, MetaAndZeroSizeFillsDrawNothing) {
  manual_seed(1);
  Tensor m = empty({3, 4}, TensorOptions().device(Device{kMeta, -1}));
  Tensor r = uniform_(m, 0.0, 1.0);
  EXPECT_EQ(r.impl(), m.impl());
  normal_(m, 0.0, 1.0);
  bernoulli_(m, 0.5);
  random_(m, 0, 10);
  EXPECT_EQ(rand({0, 5}).numel(), 0);
  EXPECT_EQ(cpu_generator().offset(), 0u);
}

TEST_F(CpuRandom, RejectedCallsLeaveTheGeneratorAlone) {
  manual_seed(1);
  Tensor t = empty({4});
  EXPECT_ANY_THROW(uniform_(t, 1.0, 0.0));
  EXPECT_ANY_THROW(random_(t, 3, 3));
  EXPECT_ANY_THROW(bernoulli(make(ScalarType::Float32, {2}, {0.5, 2})));
  EXPECT_EQ(cpu_generator().offset(), 0u);
}

// ------------------------------------- errors -------------------------------------

TEST_F(CpuRandom, BadArgumentsAreReported) {
  Tensor f = empty({4});
  Tensor i = empty({4}, TensorOptions().dtype(ScalarType::Int64));
  EXPECT_LOOM_ERROR(uniform_(f, 2.0, 1.0), "loom::uniform_",
                    "expected from <= to, found from=2 to=1");
  EXPECT_LOOM_ERROR(uniform_(i, 0.0, 1.0), "loom::uniform_", "does not support dtype int64");
  EXPECT_LOOM_ERROR(uniform_(empty({2}, TensorOptions().dtype(ScalarType::Float16)), 0.0, 1e6),
                    "loom::uniform_", "finite range of float16");
  EXPECT_LOOM_ERROR(normal_(f, 0.0, -1.0), "loom::normal_", "expected std >= 0, found std=-1");
  EXPECT_LOOM_ERROR(normal_(i, 0.0, 1.0), "loom::normal_", "does not support dtype int64");
  EXPECT_LOOM_ERROR(bernoulli_(f, 1.5), "loom::bernoulli_.float",
                    "expected p in [0, 1], found p=1.5");
  EXPECT_LOOM_ERROR(bernoulli_(f, -0.1), "loom::bernoulli_.float", "found p=-0.1");
  EXPECT_LOOM_ERROR(bernoulli_(f, std::nan("")), "loom::bernoulli_.float", "found p=nan");
  EXPECT_LOOM_ERROR(bernoulli(make(ScalarType::Float32, {3}, {0.5, 1.25, 0})), "loom::bernoulli",
                    "expected probabilities in [0, 1], found 1.25 at element 1");
  EXPECT_LOOM_ERROR(bernoulli(i), "loom::bernoulli", "does not support dtype int64");
  EXPECT_LOOM_ERROR(random_(i, 5, 5), "loom::random_.from",
                    "expected from < to, found from=5 to=5");
  EXPECT_LOOM_ERROR(random_(empty({2}, TensorOptions().dtype(ScalarType::UInt8)), -1, 10),
                    "loom::random_.from", "from=-1 is out of range for uint8 (expected [0, 255])");
  EXPECT_LOOM_ERROR(random_(empty({2}, TensorOptions().dtype(ScalarType::Int8)), 0, 1000),
                    "loom::random_.from", "to - 1 = 999 is out of range for int8");
  EXPECT_LOOM_ERROR(randint(3, 1, {2}), "loom::random_.from", "expected from < to");
  EXPECT_LOOM_ERROR(dropout(f, 1.5, true), "loom::dropout", "expected p in [0, 1], found p=1.5");
  EXPECT_LOOM_ERROR(dropout(f, -1.0, false), "loom::dropout", "found p=-1");
  EXPECT_LOOM_ERROR(dropout(i, 0.5, true), "loom::dropout", "does not support dtype int64");
  EXPECT_LOOM_ERROR(randperm(-1), "loom::randperm.out", "expected n >= 0, found n=-1");
  // An out of another length is resized (as PyTorch's randperm_out does), not refused.
  Tensor resized = empty({3}, TensorOptions().dtype(ScalarType::Int64));
  randperm_out(resized, 5);
  EXPECT_EQ(resized.numel(), 5);
  EXPECT_LOOM_ERROR(randperm(300, TensorOptions().dtype(ScalarType::UInt8)), "loom::randperm.out",
                    "n=300 is too large for uint8 (largest value 255)");
  EXPECT_LOOM_ERROR(randperm(3, TensorOptions().dtype(ScalarType::Bool)), "loom::randperm.out",
                    "does not support dtype bool");
}

}  // namespace
}  // namespace loom::testing
