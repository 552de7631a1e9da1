// Quantized samples against their float references (quantized_reference.h).
#include "quantized_reference.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_join.h"
#include "loom/core/quantizer.h"
#include "op_calls.h"

namespace loom::conform {
namespace {

Value dequantized(const Value& v) {
  auto plain = [](const Tensor& t) { return is_quantized(t.dtype()) ? loom::dequantize(t) : t; };
  if (v.is_tensor()) return plain(v.to_tensor());
  if (v.is_tensor_list()) {
    std::vector<Tensor> list;
    for (const Tensor& t : v.to_tensor_list()) list.push_back(plain(t));
    return list;
  }
  return v;
}

std::vector<double> float64_values(const Tensor& t) {
  Tensor f64 = empty(t.sizes(), TensorOptions().dtype(ScalarType::Float64));
  copy_(f64, t);
  const double* p = static_cast<const double*>(f64.data_ptr());
  return std::vector<double>(p, p + f64.numel());
}

// The multi-index of row-major element `flat` of `shape`.
std::vector<int64_t> index_of(IntArrayRef shape, int64_t flat) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = index.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return index;
}

// A quantized result against the float reference: its quantizer's parameters as the op
// was given them, then every dequantized value within one step (its channel's scale) of the
// reference clamped to what its channel can hold.
Comparison compare_quantized(const ops::QuantizedReference& ref, const Built& inputs,
                             const Tensor& expected, const Tensor& actual, size_t k) {
  const Ref<Quantizer>& q = actual.impl()->quantizer();
  const bool per_channel = q->scheme() == QScheme::PerChannelAffine;
  if (ref.output_scale_arg >= 0) {
    const double scale = inputs.args[static_cast<size_t>(ref.output_scale_arg)].to_double();
    const int64_t zero_point = inputs.args[static_cast<size_t>(ref.output_zero_point_arg)].to_int();
    if (per_channel || q->scale() != scale || q->zero_point() != zero_point) {
      return {false,
              str_cat("output ", k, " is quantized ", q->describe(), ", expected the output scale ",
                      scale, " and zero point ", zero_point, " the op was given"),
              0, 0, ""};
    }
  }
  const std::vector<double> want = float64_values(expected);
  const std::vector<double> got = float64_values(loom::dequantize(actual));
  Comparison c;
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const std::vector<int64_t> index = index_of(actual.sizes(), static_cast<int64_t>(i));
    const int64_t channel = per_channel ? index[static_cast<size_t>(q->axis())] : 0;
    const double step = per_channel ? q->channel_scale(channel) : q->scale();
    const int64_t zero_point = per_channel ? q->channel_zero_point(channel) : q->zero_point();
    const double low = static_cast<double>(quantized_min(actual.dtype()) - zero_point) * step;
    const double high = static_cast<double>(quantized_max(actual.dtype()) - zero_point) * step;
    const double e = std::clamp(want[i], low, high);
    const double error = std::abs(got[i] - e);
    c.max_abs_error = std::max(c.max_abs_error, error);
    if (error > step * (1 + 1e-9) && error / step > worst) {
      worst = error / step;
      c.agrees = false;
      c.message = str_cat("output ", k, " at [", absl::StrJoin(index, ", "), "]: ", got[i],
                          " dequantized, expected ", e, " within one step (", step, ")");
      c.worst_element = c.message;
    }
  }
  if (c.agrees) {
    c.message = str_cat("within one quantization step of the float reference (at most ",
                        c.max_abs_error, " apart)");
  }
  return c;
}

}  // namespace

Comparison compare_with_quantized_reference(const ops::OpSample& sample, const Built& inputs,
                                            const std::vector<Tensor>& actual) {
  if (!sample.quantized_reference) {
    return {false, "a quantized value sample without a float reference (Note [Quantized samples])",
            0, 0, ""};
  }
  const ops::QuantizedReference& ref = *sample.quantized_reference;
  Built plain;
  const size_t arity = ref.arity < 0 ? inputs.args.size() : static_cast<size_t>(ref.arity);
  for (size_t i = 0; i < arity && i < inputs.args.size(); ++i) {
    plain.args.push_back(dequantized(inputs.args[i]));
  }
  if (ref.arity < 0) {
    for (const auto& [name, value] : inputs.kwargs)
      plain.kwargs.emplace_back(name, dequantized(value));
  }
  const std::string float_op = ref.float_op.empty() ? sample.op : ref.float_op;
  std::vector<Tensor> expected = tensors_of(run(float_op, plain));
  const size_t relu = static_cast<size_t>(ref.relu_arg);
  if (ref.relu_arg >= 0 && relu < inputs.args.size() && inputs.args[relu].to_bool()) {
    for (Tensor& t : expected) t = loom::relu(t);
  }
  if (expected.size() != actual.size()) {
    return {false,
            str_cat(actual.size(), " outputs, expected ", expected.size(), " from ", float_op), 0,
            0, ""};
  }
  Comparison all;
  for (size_t k = 0; k < actual.size(); ++k) {
    if (!std::ranges::equal(actual[k].sizes(), expected[k].sizes())) {
      return {false,
              str_cat("output ", k, " is ", describe(actual[k]), ", expected the shape of ",
                      float_op, "'s ", describe(expected[k])),
              0, 0, ""};
    }
    Comparison c =
        is_quantized(actual[k].dtype())
            ? compare_quantized(ref, inputs, expected[k], actual[k], k)
            : compare_outputs({expected[k]}, {expected[k]}, {actual[k]}, sample.tolerance);
    all.max_abs_error = std::max(all.max_abs_error, c.max_abs_error);
    if (!c.agrees) return c;
    all.message = c.message;
  }
  return all;
}

}  // namespace loom::conform
