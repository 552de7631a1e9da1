// The quantization plugin: quantized tensors' kernels on the Quantized key (PyTorch's
// QuantizedCPU) and the float kernels that make them (quantize, fake quantize) on the CPU
// key. Built like a vendor's plugin: the SDK alone.
#include "loom/sdk/plugin.hpp"

namespace loom::quantization {

void register_quantization_kernels(sdk::Registrar& r);

namespace {

void init(sdk::Registrar& r) {
  register_quantization_kernels(r);
}

}  // namespace
}  // namespace loom::quantization

LOOM_PLUGIN("quantization", "0.1.0", loom::quantization::init)
