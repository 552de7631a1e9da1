// The check `loom conform --backend quantized` makes of a quantized sample (Note [Quantized
// samples]): a kernel's result within one quantization step of the float reference passes,
// one two steps off, one with other output parameters than the op was given, or a sample
// without a reference fails, naming the element, the step or what was expected.
#include <gtest/gtest.h>

#include "../frontend/frontend_test_util.h"
#include "loom/core/quantizer.h"
#include "op_calls.h"
#include "quantized_reference.h"

namespace loom {
namespace {

using conform::Built;
using conform::compare_with_quantized_reference;
using conform::Comparison;

class QuantizedConformReference : public test::LoadedRuntimeTest {};

// The first value sample of `op` whose first tensor has `dtype`.
const ops::OpSample& sample_of(const std::string& op, ScalarType dtype) {
  for (const ops::OpSample& s : ops::all_samples()) {
    if (s.op != op || !s.expected_error.empty() || !ops::has_quantized_tensors(s)) continue;
    if (conform::sample_dtype(s) == scalar_type_name(dtype)) return s;
  }
  throw Error("test", str_cat("no quantized value sample of ", op));
}

Tensor run_one(const ops::OpSample& sample, const Built& inputs) {
  return conform::tensors_of(conform::run(sample.op, inputs)).at(0);
}

// `q` with every value moved by `steps` of its scale, under the same parameters.
Tensor shifted(const Tensor& q, double steps) {
  const Ref<Quantizer>& p = q.impl()->quantizer();
  return quantize_per_tensor(dequantize(q) + steps * p->scale(), p->scale(), p->zero_point(),
                             q.dtype());
}

TEST_F(QuantizedConformReference, ResultsWithinOneStepPassAndTwoStepsOffFail) {
  const ops::OpSample& add = sample_of("loom::quantized_add", ScalarType::QUInt8);
  const Built inputs = conform::build(add, 0, conform::Layout::Contiguous);
  const Tensor result = run_one(add, inputs);
  const Comparison good = compare_with_quantized_reference(add, inputs, {result});
  EXPECT_TRUE(good.agrees) << good.message;
  EXPECT_LE(good.max_abs_error, 0.05 + 1e-9);  // the output scale the sample gives

  const Comparison off = compare_with_quantized_reference(add, inputs, {shifted(result, 2)});
  EXPECT_FALSE(off.agrees);
  EXPECT_NE(off.message.find("within one step (0.05)"), std::string::npos) << off.message;
  EXPECT_NE(off.message.find("output 0 at ["), std::string::npos) << off.message;
}

TEST_F(QuantizedConformReference, OutputParametersMustBeTheOnesGiven) {
  const ops::OpSample& add = sample_of("loom::quantized_add", ScalarType::QUInt8);
  const Built inputs = conform::build(add, 0, conform::Layout::Contiguous);
  const Tensor result = run_one(add, inputs);
  const Tensor other_zero_point =
      quantize_per_tensor(dequantize(result), 0.05, 127, result.dtype());
  const Comparison c = compare_with_quantized_reference(add, inputs, {other_zero_point});
  EXPECT_FALSE(c.agrees);
  EXPECT_NE(c.message.find("expected the output scale 0.05 and zero point 128 the op was given"),
            std::string::npos)
      << c.message;
}

TEST_F(QuantizedConformReference, PerChannelResultsUseTheirChannelsStep) {
  const ops::OpSample& clone = sample_of("loom::clone", ScalarType::QInt8);
  const Built inputs = conform::build(clone, 0, conform::Layout::Contiguous);
  const Tensor result = run_one(clone, inputs);
  ASSERT_EQ(result.impl()->quantizer()->scheme(), QScheme::PerChannelAffine);
  EXPECT_TRUE(compare_with_quantized_reference(clone, inputs, {result}).agrees);
  // Channel 2 (scale 0.03) moved by two of its steps.
  Tensor moved = dequantize(result);
  moved.select(0, 2).add_(0.06);
  const Ref<Quantizer>& q = result.impl()->quantizer();
  const Tensor requantized = quantize_per_channel(moved, Tensor(q->scales()),
                                                  Tensor(q->zero_points()), 0, ScalarType::QInt8);
  const Comparison c = compare_with_quantized_reference(clone, inputs, {requantized});
  EXPECT_FALSE(c.agrees);
  EXPECT_NE(c.message.find("output 0 at [2, "), std::string::npos) << c.message;
  EXPECT_NE(c.message.find("within one step (0.03)"), std::string::npos) << c.message;
}

TEST_F(QuantizedConformReference, ASampleWithoutAReferenceFails) {
  ops::OpSample bare = sample_of("loom::relu", ScalarType::QUInt8);
  bare.quantized_reference.reset();
  const Built inputs = conform::build(bare, 0, conform::Layout::Contiguous);
  const Comparison c = compare_with_quantized_reference(bare, inputs, {run_one(bare, inputs)});
  EXPECT_FALSE(c.agrees);
  EXPECT_NE(c.message.find("without a float reference"), std::string::npos) << c.message;
}

}  // namespace
}  // namespace loom
