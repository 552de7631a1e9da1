// ReLU of quantized tensors (the unary family at the Quantized key): the integers below
// the zero point become the zero point, under the input's quantizer.
#include <algorithm>

#include "../quantized_math.h"
#include "loom/sdk/plugin.hpp"

namespace loom::quantization {
namespace {

using sdk::Tensor;

template <typename Q>
void clamp_below(const Q* in, Q* out, int64_t n, const ChannelParams& p) {
  for (int64_t i = 0; i < n; ++i) {
    out[i] = std::max(in[i], static_cast<Q>(p.zero_points[p.channel(i)]));
  }
}

void relu_into(const Tensor& in, Tensor& out) {
  ChannelParams p = ChannelParams::of(*in.quantizer(), in);
  switch (in.dtype()) {
    case LOOM_DTYPE_QINT8:
      return clamp_below(in.data<int8_t>(), out.data<int8_t>(), in.numel(), p);
    case LOOM_DTYPE_QUINT8:
      return clamp_below(in.data<uint8_t>(), out.data<uint8_t>(), in.numel(), p);
    default:
      return clamp_below(in.data<int32_t>(), out.data<int32_t>(), in.numel(), p);
  }
}

Tensor relu(const Tensor& self) {
  const LoomQuantizer& q = quantizer_of("loom::relu", self);
  const Tensor in = dense_quantized(self);
  Tensor out = sdk::empty_quantized(in.sizes(), in.dtype(), q);
  relu_into(in, out);
  return out;
}

Tensor relu_(const Tensor& self) {
  quantizer_of("loom::relu_", self);
  if (!self.is_contiguous()) {
    refuse("loom::relu_", "an in-place quantized relu needs a contiguous tensor");
  }
  Tensor out = self;
  relu_into(self, out);
  return self;
}

}  // namespace

void register_quantized_unary_kernels(sdk::Registrar& r) {
  r.impl<&relu>("loom::relu", LOOM_KEY_QUANTIZED);
  r.impl<&relu_>("loom::relu_", LOOM_KEY_QUANTIZED);
}

}  // namespace loom::quantization
