// The FFT ops' arguments, the same for every backend (Note [FFT ops]): the dims a
// transform covers, the shape of its result and the scale of its normalization. Each
// check returns what is wrong (empty when nothing is), for the caller to raise as its
// own error.
//
// Note [FFT ops]
// ~~~~~~~~~~~~~~
// Core ATen IR's two FFT ops, as PyTorch defines them:
//   _fft_r2c(self, dim, normalization, onesided): the discrete Fourier transform of a real
//     float32/float64 tensor over the dims `dim` (e^{-2 pi i jk/n}), complex64/complex128.
//     With onesided the last dim of `dim` keeps bins 0 .. n/2 (the rest are the conjugates
//     of those), else all n.
//   _fft_c2r(self, dim, normalization, last_dim_size): the inverse transform of a
//     Hermitian spectrum (e^{+2 pi i jk/n}) to a real tensor whose last dim of `dim` has
//     last_dim_size = n elements; self holds its bins 0 .. n/2 there, and the imaginary
//     parts of bins 0 and n/2 are ignored.
// normalization scales the result: 0 by 1, 1 by 1/sqrt(N), 2 by 1/N, N the product of the
// transformed sizes (of the signal: n for the last dim of c2r). torch.fft.rfft is
// _fft_r2c(onesided) with 0 (norm="backward"), irfft _fft_c2r with 2.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace loom::sdk {

// `dim` wrapped into [0, rank): every entry in range and none twice, at least one.
inline std::string check_fft_dims(std::span<const int64_t> sizes, std::span<const int64_t> dim,
                                  std::vector<int64_t>* wrapped) {
  const auto rank = static_cast<int64_t>(sizes.size());
  if (dim.empty()) return "expected at least one dim to transform, found none";
  wrapped->clear();
  for (int64_t d : dim) {
    if (d < -rank || d >= rank) {
      return "dim " + std::to_string(d) + " is out of range for a " + std::to_string(rank) +
             "-dim tensor";
    }
    const int64_t w = d < 0 ? d + rank : d;
    for (int64_t seen : *wrapped) {
      if (seen == w) return "dim " + std::to_string(d) + " is given twice";
    }
    wrapped->push_back(w);
  }
  for (int64_t d : *wrapped) {
    if (sizes[static_cast<size_t>(d)] < 1) {
      return "expected transformed dims of at least one element, found size 0 in dim " +
             std::to_string(d);
    }
  }
  return {};
}

inline std::string check_fft_normalization(int64_t normalization) {
  if (normalization >= 0 && normalization <= 2) return {};
  return "expected normalization 0 (none), 1 (1/sqrt(n)) or 2 (1/n), found " +
         std::to_string(normalization);
}

// c2r's input holds last_dim_size / 2 + 1 bins in its last transformed dim.
inline std::string check_c2r_length(int64_t bins, int64_t last_dim_size) {
  if (last_dim_size < 1) {
    return "expected last_dim_size >= 1, found " + std::to_string(last_dim_size);
  }
  if (bins != last_dim_size / 2 + 1) {
    return "expected " + std::to_string(last_dim_size / 2 + 1) +
           " bins in the last transformed dim for last_dim_size " + std::to_string(last_dim_size) +
           ", found " + std::to_string(bins);
  }
  return {};
}

// The scale of `normalization` for a signal of `numel` elements over the transformed dims.
inline double fft_scale(int64_t normalization, int64_t numel) {
  if (normalization == 1) return 1.0 / std::sqrt(static_cast<double>(numel));
  if (normalization == 2) return 1.0 / static_cast<double>(numel);
  return 1.0;
}

}  // namespace loom::sdk
