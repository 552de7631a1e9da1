// Creation kernels: arange and linspace into an allocated 1-D out (the frontend's
// factories compute the length and allocate; the kernels check it).
#include <cmath>
#include <string>

#include "../kernels.h"
#include "../scalar_types.h"
#include "../strided_loop.h"

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

Tensor arange_out(Scalar start, Scalar end, Scalar step, const Tensor& out) {
  const double s = start.to_double(), e = end.to_double(), d = step.to_double();
  if (d == 0) throw sdk::Error("[arange] step must be nonzero");
  if (!std::isfinite(s) || !std::isfinite(e)) {
    throw sdk::Error("[arange] expected finite start and end, found " + std::to_string(s) +
                     " and " + std::to_string(e));
  }
  if ((d > 0 && e < s) || (d < 0 && e > s)) {
    throw sdk::Error("[arange] upper bound and step have inconsistent signs: start " +
                     std::to_string(s) + ", end " + std::to_string(e) + ", step " +
                     std::to_string(d));
  }
  const bool integral =
      !start.is_floating_point() && !end.is_floating_point() && !step.is_floating_point();
  int64_t length;
  if (integral) {
    const int64_t span = end.i - start.i, st = step.i;
    length = span / st + (span % st != 0 ? 1 : 0);
  } else {
    length = static_cast<int64_t>(std::ceil((e - s) / d));
  }
  require_length(out, std::max<int64_t>(length, 0), "arange");
  if (integral && out.dtype() <= LOOM_DTYPE_INT64) {
    fill_positions(out, "arange", [&](int64_t i) { return start.i + i * step.i; });
  } else {
    fill_positions(out, "arange", [&](int64_t i) { return s + static_cast<double>(i) * d; });
  }
  return out;
}

// Evenly spaced from both ends (the second half counts back from `end` so the last
// value is exactly `end`).
Tensor linspace_out(Scalar start, Scalar end, int64_t steps, const Tensor& out) {
  if (steps < 0)
    throw sdk::Error("[linspace] number of steps must be non-negative, found " +
                     std::to_string(steps));
  require_length(out, steps, "linspace");
  const double s = start.to_double(), e = end.to_double();
  const double step = steps > 1 ? (e - s) / static_cast<double>(steps - 1) : 0.0;
  const int64_t half = steps / 2;
  fill_positions(out, "linspace", [&](int64_t i) {
    return i < half || steps == 1 ? s + step * static_cast<double>(i)
                                  : e - step * static_cast<double>(steps - 1 - i);
  });
  return out;
}

}  // namespace

void register_creation_kernels(sdk::Registrar& r) {
  r.impl<&arange_out>("loom::arange.start_out", LOOM_KEY_CPU, sdk::dtypes::numeric);
  r.impl<&linspace_out>("loom::linspace.out", LOOM_KEY_CPU, sdk::dtypes::numeric);
}

}  // namespace loom::cpu
