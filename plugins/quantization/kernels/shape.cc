// Concatenation of quantized tensors (the shape family at the Quantized key): the result
// takes the first tensor's quantizer, as PyTorch's quantized cat does; tensors quantized
// otherwise are requantized to it.
#include <string>
#include <vector>

#include "../quantized_math.h"
#include "loom/sdk/ops.hpp"
#include "loom/sdk/plugin.hpp"

namespace loom::quantization {
namespace {

using sdk::Tensor;

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  constexpr const char* op = "loom::cat";
  if (tensors.empty()) refuse(op, "expected at least one tensor");
  const LoomQuantizer& q = quantizer_of(op, tensors[0]);
  if (q.scheme != LOOM_QSCHEME_PER_TENSOR_AFFINE) {
    refuse(op, "quantized cat takes tensors quantized per tensor, found per channel");
  }
  std::vector<Tensor> floats;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].quantizer() == nullptr || tensors[i].dtype() != tensors[0].dtype()) {
      refuse(op, "expected every tensor quantized as the first (" +
                     std::string(sdk::dtype_name(tensors[0].dtype())) + "), found " +
                     sdk::dtype_name(tensors[i].dtype()) + " at " + std::to_string(i) +
                     " (quantize or dequantize it first)");
    }
    floats.push_back(sdk::op::dequantize(tensors[i]));
  }
  return sdk::op::quantize_per_tensor(sdk::op::cat(floats, dim), q.scale, q.zero_point,
                                      tensors[0].dtype());
}

}  // namespace

void register_quantized_shape_kernels(sdk::Registrar& r) {
  r.impl<&cat>("loom::cat", LOOM_KEY_QUANTIZED);
}

}  // namespace loom::quantization
