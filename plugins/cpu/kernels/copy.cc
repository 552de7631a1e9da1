// fill_ and copy_ on CPU tensors (strided, broadcast source, dtype conversion), on the
// pointwise loops of elementwise_loop.h (parallel, ISA-dispatched); complex tensors
// element by element (Note [Complex copies]).
#include <array>
#include <complex>

#include "../elementwise_loop.h"
#include "../kernels.h"
#include "../scalar_types.h"
#include "../strided_loop.h"

namespace loom::cpu {
namespace {

template <typename Body>
void with_dtype(LoomDType t, const char* op, Body&& body) {
  dispatch_all_types(t, op, body);
}

// Note [Complex copies]
// ~~~~~~~~~~~~~~~~~~~~~
// The complex dtypes (std::complex<float>, std::complex<double>) copy to each other, take a
// real value as (value, 0), and give a real destination their real part (PyTorch warns and
// discards the imaginary part too). A fill writes (value, 0). These loops are serial: the
// complex tensors loom makes are the FFT's results and their views.
template <typename Body>
void with_complex(LoomDType t, const char* op, Body&& body) {
  if (t == LOOM_DTYPE_COMPLEX64) {
    body(std::complex<float>{});
  } else if (t == LOOM_DTYPE_COMPLEX128) {
    body(std::complex<double>{});
  } else {
    with_dtype(t, op, body);
  }
}

template <typename T>
double real_value(T x) {
  if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>) {
    return static_cast<double>(x.real());
  } else {
    return static_cast<double>(static_cast<acc_type<T>>(x));
  }
}

template <typename D, typename S>
D complex_convert(S x) {
  constexpr bool complex_d =
      std::is_same_v<D, std::complex<float>> || std::is_same_v<D, std::complex<double>>;
  constexpr bool complex_s =
      std::is_same_v<S, std::complex<float>> || std::is_same_v<S, std::complex<double>>;
  if constexpr (complex_d && complex_s) {
    return D(static_cast<typename D::value_type>(x.real()),
             static_cast<typename D::value_type>(x.imag()));
  } else if constexpr (complex_d) {
    return D(static_cast<typename D::value_type>(real_value(x)), 0);
  } else if constexpr (std::is_same_v<D, bool>) {
    return real_value(x) != 0.0;
  } else {
    return static_cast<D>(real_value(x));
  }
}

void complex_copy(const sdk::Tensor& self, const sdk::Tensor& src, std::span<const int64_t> shape) {
  with_complex(self.dtype(), "copy_", [&]<typename D>(D) {
    with_complex(src.dtype(), "copy_", [&]<typename S>(S) {
      const sdk::Tensor* operands[2] = {&self, &src};
      for_each_element(shape, operands, [](char* const* ptrs) {
        S x;
        std::memcpy(&x, ptrs[1], sizeof(S));
        const D y = complex_convert<D, S>(x);
        std::memcpy(ptrs[0], &y, sizeof(D));
      });
    });
  });
}

template <typename T>
void fill_complex(const sdk::Tensor& self, T value) {
  const sdk::Tensor* operands[1] = {&self};
  for_each_element(self.sizes(), operands,
                   [&](char* const* ptrs) { std::memcpy(ptrs[0], &value, sizeof(T)); });
}

sdk::Tensor fill_(const sdk::Tensor& self, sdk::Scalar value) {
  if (sdk::dtypes::complex.contains(self.dtype())) {
    const double v = value.is_floating_point() ? value.d : static_cast<double>(value.i);
    if (self.dtype() == LOOM_DTYPE_COMPLEX64) {
      fill_complex(self, std::complex<float>(static_cast<float>(v), 0.0f));
    } else {
      fill_complex(self, std::complex<double>(v, 0.0));
    }
    return self;
  }
  with_dtype(self.dtype(), "fill_", [&]<typename T>(T) {
    const T v = value.is_floating_point() ? static_cast<T>(value.d) : static_cast<T>(value.i);
    map_elements<T>(self, [v]() -> T { return v; });
  });
  return self;
}

sdk::Tensor copy_(const sdk::Tensor& self, const sdk::Tensor& src, bool /*non_blocking*/) {
  if (src.device().type != LOOM_DEVICE_CPU || self.device().type != LOOM_DEVICE_CPU) {
    throw sdk::Error("[copy_] the cpu kernel copies between cpu tensors only");
  }
  std::span<const int64_t> shapes[2] = {self.sizes(), src.sizes()};
  std::vector<int64_t> shape = broadcast_shape(shapes, "copy_");
  if (shape.size() != self.sizes().size() ||
      !std::equal(shape.begin(), shape.end(), self.sizes().begin())) {
    throw sdk::Error("[copy_] source of shape " + shape_string(src.sizes()) +
                     " cannot be broadcast to destination shape " + shape_string(self.sizes()));
  }
  if (sdk::dtypes::complex.contains(self.dtype()) || sdk::dtypes::complex.contains(src.dtype())) {
    complex_copy(self, src, shape);
    return self;
  }
  with_dtype(self.dtype(), "copy_", [&]<typename D>(D) {
    with_dtype(src.dtype(), "copy_", [&]<typename S>(S) {
      if (std::equal(src.sizes().begin(), src.sizes().end(), self.sizes().begin(),
                     self.sizes().end())) {  // the common case: the fast elementwise loop
        map_elements<D, S>(
            self, [](S x) { return static_cast<D>(x); }, src);
        return;
      }
      const std::vector<int64_t> src_strides = broadcast_strides(src, shape.size());
      map_strided<D, S>([](S x) { return static_cast<D>(x); }, shape,
                        {self.strides().data(), src_strides.data()},
                        {self.data<char>(), src.data<char>()});
    });
  });
  return self;
}

}  // namespace

void register_copy_kernels(sdk::Registrar& r) {
  r.impl<&fill_>("loom::fill_.Scalar", LOOM_KEY_CPU, sdk::dtypes::all | sdk::dtypes::complex);
  r.impl<&copy_>("loom::copy_", LOOM_KEY_CPU, sdk::dtypes::all | sdk::dtypes::complex);
}

}  // namespace loom::cpu
