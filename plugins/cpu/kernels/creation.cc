// Creation kernels: arange and linspace into an allocated 1-D out (the frontend's
// factories compute the length and allocate; the kernels check it).
#include <string>

#include "../kernels.h"
#include "../scalar_types.h"
#include "../strided_loop.h"
#include "loom/sdk/reference/sequence.hpp"

namespace loom::cpu {
namespace {

using sdk::Scalar;
using sdk::Tensor;

void require_length(const Tensor& out, int64_t length, const char* op) {
  if (out.dim() != 1 || out.size(0) != length) {
    throw sdk::Error(std::string("[") + op + "] expected a 1-D out of " + std::to_string(length) +
                     " elements, found shape " + shape_string(out.sizes()));
  }
}

// Writes f(i) for i in [0, n) to a 1-D out of any strides and dtype.
template <typename F>
void fill_positions(const Tensor& out, const char* op, F&& f) {
  dispatch_numeric_types(out.dtype(), op, [&]<typename T>(T) {
    T* p = out.data<T>();
    const int64_t n = out.numel(), stride = out.dim() ? out.strides()[0] : 1;
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (is_reduced_float_v<T>) {
        p[i * stride] = T(static_cast<float>(f(i)));
      } else {
        p[i * stride] = static_cast<T>(f(i));
      }
    }
  });
}

// The values: loom/sdk/reference/sequence.hpp, shared with every backend.
void fill_sequence(const Tensor& out, const sdk::Sequence& q, const char* op) {
  require_length(out, q.length, op);
  if (q.integral) {
    fill_positions(out, op, [&](int64_t i) { return sdk::sequence_integer(q, i); });
  } else {
    fill_positions(out, op, [&](int64_t i) { return sdk::sequence_value(q, i); });
  }
}

Tensor arange_out(Scalar start, Scalar end, Scalar step, const Tensor& out) {
  fill_sequence(out, sdk::arange_sequence(start, end, step, out.dtype() <= LOOM_DTYPE_INT64),
                "arange");
  return out;
}

Tensor linspace_out(Scalar start, Scalar end, int64_t steps, const Tensor& out) {
  fill_sequence(out, sdk::linspace_sequence(start, end, steps), "linspace");
  return out;
}

}  // namespace

void register_creation_kernels(sdk::Registrar& r) {
  r.impl<&arange_out>("loom::arange.start_out", LOOM_KEY_CPU, sdk::dtypes::numeric);
  r.impl<&linspace_out>("loom::linspace.out", LOOM_KEY_CPU, sdk::dtypes::numeric);
}

}  // namespace loom::cpu
