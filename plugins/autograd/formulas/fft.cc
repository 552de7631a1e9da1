// Derivatives of the fft family (Note [FFT gradients]): each transform's gradient is the
// other transform of the incoming gradient, with some bins weighted.
#include <vector>

#include "helpers.h"

namespace loom::autograd {
using namespace formulas;

namespace {

// Note [FFT gradients]
// ~~~~~~~~~~~~~~~~~~~~
// For a real loss, a complex tensor's gradient is dL/dRe + i dL/dIm (PyTorch's convention).
//  * r2c (onesided) takes x to the bins 0 .. n/2 of F x. Its gradient is Re(F^H g), g
//    padded with zeros to n bins; F^H of the Hermitian part of that padded g is real and
//    equal to it, and its half spectrum is g with the bins other than 0 and n/2 halved
//    (their conjugates, now zero, take the other half). c2r computes exactly F^H of a
//    Hermitian spectrum from its half: the gradient is c2r(g weighted), same
//    normalization. With both halves (onesided=false) the Hermitian part is
//    (g + conj(g reversed in every transformed dim)) / 2, whose half c2r takes as it is.
//  * c2r counts each bin k of 1 .. n - n/2 - 1 twice (as itself and its conjugate) and
//    bins 0 and n/2 once, real parts only: its gradient is r2c(g) with those bins doubled.
// The weights act on the parts (view_as_real), as real products.

std::vector<int64_t> wrapped(std::span<const int64_t> dims, size_t rank) {
  std::vector<int64_t> out;
  for (int64_t d : dims) out.push_back(d < 0 ? d + static_cast<int64_t>(rank) : d);
  return out;
}

// A complex tensor's bins along `dim` times weight[k] (a real [bins] vector).
Tensor weigh_bins(const Tensor& z, int64_t dim, const std::vector<double>& weight) {
  Tensor parts = op::view_as_real(z);
  std::vector<int64_t> shape(static_cast<size_t>(parts.dim()), 1);
  shape[static_cast<size_t>(dim)] = static_cast<int64_t>(weight.size());
  Tensor w = host_matrix(
      1, static_cast<int64_t>(weight.size()),
      [&](double* p) { std::copy(weight.begin(), weight.end(), p); }, parts.dtype(),
      parts.device());
  return op::view_as_complex(op::contiguous(op::mul(parts, op::reshape(w, shape))));
}

// (g + conj(g reversed over dims)) / 2, the Hermitian part of a full spectrum.
Tensor hermitian_part(const Tensor& g, const std::vector<int64_t>& dims) {
  Tensor parts = op::view_as_real(g);
  Tensor reversed = parts;
  for (int64_t d : dims) {
    const int64_t n = g.sizes()[static_cast<size_t>(d)];
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) order[static_cast<size_t>(k)] = (n - k) % n;
    Tensor index = sdk::empty({n}, LOOM_DTYPE_INT64);
    std::copy(order.begin(), order.end(), index.data<int64_t>());
    reversed = op::index_select(reversed, d, op::to(index, g.device(), std::nullopt));
  }
  Tensor sign = host_matrix(
      1, 2, [](double* p) { p[0] = 1.0, p[1] = -1.0; }, parts.dtype(), parts.device());
  Tensor conj = op::mul(reversed, op::reshape(sign, {2}));
  return op::view_as_complex(op::contiguous(op::mul(op::add(parts, conj), sdk::scalar(0.5))));
}

void r2c_gradient(BackwardContext& c) {
  c.set(0, [&] {
    std::span<const int64_t> sizes = c.input_sizes(0);
    const std::vector<int64_t> dims = wrapped(c.ints(1), sizes.size());
    const int64_t last = dims.back(), n = sizes[static_cast<size_t>(last)];
    const int64_t normalization = c.int_arg(2);
    if (!c.bool_arg(3)) {
      Tensor half = op::narrow(hermitian_part(c.grad(), dims), last, 0, n / 2 + 1);
      return op::_fft_c2r(op::contiguous(half), dims, normalization, n);
    }
    std::vector<double> weight(static_cast<size_t>(n / 2 + 1), 0.5);
    weight[0] = 1.0;
    if (n % 2 == 0) weight[static_cast<size_t>(n / 2)] = 1.0;
    return op::_fft_c2r(weigh_bins(c.grad(), last, weight), dims, normalization, n);
  });
}

void c2r_gradient(BackwardContext& c) {
  c.set(0, [&] {
    std::span<const int64_t> sizes = c.input_sizes(0);
    const std::vector<int64_t> dims = wrapped(c.ints(1), sizes.size());
    const int64_t last = dims.back(), bins = sizes[static_cast<size_t>(last)];
    const int64_t n = c.int_arg(3);
    std::vector<double> weight(static_cast<size_t>(bins), 1.0);
    for (int64_t k = 1; k <= n - bins; ++k) weight[static_cast<size_t>(k)] = 2.0;
    return weigh_bins(op::_fft_r2c(c.grad(), dims, c.int_arg(2), true), last, weight);
  });
}

}  // namespace

void register_fft_formulas(FormulaTable& t) {
  // Note [FFT gradients]
  t.add({"loom::_fft_r2c", 0, 0, r2c_gradient});
  t.add({"loom::_fft_c2r", 0, 0, c2r_gradient});
}

}  // namespace loom::autograd
