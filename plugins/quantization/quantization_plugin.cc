// The quantization plugin: quantized tensors' kernels on the Quantized key (PyTorch's
// QuantizedCPU: products and convolutions on oneDNN's int8 primitives, pooling, relu,
// cat, clone) and the float kernels that make them (quantize, fake quantize, the dynamic
// and weight-only layers) on the CPU key. Built like a vendor's plugin: the SDK, plus
// oneDNN and OpenMP. A Quantized key for CUDA tensors is a seam, not built.
#include "loom/sdk/plugin.hpp"

namespace loom::quantization {

void register_quantization_kernels(sdk::Registrar& r);
void register_quantized_kernels(sdk::Registrar& r);
void register_quantized_pool_kernels(sdk::Registrar& r);
void register_quantized_unary_kernels(sdk::Registrar& r);
void register_quantized_shape_kernels(sdk::Registrar& r);
void register_quantized_copy_kernels(sdk::Registrar& r);

namespace {

void init(sdk::Registrar& r) {
  register_quantization_kernels(r);
  register_quantized_kernels(r);
  register_quantized_pool_kernels(r);
  register_quantized_unary_kernels(r);
  register_quantized_shape_kernels(r);
  register_quantized_copy_kernels(r);
}

}  // namespace
}  // namespace loom::quantization

LOOM_PLUGIN("quantization", "0.1.0", loom::quantization::init)
