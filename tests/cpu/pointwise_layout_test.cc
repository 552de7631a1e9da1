// The CPU plugin's pointwise kernels across layouts and dtypes: type promotion by the
// core, result-dtype checks of in-place and out=, zero-size, 0-dim, N-d strided and large
// inputs, and float16/bfloat16 rounding.
#include "cpu_test_util.h"
#include "loom/dispatcher/boxing.h"
#include "loom/dispatcher/dispatcher.h"

namespace loom::testing {
namespace {

TEST_F(CpuPointwise, TypePromotion) {
  Tensor i32 = make(ScalarType::Int32, {3}, {7, -3, 2});
  Tensor f32 = make(ScalarType::Float32, {3}, {0.5, 0.25, -1});
  Tensor sum = call("loom::add.Tensor", {box(i32), box(f32), box(int64_t{1})});
  EXPECT_EQ(sum.dtype(), ScalarType::Float32);
  expect_values(sum, {7.5, -2.75, 1}, "int32 + float32");

  Tensor two = make(ScalarType::Int32, {3}, {2, 2, 4});
  Tensor q = call("loom::div.Tensor", {box(i32), box(two)});
  EXPECT_EQ(q.dtype(), ScalarType::Float32);
  expect_values(q, {3.5, -1.5, 0.5}, "int32 / int32");

  Tensor eq = call("loom::eq.Tensor", {box(i32), box(make(ScalarType::Float32, {3}, {7, 3, 2.5}))});
  EXPECT_EQ(eq.dtype(), ScalarType::Bool);
  expect_values(eq, {1, 0, 0}, "int32 == float32");

  // a 0-dim float64 tensor with an int32 tensor: a higher category, so its dtype wins
  Tensor zero_dim = make(ScalarType::Float64, {}, {0.5});
  Tensor m = call("loom::mul.Tensor", {box(i32), box(zero_dim)});
  EXPECT_EQ(m.dtype(), ScalarType::Float64);
  expect_values(m, {3.5, -1.5, 1}, "int32 * 0-dim float64");
  // a 0-dim int64 with an int32 tensor: same category, the dimensioned tensor wins
  Tensor zero_i64 = make(ScalarType::Int64, {}, {10});
  Tensor s = call("loom::add.Tensor", {box(i32), box(zero_i64), box(int64_t{1})});
  EXPECT_EQ(s.dtype(), ScalarType::Int32);
  expect_values(s, {17, 7, 12}, "int32 + 0-dim int64");
  // a 0-dim float64 with a float16 tensor: the dimensioned float16 wins
  Tensor h = make(ScalarType::Float16, {2}, {1.5, -2});
  Tensor hs = call("loom::mul.Tensor", {box(h), box(zero_dim)});
  EXPECT_EQ(hs.dtype(), ScalarType::Float16);
  expect_values(hs, {0.75, -1}, "float16 * 0-dim float64");

  Tensor mixed =
      call("loom::sub.Tensor", {box(make(ScalarType::Int8, {2}, {-5, 100})),
                                box(make(ScalarType::UInt8, {2}, {200, 3})), box(int64_t{1})});
  EXPECT_EQ(mixed.dtype(), ScalarType::Int16);
  expect_values(mixed, {-205, 97}, "int8 - uint8");

  Tensor hf = call("loom::add.Tensor",
                   {box(h), box(make(ScalarType::Float32, {2}, {0.1, 0.2})), box(int64_t{1})});
  EXPECT_EQ(hf.dtype(), ScalarType::Float32);
  expect_values(hf, {1.5 + static_cast<float>(0.1), -2 + static_cast<float>(0.2)},
                "float16 + float32");

  Tensor bf = call("loom::atan2", {box(make(ScalarType::BFloat16, {1}, {1})),
                                   box(make(ScalarType::Int64, {1}, {1}))});
  EXPECT_EQ(bf.dtype(), ScalarType::BFloat16);
  expect_values(bf, {std::atan2(1.0, 1.0)}, "atan2 bfloat16, int64");

  Tensor bi =
      call("loom::add.Tensor", {box(make(ScalarType::Bool, {2}, {1, 0})),
                                box(make(ScalarType::Int32, {2}, {5, 5})), box(int64_t{1})});
  EXPECT_EQ(bi.dtype(), ScalarType::Int32);
  expect_values(bi, {6, 5}, "bool + int32");
}

TEST_F(CpuPointwise, InPlaceAndOutCheckTheResultDtype) {
  Tensor i = make(ScalarType::Int32, {2}, {1, 2});
  Tensor f = make(ScalarType::Float32, {2}, {0.5, 0.5});
  // float result into an int self cannot be cast
  expect_error(
      [&] {
        call("loom::add_.Tensor", {box(i), box(f), box(int64_t{1})});
      },
      "loom::add_.Tensor", {"can't be cast"});
  expect_error([&] { call("loom::exp_", {box(i)}); }, "loom::exp_", {"can't be cast"});
  // an int other into a float self is fine
  call("loom::mul_.Tensor", {box(f), box(i)});
  expect_values(f, {0.5, 1.0}, "mul_ float32 by int32");
  // out= of a wider dtype receives the cast result
  Tensor out = empty(Shape{2}, ScalarType::Float64);
  call("loom::add.out", {box(i), box(i), box(int64_t{3}), box(out)});
  expect_values(out, {4, 8}, "add.out int32 into float64");
  // out= of the wrong shape, with no elements, is resized (Note [Resizing outs])
  Tensor resized = empty(Shape{0}, ScalarType::Int32);
  call("loom::add.out", {box(i), box(i), box(int64_t{1}), box(resized)});
  expect_values(resized, {2, 4}, "add.out into an empty out");
}

// ============================== layouts ==============================

TEST_F(CpuPointwise, ZeroSizeInputs) {
  Tensor e = empty(Shape{0, 3}, ScalarType::Float32);
  Tensor y = call("loom::exp", {box(e)});
  EXPECT_EQ(shape_of(y), (Shape{0, 3}));
  EXPECT_EQ(y.dtype(), ScalarType::Float32);
  Tensor row = make(ScalarType::Float32, {3}, {1, 2, 3});
  Tensor s = call("loom::add.Tensor", {box(e), box(row), box(int64_t{1})});
  EXPECT_EQ(shape_of(s), (Shape{0, 3}));
  Tensor c = call("loom::lt.Tensor", {box(row), box(e)});
  EXPECT_EQ(shape_of(c), (Shape{0, 3}));
  EXPECT_EQ(c.dtype(), ScalarType::Bool);
  Tensor ei = empty(Shape{0}, ScalarType::Int32);
  EXPECT_EQ(call("loom::remainder.Tensor", {box(ei), box(ei)}).numel(), 0);  // no div-by-0
  EXPECT_EQ(call("loom::pow.Tensor_Tensor", {box(ei), box(ei)}).numel(), 0);
  EXPECT_EQ(call("loom::neg", {box(ei)}).numel(), 0);
  call("loom::sigmoid_", {box(e)});
  Tensor out = empty(Shape{0, 3}, ScalarType::Float32);
  call("loom::mul.out", {box(e), box(row), box(out)});
  EXPECT_EQ(call("loom::clamp", {box(empty(Shape{2, 0}, ScalarType::Float16)), box(0.0), box(1.0)})
                .numel(),
            0);
}

TEST_F(CpuPointwise, ZeroDimInputs) {
  Tensor x = make(ScalarType::Float64, {}, {0.5});
  Tensor y = call("loom::exp", {box(x)});
  EXPECT_EQ(y.dim(), 0);
  expect_values(y, {std::exp(0.5)}, "exp 0-dim");
  Tensor z = call("loom::sub.Tensor", {box(x), box(x), box(int64_t{1})});
  EXPECT_EQ(z.dim(), 0);
  expect_values(z, {0.0}, "sub 0-dim");
}

// A 3-d input in many layouts, with every kind of operand stride, against an
// elementwise reference: exercises the N-d walk (dim ordering, coalescing, tails).
TEST_F(CpuPointwise, NdLayouts) {
  const int64_t n0 = 5, n1 = 7, n2 = 9;  // odd sizes: vector loop tails
  Values base_values;
  for (int64_t i = 0; i < n0 * n1 * n2; ++i) base_values.push_back(std::ldexp(i % 97, -3) - 5.0);
  Tensor base = make(ScalarType::Float32, {n0, n1, n2}, base_values);
  const Tensor layouts[] = {
      base,
      base.permute(std::vector<int64_t>{2, 0, 1}),
      base.transpose(0, 2),
      base.slice(2, 1, std::nullopt, 2),
      base.slice(1, 0, std::nullopt, 3).transpose(1, 2),
      base.select(1, 3),
      base.diagonal(0, 1, 2),
  };
  for (const Tensor& view : layouts) {
    SCOPED_TRACE(view.describe());
    Values in = values(view);
    // unary
    Tensor y = call("loom::tanh", {box(view)});
    Values want;
    for (double v : in) want.push_back(std::tanh(v));
    expect_values(y, want, "tanh");
    // binary with itself, with a contiguous copy-like tensor and with a broadcast row
    Tensor s = call("loom::mul.Tensor", {box(view), box(view)});
    want.clear();
    for (double v : in) want.push_back(v * v);
    expect_values(s, want, "mul self");
    Shape sizes = shape_of(view);
    Shape row_shape{sizes.back()};
    Values row_values;
    for (int64_t j = 0; j < sizes.back(); ++j) row_values.push_back(j * 0.5);
    Tensor row = make(ScalarType::Float32, row_shape, row_values);
    Tensor r = call("loom::sub.Tensor", {box(row), box(view), box(int64_t{2})});
    want.clear();
    for (size_t k = 0; k < in.size(); ++k) want.push_back(row_values[k % sizes.back()] - 2 * in[k]);
    expect_values(r, want, "sub broadcast row");
    // a 0-dim operand broadcast everywhere (stride 0 on every dim)
    Tensor scalar = make(ScalarType::Float32, {}, {1.5});
    Tensor g = call("loom::maximum", {box(scalar), box(view)});
    want.clear();
    for (double v : in) want.push_back(std::max(1.5, v));
    expect_values(g, want, "maximum 0-dim");
    // in-place into the strided view of a scratch copy
    Tensor scratch = make(ScalarType::Float32, {n0, n1, n2}, base_values);
    Tensor scratch_view = scratch.as_strided(view.sizes(), view.strides(), view.storage_offset());
    call("loom::add_.Tensor", {box(scratch_view), box(scalar), box(int64_t{2})});
    want.clear();
    for (double v : in) want.push_back(v + 3.0);
    expect_values(scratch_view, want, "add_ strided self");
  }
}

// Three-input ops whose broadcast operands are constant along each run (Note [Broadcast
// runs]): per-channel factors on [N, C, H * W] planes, with runs longer than the filled
// block and not a multiple of it, and runs shorter than a vector; float16 included.
TEST_F(CpuPointwise, BroadcastRunsOfThreeInputs) {
  for (int64_t plane : {int64_t{3}, int64_t{601}}) {
    const int64_t batch = 2, channels = 3;
    Values x_values, scale_values, shift_values;
    for (int64_t i = 0; i < batch * channels * plane; ++i) {
      x_values.push_back(std::ldexp(i % 37, -2) - 4.0);
    }
    for (int64_t c = 0; c < channels; ++c) {
      scale_values.push_back(0.5 + c);
      shift_values.push_back(c - 1.25);
    }
    for (ScalarType dtype : {ScalarType::Float32, ScalarType::Float64, ScalarType::Float16}) {
      SCOPED_TRACE(std::string(scalar_type_name(dtype)) + " plane " + std::to_string(plane));
      Tensor x = make(dtype, {batch, channels, plane}, x_values);
      Tensor scale = make(dtype, {channels, 1}, scale_values);
      Tensor shift = make(dtype, {channels, 1}, shift_values);
      Values want;
      for (int64_t i = 0; i < batch * channels * plane; ++i) {
        const int64_t c = (i / plane) % channels;
        want.push_back(shift_values[c] + 2 * x_values[i] * scale_values[c]);
      }
      expect_values(call("loom::addcmul", {box(shift), box(x), box(scale), box(int64_t{2})}), want,
                    "addcmul shift + 2 * x * scale");
      // a contiguous condition choosing between two per-channel operands
      want.clear();
      Values positive_values;
      for (int64_t i = 0; i < batch * channels * plane; ++i) {
        const int64_t c = (i / plane) % channels;
        positive_values.push_back(x_values[i] > 0);
        want.push_back(x_values[i] > 0 ? scale_values[c] : shift_values[c]);
      }
      Tensor positive = make(ScalarType::Bool, {batch, channels, plane}, positive_values);
      expect_values(call("loom::where.self", {box(positive), box(scale), box(shift)}), want,
                    "where with two per-channel operands");
    }
  }
}

// Rows that an input repeats (Note [Periodic runs]): [rows, period] against a [period]
// row, a 0-dim value and a contiguous tensor, with row lengths that divide the tile or
// not, a flat range that ends inside a tile, and a repeated row read with a stride
// (which keeps the row-by-row path).
TEST_F(CpuPointwise, PeriodicRowsOfInputsThatRepeat) {
  for (int64_t period : {int64_t{3}, int64_t{64}, int64_t{500}}) {
    const int64_t rows = 5000 / period + 3;
    Values x_values, row_values, wide_values;
    for (int64_t i = 0; i < rows * period; ++i) x_values.push_back(std::ldexp(i % 53, -3) - 3.0);
    for (int64_t c = 0; c < period; ++c) {
      row_values.push_back(std::ldexp(c % 11, -1) - 2.0);
      wide_values.push_back(row_values.back());
      wide_values.push_back(99.0);  // skipped by the strided view
    }
    for (ScalarType dtype : {ScalarType::Float32, ScalarType::Float64, ScalarType::Float16}) {
      SCOPED_TRACE(std::string(scalar_type_name(dtype)) + " period " + std::to_string(period));
      Tensor x = make(dtype, {rows, period}, x_values);
      Tensor row = make(dtype, {period}, row_values);
      Tensor half = make(dtype, {}, {0.5});
      Values want;
      for (int64_t i = 0; i < rows * period; ++i) {
        want.push_back(row_values[i % period] + 0.5 * x_values[i]);
      }
      expect_values(call("loom::addcmul", {box(row), box(x), box(half), box(int64_t{1})}), want,
                    "addcmul row + x * 0.5");
      want.clear();
      for (int64_t i = 0; i < rows * period; ++i) {
        want.push_back(x_values[i] * row_values[i % period]);
      }
      expect_values(call("loom::mul.Tensor", {box(x), box(row)}), want, "x * row");
      Tensor wide = make(dtype, {period, 2}, wide_values);
      Tensor strided_row = call("loom::select.int", {box(wide), box(int64_t{1}), box(int64_t{0})});
      expect_values(call("loom::mul.Tensor", {box(x), box(strided_row)}), want,
                    "x * a strided row");
    }
  }
}

TEST_F(CpuPointwise, LargeContiguousTensors) {
  const int64_t n = 1027;  // not a multiple of any vector width
  Values a, b;
  for (int64_t i = 0; i < n; ++i) {
    a.push_back(std::ldexp(i % 61, -2) - 7.0);
    b.push_back(std::ldexp(i % 13 + 1, -1));
  }
  for (ScalarType dtype : kFloatTypes) {
    SCOPED_TRACE(scalar_type_name(dtype));
    Tensor x = make(dtype, {n}, a), y = make(dtype, {n}, b);
    Values want;
    for (int64_t i = 0; i < n; ++i) want.push_back(a[i] * 3.0 + b[i]);
    expect_values(call("loom::add.Tensor", {box(y), box(x), box(int64_t{3})}), want, "add");
    want.clear();
    for (int64_t i = 0; i < n; ++i) want.push_back(a[i] / b[i]);
    expect_values(call("loom::div.Tensor", {box(x), box(y)}), want, "div");
    want.clear();
    for (int64_t i = 0; i < n; ++i) want.push_back(1.0 / (1.0 + std::exp(-a[i])));
    expect_values(call("loom::sigmoid", {box(x)}), want, "sigmoid");
  }
  Tensor xi = make(ScalarType::Int32, {n}, a);  // truncation of exact quarters is fine here
  Values vi = values(xi), want;
  for (double v : vi) want.push_back(v * v);
  expect_values(call("loom::mul.Tensor", {box(xi), box(xi)}), want, "int32 mul");
}

// ============================== float16 / bfloat16 conversions ==============================

// float32 -> float16 / bfloat16 rounds to nearest even (through copy_, the dispatcher's
// cast); results checked against the independent decoders above.
TEST_F(CpuPointwise, ReducedFloatConversionRoundsToNearestEven) {
  auto convert = [](const Values& in, ScalarType to) {
    Tensor src = make(ScalarType::Float32, {static_cast<int64_t>(in.size())}, in);
    Tensor dst = empty(Shape{static_cast<int64_t>(in.size())}, to);
    LoomValue args[] = {box(dst), box(src), box(false)};
    LoomValue ret[1];
    Dispatcher::instance().call(Dispatcher::instance().find_defined("loom::copy_"), args, 3, ret,
                                1);
    dispatch::release_value(ret[0]);
    return values(dst);
  };
  const double h_ulp1 = std::ldexp(1.0, -10);  // float16 ulp at 1
  Values half = convert(
      {1.0 + h_ulp1 / 2, 1.0 + 3 * h_ulp1 / 2, 1.0 + h_ulp1 / 4, 1.0 + 3 * h_ulp1 / 4, 65504.0,
       65519.0, 65520.0, 1e6, -1e6, std::ldexp(1.0, -25), 3 * std::ldexp(1.0, -25),
       std::ldexp(1.0, -26), std::ldexp(1.0, -14), std::ldexp(1023.0, -24), kNaN, -kInf, -0.0},
      ScalarType::Float16);
  Values want_half = {1.0,
                      1.0 + 2 * h_ulp1,
                      1.0,
                      1.0 + h_ulp1,
                      65504.0,
                      65504.0,
                      kInf,
                      kInf,
                      -kInf,
                      0.0,
                      std::ldexp(2.0, -24),
                      0.0,
                      std::ldexp(1.0, -14),
                      std::ldexp(1023.0, -24),
                      kNaN,
                      -kInf,
                      -0.0};
  ASSERT_EQ(half.size(), want_half.size());
  for (size_t i = 0; i < half.size(); ++i) {
    if (std::isnan(want_half[i])) {
      EXPECT_TRUE(std::isnan(half[i]));
    } else {
      EXPECT_EQ(half[i], want_half[i]) << "float16 case " << i;
    }
  }
  EXPECT_TRUE(std::signbit(half.back()));

  const double b_ulp1 = std::ldexp(1.0, -7);  // bfloat16 ulp at 1
  Values bf = convert({1.0 + b_ulp1 / 2, 1.0 + 3 * b_ulp1 / 2, 1.0 + 3 * b_ulp1 / 4,
                       std::numeric_limits<float>::max(), kNaN, -kInf, 3.0},
                      ScalarType::BFloat16);
  Values want_bf = {1.0, 1.0 + 2 * b_ulp1, 1.0 + b_ulp1, kInf, kNaN, -kInf, 3.0};
  for (size_t i = 0; i < bf.size(); ++i) {
    if (std::isnan(want_bf[i])) {
      EXPECT_TRUE(std::isnan(bf[i]));
    } else {
      EXPECT_EQ(bf[i], want_bf[i]) << "bfloat16 case " << i;
    }
  }
  // every float16 value survives float16 -> float32 -> float16 exactly
  std::vector<uint16_t> all(0x10000);
  for (uint32_t i = 0; i <= 0xffff; ++i) all[i] = static_cast<uint16_t>(i);
  Tensor h = from_blob(all.data(), Shape{0x10000}, Shape{1}, ScalarType::Float16, Device{}, nullptr,
                       nullptr);
  Tensor f = empty(Shape{0x10000}, ScalarType::Float32);
  LoomValue args[] = {box(f), box(h), box(false)};
  LoomValue ret[1];
  Dispatcher::instance().call(Dispatcher::instance().find_defined("loom::copy_"), args, 3, ret, 1);
  dispatch::release_value(ret[0]);
  Tensor back = empty(Shape{0x10000}, ScalarType::Float16);
  LoomValue args2[] = {box(back), box(f), box(false)};
  Dispatcher::instance().call(Dispatcher::instance().find_defined("loom::copy_"), args2, 3, ret, 1);
  dispatch::release_value(ret[0]);
  int mismatches = 0;
  for (uint32_t i = 0; i <= 0xffff; ++i) {
    const double want = half_to_double(static_cast<uint16_t>(i));
    const double got_f = f.data<float>()[i];
    const uint16_t got_h = back.data<uint16_t>()[i];
    if (std::isnan(want)) {
      mismatches += !std::isnan(got_f) || (got_h & 0x7c00) != 0x7c00 || (got_h & 0x3ff) == 0;
    } else {
      mismatches += got_f != want || got_h != i;
    }
  }
  EXPECT_EQ(mismatches, 0);
}

}  // namespace
}  // namespace loom::testing
