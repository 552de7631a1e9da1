// Reductions through the typed API, against hand-computed values: dims lists, keepdim,
// dtype, strided / zero-size / 0-dim inputs, NaN propagation, the out= variants, the meta
// device, and errors.
#include <cmath>

#include "ops_test_util.h"

namespace loom::testing {
namespace {

class Reduction : public OpsTest {};

TEST_F(Reduction, SumOverDimsWithKeepdimAndNegativeDims) {
  for (ScalarType t : {ScalarType::Float32, ScalarType::Float64, ScalarType::Float16,
                       ScalarType::BFloat16, ScalarType::Int32}) {
    Tensor x = make(k23, {2, 3}, t);
    EXPECT_EQ(values(sum(x, {0})), (Values{5, 7, 9})) << scalar_type_name(t);
    EXPECT_EQ(values(sum(x, {-1})), (Values{6, 15}));
    EXPECT_EQ(shape(sum(x, {1}, true)), (Shape{2, 1}));
    EXPECT_EQ(values(sum(x, {0, 1})), (Values{21}));
    EXPECT_EQ(shape(sum(x, {0, 1}, true)), (Shape{1, 1}));
    EXPECT_EQ(values(x.sum()), (Values{21}));
    EXPECT_EQ(x.sum().dim(), 0);
  }
}

TEST_F(Reduction, SumDtypes) {
  EXPECT_EQ(sum(make(k23, {2, 3}, ScalarType::Int8)).dtype(), ScalarType::Int64);
  EXPECT_EQ(sum(make({1, 0, 1}, {3}, ScalarType::Bool)).item<int64_t>(), 2);
  EXPECT_EQ(sum(make(k23, {2, 3}, ScalarType::Float16)).dtype(), ScalarType::Float16);
  Tensor as_double = sum(make(k23, {2, 3}, ScalarType::Int32), {1}, false, ScalarType::Float64);
  EXPECT_EQ(as_double.dtype(), ScalarType::Float64);
  EXPECT_EQ(values(as_double), (Values{6, 15}));
  // int8 sums accumulate in int64: no overflow at 127
  EXPECT_EQ(sum(make({100, 100, 100}, {3}, ScalarType::Int8)).item<int64_t>(), 300);
}

// Note [dtype= casts the input first]: the input is converted, then reduced.
TEST_F(Reduction, DtypeConvertsTheInputBeforeReducing) {
  const ScalarType i64 = ScalarType::Int64;
  Tensor x = make({0.6, 0.6}, {2});
  // torch.tensor([0.6, 0.6]).sum(dtype=torch.int64) -> tensor(0)
  EXPECT_EQ(values(loom::sum(x, i64)), (Values{0}));
  EXPECT_EQ(loom::sum(x, i64).dtype(), i64);
  // torch.tensor([[0.6, 0.6], [1.5, 1.5]]).sum(1, dtype=torch.int64) -> tensor([0, 2])
  EXPECT_EQ(values(loom::sum(make({0.6, 0.6, 1.5, 1.5}, {2, 2}), IntList{1}, false, i64)),
            (Values{0, 2}));
  // torch.tensor([1.5, 2.5]).prod(dtype=torch.int64) -> tensor(2); prod over dim 0 too.
  EXPECT_EQ(values(loom::prod(make({1.5, 2.5}, {2}), i64)), (Values{2}));
  EXPECT_EQ(values(loom::prod(make({1.5, 2.5}, {2}), 0, false, i64)), (Values{2}));
  // torch.tensor([1, 2], dtype=torch.int32).mean(dtype=torch.float64) -> 1.5
  EXPECT_EQ(values(loom::mean(make({1, 2}, {2}, ScalarType::Int32), ScalarType::Float64)),
            (Values{1.5}));
  // A float64 input reduced as float32 is rounded first: torch.tensor([1 + 2**-30],
  // dtype=torch.float64).sum(dtype=torch.float32) -> tensor(1.)
  EXPECT_EQ(values(loom::sum(make({1 + std::ldexp(1.0, -30)}, {1}, ScalarType::Float64),
                             ScalarType::Float32)),
            (Values{1}));
  // out= with dtype: torch.sum(x, 0, dtype=torch.int64, out=torch.empty(0, dtype=torch.int64))
  Tensor out = loom::empty({0}, TensorOptions().dtype(i64));
  sum_out(out, x, IntList{0}, false, i64);
  EXPECT_EQ(values(out), (Values{0}));
}

// Reducing over an empty dim: the ops with an identity return it, the others raise, as
// PyTorch 2.x does (values from the same calls on torch.empty(0, 3)).
TEST_F(Reduction, EmptyReductionsReturnTheIdentityOrRaise) {
  Tensor e = loom::empty({0, 3});
  const double inf = INFINITY;
  EXPECT_EQ(values(loom::sum(e, IntList{0})), (Values{0, 0, 0}));
  EXPECT_EQ(values(loom::prod(e, 0)), (Values{1, 1, 1}));
  EXPECT_EQ(values(loom::logsumexp(e, IntList{0})), (Values{-inf, -inf, -inf}));
  EXPECT_EQ(values(loom::norm(e, Scalar(2), IntList{0})), (Values{0, 0, 0}));
  EXPECT_EQ(values(loom::any(e, IntList{0})), (Values{0, 0, 0}));
  EXPECT_EQ(values(loom::all(e, IntList{0})), (Values{1, 1, 1}));
  for (double v : values(loom::mean(e, IntList{0}))) EXPECT_TRUE(std::isnan(v));  // 0 / 0
  for (double v : values(loom::var(e, IntList{0}))) EXPECT_TRUE(std::isnan(v));
  for (double v : values(loom::std(e, IntList{0}))) EXPECT_TRUE(std::isnan(v));
  EXPECT_EQ(values(loom::sum(e)), (Values{0}));
  EXPECT_EQ(values(loom::prod(e)), (Values{1}));
  // No identity: torch.amax(torch.empty(0, 3), 0) -> "Expected reduction dim 0 to have
  // non-zero size"; also max.dim, argmax, and max() of an empty tensor.
  expect_error([&] { loom::amax(e, IntList{0}); }, "loom::amax",
               "expected a non-empty dim 0 to reduce");
  expect_error([&] { loom::max(e, 0); }, "loom::max.dim", "expected a non-empty dim 0");
  expect_error([&] { loom::argmax(e, 0); }, "loom::argmax", "expected a non-empty dim 0");
  expect_error([&] { loom::max(e); }, "loom::max", "");
  // Reducing the non-empty dim of an empty tensor is fine everywhere: [0, 3] -> [0].
  EXPECT_EQ(shape(loom::amax(e, IntList{1})), (Shape{0}));
  EXPECT_EQ(shape(loom::logsumexp(e, IntList{1})), (Shape{0}));
  EXPECT_EQ(shape(std::get<0>(loom::max(e, 1))), (Shape{0}));
}

// torch.std(torch.tensor([1e30, -1e30, 0.])) -> 1e30 (the variance, 1e60, overflows
// float32: torch.var gives inf, and so does loom).
TEST_F(Reduction, Float32StdDoesNotOverflowThroughItsVariance) {
  Tensor x = make({1e30, -1e30, 0}, {3});
  EXPECT_EQ(values(loom::std(x, IntList{0})), (Values{static_cast<double>(1e30f)}));
  EXPECT_EQ(loom::std(x, IntList{0}).dtype(), ScalarType::Float32);
  EXPECT_EQ(values(loom::var(x, IntList{0})), (Values{INFINITY}));
  Tensor h = make({60000, -60000, 0}, {3}, ScalarType::Float16);
  expect_close(values(loom::std(h)), {60000}, 1e-3);
}

TEST_F(Reduction, StridedZeroSizeAndZeroDimInputs) {
  Tensor x = make(k23, {2, 3}).t();  // [[1, 4], [2, 5], [3, 6]], transposed strides
  EXPECT_EQ(values(sum(x, {1})), (Values{5, 7, 9}));
  EXPECT_EQ(values(amax(x, {0})), (Values{3, 6}));
  Tensor e = empty({0, 3});
  EXPECT_EQ(values(sum(e, {0})), (Values{0, 0, 0}));
  EXPECT_EQ(values(prod(e, 0)), (Values{1, 1, 1}));
  EXPECT_EQ(shape(sum(e, {1})), (Shape{0}));
  Tensor s = make({4}, {});
  EXPECT_EQ(values(sum(s, {0})), (Values{4}));
  EXPECT_EQ(values(amax(s)), (Values{4}));
}

// Note [Column reductions]: a reduction whose kept dim is the unit-stride one (a
// channels-last batch's statistics, a column sum) folds adjacent outputs together and
// gives the bits of the per-output walk over a row-major copy, over chunks (more than
// 16384 elements per output), full groups of 64 columns and narrower ones.
TEST_F(Reduction, ColumnReductionsGiveTheBitsOfTheRowWalk) {
  manual_seed(21);
  Tensor x = random({3, 20, 80, 80});  // 19200 elements per channel: two chunks
  Tensor cl = x.contiguous(MemoryFormat::ChannelsLast);
  const std::vector<int64_t> dims{0, 2, 3};
  EXPECT_EQ(values(sum(cl, dims)), values(sum(x, dims)));
  EXPECT_EQ(values(var(cl, dims, 0)), values(var(x, dims, 0)));
  EXPECT_EQ(values(amax(cl, dims)), values(amax(x, dims)));
  EXPECT_EQ(values(amin(cl, dims)), values(amin(x, dims)));
  EXPECT_EQ(values(mean(cl, dims)), values(mean(x, dims)));
  // against a float64 reference, channel by channel
  const Values v = values(x);
  Values expected(20, 0.0);
  for (size_t i = 0; i < v.size(); ++i) expected[i / 6400 % 20] += v[i];
  expect_close(values(sum(cl, dims)), expected);  // a float32 result

  // a column sum of a row-major matrix: 67 columns (a group of 64 and one of 3)
  Tensor m = random({20000, 67}, ScalarType::Float64);
  Tensor by_rows = m.t().contiguous();
  EXPECT_EQ(values(sum(m, {0})), values(sum(by_rows, {1})));
  EXPECT_EQ(values(var(m, IntList{0})), values(var(by_rows, IntList{1})));
  Tensor small = make(wave(5 * 19), {5, 19}, ScalarType::Float64);
  EXPECT_EQ(values(prod(small, 0)), values(prod(small.t().contiguous(), 1)));
  Tensor ints = make(wave(7 * 18), {7, 18}, ScalarType::Int64);
  EXPECT_EQ(values(sum(ints, {0})), values(sum(ints.t().contiguous(), {1})));
  // NaN in one column propagates to that column only
  Tensor with_nan = make({1, 2, std::nan(""), 4, 5, 6}, {2, 3});
  expect_close(values(amax(with_nan, {0})), {4, 5, std::nan("")});
}

// Note [var_mean kernel]: the CPU's var_mean returns var's own mean, one pass fewer than
// the decomposition; its values match var and mean for every layout and split.
TEST_F(Reduction, VarMeanKernelMatchesVarAndMean) {
  manual_seed(5);
  Tensor x = random({3, 20, 80, 80});  // 19200 elements per channel: two chunks
  Tensor cl = x.contiguous(MemoryFormat::ChannelsLast);
  for (const Tensor& input : {x, cl}) {
    for (const std::vector<int64_t>& dims :
         {std::vector<int64_t>{0, 2, 3}, {1}, {-1, 0}, {0, 1, 2, 3}}) {
      for (bool keepdim : {false, true}) {
        auto [v, m] = var_mean(input, dims, 0, keepdim);
        EXPECT_EQ(shape(v), shape(var(input, dims, 0, keepdim)));
        EXPECT_EQ(shape(m), shape(mean(input, dims, keepdim)));
        expect_close(values(v), values(var(x, dims, 0, keepdim)), 1e-5);
        expect_close(values(m), values(mean(x, dims, keepdim)), 1e-5);
      }
    }
  }
  // every dim (None or an empty list), correction 1, float64, a 0-dim input, half precision
  Tensor d = random({7, 9}, ScalarType::Float64);
  auto [vd, md] = var_mean(d);
  EXPECT_EQ(shape(vd), (Shape{}));
  expect_close(values(vd), values(var(d)), 1e-12);
  expect_close(values(md), values(mean(d)), 1e-12);
  auto [vl, ml] = var_mean(d, IntList{}, std::nullopt, true);
  EXPECT_EQ(shape(vl), shape(var(d, IntList{}, std::nullopt, true)));
  expect_close(values(vl), values(vd), 1e-12);
  auto [v0, m0] = var_mean(make({2.5}, {}), IntList{0}, 0);
  EXPECT_EQ(shape(m0), (Shape{}));
  expect_close(values(m0), {2.5});
  expect_close(values(v0), {0});
  Tensor h = make(k23, {2, 3}, ScalarType::BFloat16);
  auto [vh, mh] = var_mean(h, IntList{1});
  EXPECT_EQ(vh.dtype(), ScalarType::BFloat16);
  expect_close(values(vh), {1, 1});
  expect_close(values(mh), {2, 5});
  // nothing to reduce: NaN for both, as var and mean give
  auto [ve, me] = var_mean(empty({0, 3}), IntList{0});
  EXPECT_EQ(shape(me), (Shape{3}));
  EXPECT_TRUE(std::isnan(values(ve)[0]) && std::isnan(values(me)[0]));
  // the meta device keeps the decomposition: the same shapes
  auto [vm, mm] = var_mean(empty({4, 5}, TensorOptions().device(Device{kMeta, -1})), IntList{1},
                           std::nullopt, true);
  EXPECT_EQ(shape(mm), (Shape{4, 1}));
  EXPECT_EQ(shape(vm), (Shape{4, 1}));
}

TEST_F(Reduction, ProdMeanAndFullReductions) {
  Tensor x = make(k23, {2, 3});
  EXPECT_EQ(values(prod(x, 1)), (Values{6, 120}));
  EXPECT_EQ(values(prod(x)), (Values{720}));
  EXPECT_EQ(prod(make(k23, {2, 3}, ScalarType::Int16)).dtype(), ScalarType::Int64);
  expect_close(values(mean(x, {1})), {2, 5});
  expect_close(values(x.mean()), {3.5});
  expect_close(values(mean(make(k23, {2, 3}, ScalarType::BFloat16), {0})), {2.5, 3.5, 4.5});
  EXPECT_TRUE(std::isnan(mean(empty({0})).item<double>()));
  EXPECT_EQ(values(x.max()), (Values{6}));
  EXPECT_EQ(values(x.min()), (Values{1}));
}

TEST_F(Reduction, ExtremaPropagateNaNAndReturnFirstIndices) {
  Tensor x = make({3, 1, 3, std::nan(""), 2, 0}, {2, 3});
  expect_close(values(amax(x, {1})), {3, std::nan("")});
  expect_close(values(amin(x, {1})), {1, std::nan("")});
  auto [v, i] = max(x, 1);
  expect_close(values(v), {3, std::nan("")});
  EXPECT_EQ(values(i), (Values{0, 0}));  // first occurrence of 3; the NaN's index
  auto [mv, mi] = min(make({5, 2, 2, 7}, {4}, ScalarType::Int64), 0, true);
  EXPECT_EQ(values(mv), (Values{2}));
  EXPECT_EQ(values(mi), (Values{1}));
  EXPECT_EQ(shape(mi), (Shape{1}));
  EXPECT_EQ(mi.dtype(), ScalarType::Int64);
}

TEST_F(Reduction, ArgmaxArgmin) {
  Tensor x = make({1, 9, 3, 7, 2, 8}, {2, 3});
  EXPECT_EQ(values(argmax(x)), (Values{1}));
  EXPECT_EQ(values(argmin(x)), (Values{0}));
  EXPECT_EQ(values(argmax(x, 0)), (Values{1, 0, 1}));
  EXPECT_EQ(values(argmin(x, 1, true)), (Values{0, 1}));
  EXPECT_EQ(shape(argmax(x, std::nullopt, true)), (Shape{1, 1}));
  EXPECT_EQ(argmax(x).dtype(), ScalarType::Int64);
}

TEST_F(Reduction, VarStdWithCorrection) {
  Tensor x = make({1, 2, 3, 4, 2, 4, 6, 8}, {2, 4});
  expect_close(values(var(x, IntList{1})), {5.0 / 3, 20.0 / 3});
  expect_close(values(var(x, IntList{1}, 0)), {1.25, 5.0});
  expect_close(values(std(x, IntList{1})), {std::sqrt(5.0 / 3), std::sqrt(20.0 / 3)});
  expect_close(values(var(x)), {(150 - 8 * 3.75 * 3.75) / 7});
  auto [v, m] = var_mean(x, IntList{0}, std::nullopt, true);
  expect_close(values(v), {0.5, 2, 4.5, 8});
  expect_close(values(m), {1.5, 3, 4.5, 6});
  EXPECT_EQ(shape(m), (Shape{1, 4}));
  // one element with correction 1: division by zero gives NaN (0/0)
  EXPECT_TRUE(std::isnan(var(make({3}, {1})).item<double>()));
  expect_close(values(var(make({1, 2, 3, 4}, {4}, ScalarType::Float64))), {5.0 / 3}, 1e-12);
}

TEST_F(Reduction, Norms) {
  Tensor x = make({3, -4, 0, 1}, {2, 2});
  expect_close(values(norm(x)), {std::sqrt(26.0)});
  expect_close(values(norm(x, 1, {1})), {7, 1});
  expect_close(values(norm(x, INFINITY, {1})), {4, 1});
  expect_close(values(norm(x, 3, {0})), {std::cbrt(27.0), std::cbrt(65.0)});
  expect_close(values(norm(x, 0, {1})), {2, 1});
}

TEST_F(Reduction, LogSumExpIsStable) {
  Tensor x = make({1000, 1000, -INFINITY, -INFINITY, 0, std::log(3.0)}, {3, 2});
  expect_close(values(logsumexp(x, {1})), {1000 + std::log(2.0), -INFINITY, std::log(4.0)});
  EXPECT_EQ(shape(logsumexp(x, {1}, true)), (Shape{3, 1}));
  expect_close(values(logsumexp(make(k23, {2, 3}, ScalarType::Int64), {0})),
               {std::log(std::exp(1) + std::exp(4)), std::log(std::exp(2) + std::exp(5)),
                std::log(std::exp(3) + std::exp(6))},
               1e-5);
}

TEST_F(Reduction, AnyAll) {
  Tensor x = make({0, 1, 0, 0, 2, 3}, {2, 3}, ScalarType::Int32);
  EXPECT_EQ(values(any(x, IntList{1})), (Values{1, 1}));
  EXPECT_EQ(values(all(x, IntList{1})), (Values{0, 0}));
  EXPECT_EQ(values(all(x, IntList{0})), (Values{0, 1, 0}));
  EXPECT_EQ(any(x).dtype(), ScalarType::Bool);
  EXPECT_EQ(values(all(empty({0}))), (Values{1}));
  EXPECT_EQ(values(any(make({std::nan("")}, {1}))), (Values{1}));
}

TEST_F(Reduction, OutVariantsAndCasting) {
  Tensor x = make(k23, {2, 3});
  Tensor out = empty({3}, TensorOptions().dtype(ScalarType::Float64));
  Tensor r = sum_out(out, x, {0});
  EXPECT_EQ(r.impl(), out.impl());
  EXPECT_EQ(values(out), (Values{5, 7, 9}));
  // a strided out is written through a temporary
  Tensor wide = zeros({3, 2});
  sum_out(wide.select(1, 1), x, {0});
  EXPECT_EQ(values(wide), (Values{0, 5, 0, 7, 0, 9}));
  Tensor values_out = empty({2}),
         indices_out = empty({2}, TensorOptions().dtype(ScalarType::Int64));
  max_out(values_out, indices_out, x, 1);
  EXPECT_EQ(values(values_out), (Values{3, 6}));
  EXPECT_EQ(values(indices_out), (Values{2, 2}));
}

TEST_F(Reduction, MetaDeviceRunsOnlyTheShapeRule) {
  Tensor m = empty({4, 5, 6}, TensorOptions().device(Device{kMeta, -1}));
  EXPECT_EQ(shape(sum(m, {0, 2}, true)), (Shape{1, 5, 1}));
  auto [v, i] = max(m, 1);
  EXPECT_EQ(shape(i), (Shape{4, 6}));
  EXPECT_EQ(i.dtype(), ScalarType::Int64);
  EXPECT_EQ(shape(mean(m, {-1})), (Shape{4, 5}));
  EXPECT_EQ(shape(argmax(m)), (Shape{}));
}

// Kept whole across families: also cumsum and cumsum_ (scan).
TEST_F(Reduction, BadInputsGetErrorsNamingTheOp) {
  Tensor x = make(k23, {2, 3});
  expect_error([&] { sum(x, {2}); }, "loom::sum.dim_IntList", "dim 2 is out of range");
  expect_error([&] { sum(x, {1, -1}); }, "loom::sum.dim_IntList", "appears more than once");
  expect_error([&] { amax(empty({0, 2}), {0}); }, "loom::amax", "non-empty dim 0");
  expect_error([&] { max(empty({0})); }, "loom::max", "non-empty input");
  expect_error(
      [&] {
        var(make(k23, {2, 3}, ScalarType::Int64));
      },
      "loom::var.correction", "expected a floating point input, found int64");
  expect_error([&] { var_mean(x, IntList{2}); }, "loom::var_mean.correction",
               "dim 2 is out of range");
  expect_error(
      [&] {
        var_mean(x, IntList{0, -2});
      },
      "loom::var_mean.correction", "dim 0 appears more than once");
  expect_error(
      [&] {
        var_mean(make(k23, {2, 3}, ScalarType::Int32));
      },
      "loom::var_mean.correction", "int32");
  expect_error(
      [&] {
        mean(make(k23, {2, 3}, ScalarType::Int64));
      },
      "loom::mean", "expected a floating point input or dtype, found int64");
  expect_error([&] { sum_out(empty({3}, TensorOptions().dtype(ScalarType::Int64)), x, {0}); },
               "loom::sum.dim_IntList_out", "can't be cast");
  expect_error([&] { cumsum(x, 3); }, "loom::cumsum", "dim 3 is out of range");
  expect_error(
      [&] {
        make(k23, {2, 3}, ScalarType::Int32).cumsum_(1, ScalarType::Float32);
      },
      "loom::cumsum_", "can't be cast to self's dtype int32");
}

TEST_F(Reduction, BincountAndHistc) {
  Tensor x = make({0, 1, 1, 3}, {4}, ScalarType::Int64);
  // torch.bincount(torch.tensor([0, 1, 1, 3])) -> [1, 2, 0, 1]
  EXPECT_EQ(values(bincount(x)), (Values{1, 2, 0, 1}));
  EXPECT_EQ(bincount(x).dtype(), ScalarType::Int64);
  Tensor w = make({0.5, 1, 1, 2}, {4});
  EXPECT_EQ(values(bincount(x, w)), (Values{0.5, 2, 0, 2}));
  EXPECT_EQ(bincount(x, w).dtype(), ScalarType::Float32);
  EXPECT_EQ(bincount(x, make({1, 1, 1, 1}, {4}, ScalarType::Int32)).dtype(), ScalarType::Float64);
  EXPECT_EQ(shape(bincount(x, std::nullopt, 6)), (Shape{6}));
  expect_error(
      [&] {
        bincount(make({1, -1}, {2}, ScalarType::Int64));
      },
      "loom::bincount", "expected non-negative values, found -1");
  // torch.histc(torch.tensor([1., 2, 1]), bins=4, min=0, max=3) -> [0., 2., 1., 0.]
  EXPECT_EQ(values(histc(make({1, 2, 1}, {3}), 4, 0, 3)), (Values{0, 2, 1, 0}));
  // Outside the range and NaN are left out; max falls in the last bin.
  EXPECT_EQ(values(histc(make({-1, 3, NAN, 0}, {4}), 3, 0, 3)), (Values{1, 0, 1}));
  // min = max = 0: the data's range. torch.histc(torch.tensor([1., 2, 3]), bins=2) -> [1., 2.]
  EXPECT_EQ(values(histc(make({1, 2, 3}, {3}), 2)), (Values{1, 2}));
}

}  // namespace
}  // namespace loom::testing
