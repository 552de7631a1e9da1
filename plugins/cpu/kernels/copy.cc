// fill_ and copy_ on CPU tensors (strided, broadcast source, dtype conversion), on the
// pointwise loops of elementwise_loop.h (parallel, ISA-dispatched).
#include <array>

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

sdk::Tensor fill_(const sdk::Tensor& self, sdk::Scalar value) {
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
  r.impl<&fill_>("loom::fill_.Scalar", LOOM_KEY_CPU);
  r.impl<&copy_>("loom::copy_", LOOM_KEY_CPU);
}

}  // namespace loom::cpu
