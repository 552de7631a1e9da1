// Samples of the fft family: _fft_r2c and _fft_c2r (Note [Op samples] in
// loom/ops/samples.h). c2r's samples transform one dim: a random spectrum is not
// Hermitian across several dims, where FFT libraries legitimately disagree. FFTW picks
// its algorithm by layout, so strided inputs agree within a tolerance, not exactly.
#include "loom/ops/samples.h"

namespace loom::ops {
namespace {

using namespace sample_helpers;

std::vector<OpSample> make() {
  return {
      OpSample{"loom::_fft_r2c", {T({4, 6}), L({1}), I(0), B(true)}}.tol(1e-5),
      OpSample{"loom::_fft_r2c", {T({3, 4, 5}, kF64), L({0, 2}), I(1), B(false)}}.tol(1e-12),
      OpSample{"loom::_fft_r2c", {T({5}, kF64), L({-1}), I(2), B(true)}}.tol(1e-12),
      OpSample{"loom::_fft_r2c", {T({2, 3, 4}, kF64), L({2, 0, 1}), I(0), B(true)}}.tol(1e-12),
      OpSample{"loom::_fft_c2r", {T({3, 4}, kC64), L({1}), I(2), I(6)}}.tol(1e-5),
      OpSample{"loom::_fft_c2r", {T({3, 2, 3}, kC128), L({-1}), I(0), I(5)}}.tol(1e-12),
      OpSample{"loom::_fft_c2r", {T({4, 3}, kC128), L({0}), I(1), I(7)}}.tol(1e-12),
      // Error inputs (Note [Op samples]): each must raise.
      OpSample{"loom::_fft_r2c", {T({4, 4}), L({1, -1}), I(0), B(true)}}.raises(
          "dim -1 is given twice"),
      OpSample{"loom::_fft_r2c", {T({4}), L({0}), I(3), B(true)}}.raises(
          "expected normalization 0 (none), 1 (1/sqrt(n)) or 2 (1/n), found 3"),
      OpSample{"loom::_fft_c2r", {T({4}, kC64), L({0}), I(0), I(8)}}.raises(
          "expected 5 bins in the last transformed dim for last_dim_size 8, found 4"),
  };
}

}  // namespace

std::span<const OpSample> fft_samples() {
  static const std::vector<OpSample> samples = make();
  return samples;
}

}  // namespace loom::ops
