// The reference of a quantized sample (Note [Quantized samples] in loom/ops/samples.h): the
// float op on the dequantized inputs, and the comparison of a quantized result with it
// within one quantization step. `loom conform --backend quantized` checks values with it.
#pragma once

#include <vector>

#include "comparison.h"
#include "loom/ops/samples.h"
#include "sample_inputs.h"

namespace loom::conform {

// `actual`, the op's results on `inputs` (the sample's arguments as built), against the
// sample's QuantizedReference computed on the same inputs dequantized.
Comparison compare_with_quantized_reference(const ops::OpSample& sample, const Built& inputs,
                                            const std::vector<Tensor>& actual);

}  // namespace loom::conform
