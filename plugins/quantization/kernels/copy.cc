// Copies of quantized tensors (the copy family at the Quantized key): clone and
// contiguous make dense copies with the same quantizer (reshape of a channels-last
// convolution result goes through contiguous).
#include <cstring>

#include "../quantized_math.h"
#include "loom/sdk/plugin.hpp"

namespace loom::quantization {
namespace {

using sdk::Tensor;

Tensor clone(const Tensor& self) {
  const LoomQuantizer& q = quantizer_of("loom::clone", self);
  if (!self.is_contiguous()) return dense_quantized(self);
  Tensor out = sdk::empty_quantized(self.sizes(), self.dtype(), q);
  copy_raw(self, out);
  return out;
}

Tensor contiguous(const Tensor& self) {
  quantizer_of("loom::contiguous", self);
  return dense_quantized(self);  // self itself when already dense
}

}  // namespace

void register_quantized_copy_kernels(sdk::Registrar& r) {
  r.impl<&clone>("loom::clone", LOOM_KEY_QUANTIZED);
  r.impl<&contiguous>("loom::contiguous", LOOM_KEY_QUANTIZED);
}

}  // namespace loom::quantization
