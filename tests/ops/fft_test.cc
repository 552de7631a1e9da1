// The fft family and the complex dtypes it returns, against hand-computed transforms:
// _fft_r2c and _fft_c2r (one and several dims, every normalization, both halves), round
// trips, the views between complex and float tensors, printing, safetensors, the meta
// device, and the errors.
#include <cmath>
#include <cstdio>

#include "loom/safetensors.h"
#include "loom/tensor_io.h"
#include "ops_test_util.h"

namespace loom::testing {
namespace {

class Fft : public OpsTest {};

// A complex tensor's parts, real and imaginary in turn.
Values parts(const Tensor& z) {
  return values(view_as_real(z));
}

TEST_F(Fft, RealToComplexMatchesTheDefinition) {
  Tensor x = make({1, 2, 3, 4}, {4}, ScalarType::Float64);
  Tensor half = _fft_r2c(x, {0}, 0, true);
  EXPECT_EQ(half.dtype(), ScalarType::ComplexDouble);
  EXPECT_EQ(shape(half), (Shape{3}));
  expect_close(parts(half), {10, 0, -2, 2, -2, 0}, 1e-12);
  expect_close(parts(_fft_r2c(x, {0}, 0, false)), {10, 0, -2, 2, -2, 0, -2, -2}, 1e-12);
  // normalization 1 divides by sqrt(4), 2 by 4
  expect_close(parts(_fft_r2c(x, {0}, 1, true)), {5, 0, -1, 1, -1, 0}, 1e-12);
  expect_close(parts(_fft_r2c(x, {-1}, 2, true)), {2.5, 0, -0.5, 0.5, -0.5, 0}, 1e-12);
  // float32 in, complex64 out; a batch of rows along dim 1 of a transposed input
  Tensor rows = make({1, 0, 2, 0, 3, 0, 4, 0}, {4, 2}).t();
  Tensor z = _fft_r2c(rows, {1}, 0, true);
  EXPECT_EQ(z.dtype(), ScalarType::ComplexFloat);
  expect_close(parts(z), {10, 0, -2, 2, -2, 0, 0, 0, 0, 0, 0, 0}, 1e-5);
}

TEST_F(Fft, TwoDimsAndRoundTrips) {
  // the 2-D transform of a single 1 at (0, 1) in a 2 x 3 grid: e^{-2 pi i k1 / 3}
  Tensor x = make({0, 1, 0, 0, 0, 0}, {2, 3}, ScalarType::Float64);
  Tensor z = _fft_r2c(x, {0, 1}, 0, true);
  ASSERT_EQ(shape(z), (Shape{2, 2}));
  const double c = std::cos(2 * M_PI / 3), s = -std::sin(2 * M_PI / 3);
  expect_close(parts(z), {1, 0, c, s, 1, 0, c, s}, 1e-12);
  // c2r undoes r2c for each normalization pairing (none then 1/n, 1/sqrt(n) twice), odd
  // and even lengths
  Tensor signal = random({3, 4, 7}, ScalarType::Float64);
  Tensor back = _fft_c2r(_fft_r2c(signal, {0, 2}, 0, true), {0, 2}, 2, 7);
  expect_close(values(back), values(signal), 1e-12);
  Tensor ortho = _fft_c2r(_fft_r2c(signal, {1, 2}, 1, true), {1, 2}, 1, 7);
  expect_close(values(ortho), values(signal), 1e-12);
  Tensor even = random({5, 6}, ScalarType::Float64);
  expect_close(values(_fft_c2r(_fft_r2c(even, {1}, 2, true), {1}, 0, 6)), values(even), 1e-12);
}

TEST_F(Fft, ComplexToRealIgnoresTheImaginaryPartsOfDcAndNyquist) {
  // bins [1+5i, 2+i, 3+7i] of a 4-element signal: x_j = 1 + 2 Re((2+i) e^{i pi j/2})
  // + 3 (-1)^j, the 5i and 7i ignored
  Tensor z = view_as_complex(make({1, 5, 2, 1, 3, 7}, {3, 2}, ScalarType::Float64));
  expect_close(values(_fft_c2r(z, {0}, 0, 4)), {8, -4, 0, 0}, 1e-12);
}

TEST_F(Fft, ComplexViewsShareStorage) {
  Tensor pairs = make({1, 2, 3, 4, 5, 6}, {3, 2});
  Tensor z = view_as_complex(pairs);
  EXPECT_EQ(z.dtype(), ScalarType::ComplexFloat);
  EXPECT_EQ(shape(z), (Shape{3}));
  EXPECT_EQ(z.data_ptr(), pairs.data_ptr());
  Tensor back = view_as_real(z.narrow(0, 1, 2));
  EXPECT_EQ(shape(back), (Shape{2, 2}));
  EXPECT_EQ(values(back), (Values{3, 4, 5, 6}));
  EXPECT_NE(to_string(z).find("1.+2.j"), std::string::npos) << to_string(z);
  expect_error(
      [&] {
        view_as_complex(make({1, 2, 3, 4}, {2, 2}).t());
      },
      "loom::view_as_complex", "expected a last dimension with stride 1, found 2");
  expect_error(
      [&] {
        view_as_complex(make({1, 2}, {2}, ScalarType::Int64));
      },
      "loom::view_as_complex", "expected a float32 or float64 tensor, found int64");
  expect_error([&] { view_as_real(pairs); }, "loom::view_as_real",
               "expected a complex tensor, found float32");
}

TEST_F(Fft, ComplexTensorsCopyAndRoundTripThroughSafetensors) {
  Tensor z = _fft_r2c(make({1, 2, 3, 4}, {4}), {0}, 0, true);  // complex64
  Tensor wide = empty({3}, TensorOptions().dtype(ScalarType::ComplexDouble));
  copy_(wide, z);
  expect_close(parts(wide), {10, 0, -2, 2, -2, 0}, 1e-6);
  Tensor real = empty({3}, TensorOptions().dtype(ScalarType::Float32));
  copy_(real, z);  // the real parts, as PyTorch keeps them
  expect_close(values(real), {10, -2, -2}, 1e-6);
  const std::string path = ::testing::TempDir() + "/loom_complex.safetensors";
  save_safetensors(path, {{"z", z}});
  SafetensorsFile file = load_safetensors(path);
  ASSERT_EQ(file.tensors.size(), 1u);
  EXPECT_EQ(file.tensors[0].second.dtype(), ScalarType::ComplexFloat);
  expect_close(parts(file.tensors[0].second), parts(z), 0);
  std::remove(path.c_str());
}

TEST_F(Fft, MetaDeviceAndErrors) {
  Tensor m = empty({4, 10}, TensorOptions().device(Device{kMeta, -1}));
  Tensor z = _fft_r2c(m, {1}, 0, true);
  EXPECT_EQ(shape(z), (Shape{4, 6}));
  EXPECT_EQ(z.dtype(), ScalarType::ComplexFloat);
  EXPECT_EQ(shape(_fft_c2r(z, {1}, 2, 10)), (Shape{4, 10}));
  Tensor x = make({1, 2, 3, 4}, {4});
  expect_error([&] { _fft_r2c(x, {1}, 0, true); }, "loom::_fft_r2c",
               "dim 1 is out of range for a 1-dim tensor");
  expect_error([&] { _fft_r2c(x, {}, 0, true); }, "loom::_fft_r2c",
               "expected at least one dim to transform, found none");
  // the CPU kernel claims complex inputs only (the decomposition says the same in words)
  expect_error([&] { _fft_c2r(x, {0}, 0, 6); }, "loom::_fft_c2r",
               "does not support dtype float32 (claims: complex64, complex128)");
  expect_error([&] { _fft_c2r(_fft_r2c(x, {0}, 0, true), {0}, 0, 8); }, "loom::_fft_c2r",
               "expected 5 bins in the last transformed dim for last_dim_size 8, found 3");
}

}  // namespace
}  // namespace loom::testing
