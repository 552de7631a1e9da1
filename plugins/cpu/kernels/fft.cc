// The fft family on CPU tensors: _fft_r2c and _fft_c2r through FFTW's guru interface
// (Note [FFT ops] in loom/sdk/reference/fft.hpp), which takes any strides, so inputs are
// read in place (c2r, which FFTW lets overwrite its input, reads a copy). Results are
// contiguous. FFTW's planner is not thread-safe: plans are made and destroyed under one
// lock and executed outside it; FFTW_ESTIMATE plans without touching the arrays.
#include <fftw3.h>

#include <complex>
#include <mutex>
#include <string>
#include <vector>

#include "../kernels.h"
#include "loom/sdk/ops.hpp"
#include "loom/sdk/reference/fft.hpp"

namespace loom::cpu {
namespace {

std::mutex& planner_mutex() {
  static std::mutex m;
  return m;
}

// FFTW's double (fftw_) and float (fftwf_) interfaces under one name.
template <typename R>
struct Fftw;
template <>
struct Fftw<double> {
  using Complex = fftw_complex;
  using Plan = fftw_plan;
  using Dim = fftw_iodim64;
  static Plan r2c(int rank, const Dim* dims, int howmany, const Dim* loops, double* in,
                  Complex* out) {
    return fftw_plan_guru64_dft_r2c(rank, dims, howmany, loops, in, out, FFTW_ESTIMATE);
  }
  static Plan c2c(int rank, const Dim* dims, int howmany, const Dim* loops, Complex* in,
                  Complex* out) {
    return fftw_plan_guru64_dft(rank, dims, howmany, loops, in, out, FFTW_FORWARD, FFTW_ESTIMATE);
  }
  static Plan c2r(int rank, const Dim* dims, int howmany, const Dim* loops, Complex* in,
                  double* out) {
    return fftw_plan_guru64_dft_c2r(rank, dims, howmany, loops, in, out, FFTW_ESTIMATE);
  }
  static void execute(Plan p) { fftw_execute(p); }
  static void destroy(Plan p) { fftw_destroy_plan(p); }
};
template <>
struct Fftw<float> {
  using Complex = fftwf_complex;
  using Plan = fftwf_plan;
  using Dim = fftwf_iodim64;
  static Plan r2c(int rank, const Dim* dims, int howmany, const Dim* loops, float* in,
                  Complex* out) {
    return fftwf_plan_guru64_dft_r2c(rank, dims, howmany, loops, in, out, FFTW_ESTIMATE);
  }
  static Plan c2c(int rank, const Dim* dims, int howmany, const Dim* loops, Complex* in,
                  Complex* out) {
    return fftwf_plan_guru64_dft(rank, dims, howmany, loops, in, out, FFTW_FORWARD, FFTW_ESTIMATE);
  }
  static Plan c2r(int rank, const Dim* dims, int howmany, const Dim* loops, Complex* in,
                  float* out) {
    return fftwf_plan_guru64_dft_c2r(rank, dims, howmany, loops, in, out, FFTW_ESTIMATE);
  }
  static void execute(Plan p) { fftwf_execute(p); }
  static void destroy(Plan p) { fftwf_destroy_plan(p); }
};

// The transform's dims and the loop over the others: sizes from `logical` (the signal's),
// strides from the input and output tensors (in their own elements).
template <typename Dim>
struct Layout {
  std::vector<Dim> dims, loops;
};

template <typename Dim>
Layout<Dim> layout_of(std::span<const int64_t> logical, const std::vector<int64_t>& dims,
                      const sdk::Tensor& in, const sdk::Tensor& out) {
  Layout<Dim> l;
  for (int64_t d : dims) l.dims.push_back({logical[d], in.strides()[d], out.strides()[d]});
  for (int64_t d = 0; d < static_cast<int64_t>(logical.size()); ++d) {
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) {
      l.loops.push_back({logical[d], in.strides()[d], out.strides()[d]});
    }
  }
  return l;
}

// Runs the plan `make` gives, failing with op's name when FFTW cannot plan.
template <typename R, typename Make>
void run(const char* op, Make&& make) {
  typename Fftw<R>::Plan plan;
  {
    std::lock_guard<std::mutex> lock(planner_mutex());
    plan = make();
  }
  if (plan == nullptr)
    throw sdk::Error(std::string("[") + op + "] FFTW could not plan the transform");
  Fftw<R>::execute(plan);
  std::lock_guard<std::mutex> lock(planner_mutex());
  Fftw<R>::destroy(plan);
}

std::vector<int64_t> checked_dims(const char* op, const sdk::Tensor& self,
                                  std::span<const int64_t> dim, int64_t normalization) {
  std::vector<int64_t> dims;
  std::string e = sdk::check_fft_dims(self.sizes(), dim, &dims);
  if (e.empty()) e = sdk::check_fft_normalization(normalization);
  if (!e.empty()) throw sdk::Error(std::string("[") + op + "] " + e);
  return dims;
}

// Scales a result (complex ones through their parts) unless the scale is 1.
void scale_by(const sdk::Tensor& out, int64_t normalization, int64_t numel) {
  const double scale = sdk::fft_scale(normalization, numel);
  if (scale == 1.0 || out.numel() == 0) return;
  const bool complex = sdk::dtypes::complex.contains(out.dtype());
  sdk::op::mul_(complex ? sdk::op::view_as_real(out) : out, sdk::scalar(scale));
}

template <typename R>
void r2c(const sdk::Tensor& self, const std::vector<int64_t>& dims, bool onesided,
         const sdk::Tensor& out) {
  using F = Fftw<R>;
  if (onesided) {
    Layout<typename F::Dim> l = layout_of<typename F::Dim>(self.sizes(), dims, self, out);
    run<R>("_fft_r2c", [&] {
      return F::r2c(static_cast<int>(l.dims.size()), l.dims.data(),
                    static_cast<int>(l.loops.size()), l.loops.data(),
                    const_cast<R*>(self.data<const R>()),
                    reinterpret_cast<typename F::Complex*>(out.data<char>()));
    });
    return;
  }
  // Both halves: a complex-to-complex transform of the input made complex.
  sdk::Tensor in = sdk::empty(self.sizes(), out.dtype(), out.device());
  sdk::op::copy_(in, self);
  Layout<typename F::Dim> l = layout_of<typename F::Dim>(self.sizes(), dims, in, out);
  run<R>("_fft_r2c", [&] {
    return F::c2c(static_cast<int>(l.dims.size()), l.dims.data(), static_cast<int>(l.loops.size()),
                  l.loops.data(), reinterpret_cast<typename F::Complex*>(in.data<char>()),
                  reinterpret_cast<typename F::Complex*>(out.data<char>()));
  });
}

sdk::Tensor fft_r2c(const sdk::Tensor& self, std::span<const int64_t> dim, int64_t normalization,
                    bool onesided) {
  const char* op = "loom::_fft_r2c";
  const std::vector<int64_t> dims = checked_dims(op, self, dim, normalization);
  std::vector<int64_t> sizes(self.sizes().begin(), self.sizes().end());
  int64_t numel = 1;
  for (int64_t d : dims) numel *= sizes[d];
  if (onesided) sizes[dims.back()] = sizes[dims.back()] / 2 + 1;
  const bool wide = self.dtype() == LOOM_DTYPE_FLOAT64;
  sdk::Tensor out =
      sdk::empty(sizes, wide ? LOOM_DTYPE_COMPLEX128 : LOOM_DTYPE_COMPLEX64, self.device());
  if (out.numel() == 0) return out;
  if (wide) {
    r2c<double>(self, dims, onesided, out);
  } else {
    r2c<float>(self, dims, onesided, out);
  }
  scale_by(out, normalization, numel);
  return out;
}

sdk::Tensor fft_c2r(const sdk::Tensor& self, std::span<const int64_t> dim, int64_t normalization,
                    int64_t last_dim_size) {
  const char* op = "loom::_fft_c2r";
  const std::vector<int64_t> dims = checked_dims(op, self, dim, normalization);
  if (std::string e = sdk::check_c2r_length(self.sizes()[dims.back()], last_dim_size); !e.empty()) {
    throw sdk::Error(std::string("[") + op + "] " + e);
  }
  std::vector<int64_t> sizes(self.sizes().begin(), self.sizes().end());
  sizes[dims.back()] = last_dim_size;
  int64_t numel = 1;
  for (int64_t d : dims) numel *= sizes[d];
  const bool wide = self.dtype() == LOOM_DTYPE_COMPLEX128;
  sdk::Tensor out =
      sdk::empty(sizes, wide ? LOOM_DTYPE_FLOAT64 : LOOM_DTYPE_FLOAT32, self.device());
  if (out.numel() == 0) return out;
  // FFTW's c2r overwrites its input: it reads a contiguous copy.
  sdk::Tensor in = sdk::empty(self.sizes(), self.dtype(), self.device());
  sdk::op::copy_(in, self);
  auto transform = [&]<typename R>(R) {
    using F = Fftw<R>;
    Layout<typename F::Dim> l = layout_of<typename F::Dim>(sizes, dims, in, out);
    run<R>("_fft_c2r", [&] {
      return F::c2r(static_cast<int>(l.dims.size()), l.dims.data(),
                    static_cast<int>(l.loops.size()), l.loops.data(),
                    reinterpret_cast<typename F::Complex*>(in.data<char>()), out.data<R>());
    });
  };
  if (wide) {
    transform(double{});
  } else {
    transform(float{});
  }
  scale_by(out, normalization, numel);
  return out;
}

}  // namespace

void register_fft_kernels(sdk::Registrar& r) {
  r.impl<&fft_r2c>("loom::_fft_r2c", LOOM_KEY_CPU, sdk::dtypes::float32_64);
  r.impl<&fft_c2r>("loom::_fft_c2r", LOOM_KEY_CPU, sdk::dtypes::complex);
}

}  // namespace loom::cpu
