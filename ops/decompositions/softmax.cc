// Decompositions of the softmax family: Core ATen IR's _softmax and _log_softmax (softmax
// with half_to_float as a float32 dtype) and their backward ops, from the forward's result
// y, as the autograd formulas compute them:
//   _softmax_backward_data:      y * (grad - sum(grad * y, dim))
//   _log_softmax_backward_data:  grad - exp(y) * sum(grad, dim)
// each cast to the input's dtype when it differs from y's (half_to_float).
#include <vector>

#include "decomposition.h"

namespace loom::ops {
namespace {

// The dtype softmax computes in: float32 for a float16 input with half_to_float, which
// PyTorch allows for float16 only.
std::optional<ScalarType> computed_dtype(const char* op, const Tensor& self, bool half_to_float) {
  if (!half_to_float) return std::nullopt;
  if (self.dtype() != ScalarType::Float16) {
    fail(op, "half_to_float expects a float16 input, found ", scalar_type_name(self.dtype()));
  }
  return ScalarType::Float32;
}

Tensor softmax_core(const Tensor& self, int64_t dim, bool half_to_float) {
  return loom::softmax(self, dim, computed_dtype("loom::_softmax", self, half_to_float));
}

Tensor log_softmax_core(const Tensor& self, int64_t dim, bool half_to_float) {
  return loom::log_softmax(self, dim, computed_dtype("loom::_log_softmax", self, half_to_float));
}

// grad and y of one shape; the reduction keeps `dim` so it broadcasts back.
void check_backward_inputs(const char* op, const Tensor& grad, const Tensor& output) {
  if (!same_shape(grad.sizes(), output.sizes())) {
    fail(op, "expected grad_output of the output's shape ", shape_to_string(output.sizes()),
         ", found ", shape_to_string(grad.sizes()));
  }
}

Tensor softmax_backward_data(const Tensor& grad, const Tensor& output, int64_t dim,
                             ScalarType input_dtype) {
  check_backward_inputs("loom::_softmax_backward_data", grad, output);
  const std::vector<int64_t> dims{dim};
  Tensor along = loom::sum(loom::mul(grad, output), dims, /*keepdim=*/true);
  return cast(loom::mul(output, loom::sub(grad, along)), input_dtype);
}

Tensor log_softmax_backward_data(const Tensor& grad, const Tensor& output, int64_t dim,
                                 ScalarType input_dtype) {
  check_backward_inputs("loom::_log_softmax_backward_data", grad, output);
  const std::vector<int64_t> dims{dim};
  Tensor along = loom::sum(grad, dims, /*keepdim=*/true);
  return cast(loom::sub(grad, loom::mul(loom::exp(output), along)), input_dtype);
}

constexpr DecompositionEntry kDecompositions[] = {
    {"loom::_softmax", decomposition<&softmax_core>()},
    {"loom::_log_softmax", decomposition<&log_softmax_core>()},
    {"loom::_softmax_backward_data", decomposition<&softmax_backward_data>()},
    {"loom::_log_softmax_backward_data", decomposition<&log_softmax_backward_data>()},
};

}  // namespace

std::span<const DecompositionEntry> softmax_decompositions() {
  return kDecompositions;
}

}  // namespace loom::ops
