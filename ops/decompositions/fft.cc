// Decompositions of the fft family: _fft_r2c and _fft_c2r as discrete Fourier transforms
// by matrix products over the real and imaginary parts (Note [FFT by products]), for
// every backend; the CPU plugin replaces them with FFTW's (plugins/cpu/kernels/fft.cc).
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "decomposition.h"
#include "loom/sdk/reference/fft.hpp"

namespace loom::ops {
namespace {

// Note [FFT by products]
// ~~~~~~~~~~~~~~~~~~~~~~
// A DFT along one dim of n elements is a product with the [rows, n] matrices
// C[k][j] = cos(2 pi jk / n) and S[k][j] = sign sin(2 pi jk / n) (sign -1 forward, +1
// inverse): (re + i im)(C + i S) = (re C - im S) + i (re S + im C), each product taken
// along the dim. A real input has im = 0; the complex result is the two parts stacked as
// a last dim of 2 and viewed as complex (Note [Complex views]). It costs O(n^2) per line
// where an FFT costs O(n log n), but needs only matmul, so every backend runs it and
// autograd differentiates it.
struct Parts {
  Tensor re, im;  // im undefined: zero
};

// [rows, cols] with entry (k, j) = weight_j cos(2 pi jk / period) (or sign sin).
Tensor trig_matrix(int64_t rows, int64_t cols, int64_t period, bool cosine, double sign,
                   const std::vector<double>& weight, ScalarType dtype, Device device) {
  return host_matrix(
      rows, cols,
      [&](double* p) {
        for (int64_t k = 0; k < rows; ++k) {
          for (int64_t j = 0; j < cols; ++j) {
            // (j k) mod period keeps the angle small, so large sizes lose no precision
            const double angle = 2.0 * std::numbers::pi * static_cast<double>((j * k) % period) /
                                 static_cast<double>(period);
            const double w = weight.empty() ? 1.0 : weight[static_cast<size_t>(j)];
            p[k * cols + j] = w * (cosine ? std::cos(angle) : sign * std::sin(angle));
          }
        }
      },
      dtype, device);
}

// The DFT of x along dim (n elements), keeping output bins 0 .. rows - 1.
Parts dft(const Parts& x, int64_t dim, int64_t rows, int64_t n, double sign) {
  const Tensor c = trig_matrix(rows, n, n, true, sign, {}, x.re.dtype(), x.re.device());
  const Tensor s = trig_matrix(rows, n, n, false, sign, {}, x.re.dtype(), x.re.device());
  if (!x.im.defined()) return {apply_along(x.re, dim, c), apply_along(x.re, dim, s)};
  return {loom::sub(apply_along(x.re, dim, c), apply_along(x.im, dim, s)),
          loom::add(apply_along(x.re, dim, s), apply_along(x.im, dim, c))};
}

// The checks both ops make; the dims wrapped, in order.
std::vector<int64_t> checked_dims(const char* op, const Tensor& self, const IntList& dim,
                                  int64_t normalization) {
  std::vector<int64_t> dims;
  if (std::string e = sdk::check_fft_dims(self.sizes(), dim.span(), &dims); !e.empty()) {
    fail(op, e);
  }
  if (std::string e = sdk::check_fft_normalization(normalization); !e.empty()) fail(op, e);
  return dims;
}

Tensor fft_r2c(const Tensor& self, const IntList& dim, int64_t normalization, bool onesided) {
  const char* op = "loom::_fft_r2c";
  if (self.dtype() != ScalarType::Float32 && self.dtype() != ScalarType::Float64) {
    fail(op, "expected a float32 or float64 input, found ", scalar_type_name(self.dtype()));
  }
  const std::vector<int64_t> dims = checked_dims(op, self, dim, normalization);
  int64_t numel = 1;
  for (int64_t d : dims) numel *= self.size(d);
  const int64_t last = dims.back(), n = self.size(last);
  Parts x = dft({self, Tensor()}, last, onesided ? n / 2 + 1 : n, n, -1.0);
  for (size_t i = 0; i + 1 < dims.size(); ++i) {
    const int64_t m = self.size(dims[i]);
    x = dft(x, dims[i], m, m, -1.0);
  }
  const double scale = sdk::fft_scale(normalization, numel);
  Tensor parts = loom::stack({x.re, x.im}, -1);
  if (scale != 1.0) parts = loom::mul(parts, scale);
  return loom::view_as_complex(loom::contiguous(parts));
}

Tensor fft_c2r(const Tensor& self, const IntList& dim, int64_t normalization,
               int64_t last_dim_size) {
  const char* op = "loom::_fft_c2r";
  if (!is_complex(self.dtype())) {
    fail(op, "expected a complex64 or complex128 input, found ", scalar_type_name(self.dtype()));
  }
  const std::vector<int64_t> dims = checked_dims(op, self, dim, normalization);
  const int64_t last = dims.back(), bins = self.size(last), n = last_dim_size;
  if (std::string e = sdk::check_c2r_length(bins, n); !e.empty()) fail(op, e);
  const Tensor parts = loom::view_as_real(self);
  Parts x{parts.select(-1, 0), parts.select(-1, 1)};
  int64_t numel = n;
  for (size_t i = 0; i + 1 < dims.size(); ++i) {
    const int64_t m = self.size(dims[i]);
    x = dft(x, dims[i], m, m, 1.0);
    numel *= m;
  }
  // The last dim: out_j = sum_k w_k (re_k cos - im_k sin) over the bins k = 0 .. n/2, where
  // w_k = 2 counts bin k's conjugate n - k, and bins 0 and n/2 (even n) count once.
  std::vector<double> weight(static_cast<size_t>(bins), 2.0);
  weight[0] = 1.0;
  if (n % 2 == 0) weight[static_cast<size_t>(n / 2)] = 1.0;
  const ScalarType real = x.re.dtype();
  const Tensor c = trig_matrix(n, bins, n, true, 1.0, weight, real, self.device());
  const Tensor s = trig_matrix(n, bins, n, false, -1.0, weight, real, self.device());
  Tensor out = loom::add(apply_along(x.re, last, c), apply_along(x.im, last, s));
  const double scale = sdk::fft_scale(normalization, numel);
  if (scale != 1.0) out = loom::mul(out, scale);
  return loom::contiguous(out);
}

constexpr DecompositionEntry kDecompositions[] = {
    {"loom::_fft_r2c", decomposition<&fft_r2c>()},
    {"loom::_fft_c2r", decomposition<&fft_c2r>()},
};

}  // namespace

std::span<const DecompositionEntry> fft_decompositions() {
  return kDecompositions;
}

}  // namespace loom::ops
