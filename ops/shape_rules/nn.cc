// Shape rules of the nn ops with kernels: softmax, log_softmax, native_layer_norm,
// embedding, nll_loss.
#include <algorithm>

#include "shape_rule.h"

#include "loom/core/type_promotion.h"

namespace loom::ops {
namespace {

DimVector sizes_of(const TensorImpl& t) {
  return DimVector(t.sizes().begin(), t.sizes().end());
}

// softmax / log_softmax: a floating result (the input's dtype or `dtype`), same shape.
void softmax(const ShapeArgs& args, OutputMetas& out) {
  const TensorImpl& self = args.tensor(0);
  args.wrap_dim(args.integer(1), self.dim());
  std::optional<ScalarType> dtype = args.optional_dtype(2);
  ScalarType result = dtype.value_or(self.dtype());
  if (!is_floating_point(result)) {
    args.fail("expected a floating point input or dtype, found ", scalar_type_name(result));
  }
  out.push_back(output(sizes_of(self), result, self.device()));
}

// Reduction arguments of the losses (PyTorch's enum).
void check_reduction(const ShapeArgs& args, int64_t reduction) {
  if (reduction < 0 || reduction > 2) {
    args.fail("reduction ", reduction, " is not one of 0 (none), 1 (mean), 2 (sum)");
  }
}

// native_layer_norm: output like input; mean and rstd keep the leading dims, with the
// normalized dims as 1.
void native_layer_norm(const ShapeArgs& args, OutputMetas& out) {
  const TensorImpl& input = args.tensor(0);
  std::span<const int64_t> normalized = args.ints(1);
  const TensorImpl* weight = args.optional_tensor(2);
  const TensorImpl* bias = args.optional_tensor(3);
  if (!is_floating_point(input.dtype())) {
    args.fail("expected a floating point input, found ", scalar_type_name(input.dtype()));
  }
  if (normalized.empty()) args.fail("expected a non-empty normalized_shape, found []");
  const int64_t ndim = input.dim();
  const int64_t k = static_cast<int64_t>(normalized.size());
  IntArrayRef sizes = input.sizes();
  bool fits = ndim >= k;
  for (int64_t i = 0; fits && i < k; ++i) fits = sizes[ndim - k + i] == normalized[i];
  if (!fits) {
    args.fail("normalized_shape ", shape_to_string(normalized),
              " does not match the trailing dims of ", "an input of shape ",
              shape_to_string(sizes));
  }
  for (auto [t, name] : {std::pair{weight, "weight"}, std::pair{bias, "bias"}}) {
    if (t != nullptr && !std::ranges::equal(t->sizes(), normalized)) {
      args.fail("expected ", name, " of shape ", shape_to_string(normalized), ", found ",
                shape_to_string(t->sizes()));
    }
  }
  Device device = args.common_device({&input, weight, bias});
  DimVector stat_shape(sizes.begin(), sizes.end());
  for (int64_t i = ndim - k; i < ndim; ++i) stat_shape[i] = 1;
  out.push_back(output(sizes_of(input), input.dtype(), device));
  out.push_back(output(stat_shape, input.dtype(), device));
  out.push_back(output(stat_shape, input.dtype(), device));
}

// embedding: one row of the 2-D weight per index.
void embedding(const ShapeArgs& args, OutputMetas& out) {
  const TensorImpl& weight = args.tensor(0);
  const TensorImpl& indices = args.tensor(1);
  if (weight.dim() != 2) {
    args.fail("expected a 2-D weight, found ", weight.dim(), " dims");
  }
  if (indices.dtype() != ScalarType::Int64 && indices.dtype() != ScalarType::Int32) {
    args.fail("expected int32 or int64 indices, found ", scalar_type_name(indices.dtype()));
  }
  DimVector shape = sizes_of(indices);
  shape.push_back(weight.sizes()[1]);
  out.push_back(output(shape, weight.dtype(), args.common_device({&weight, &indices})));
}

// nll_loss: input [C], [N, C] or [N, C, d1, ...]; target the input's shape without C.
void nll_loss(const ShapeArgs& args, OutputMetas& out) {
  const TensorImpl& self = args.tensor(0);
  const TensorImpl& target = args.tensor(1);
  const TensorImpl* weight = args.optional_tensor(2);
  const int64_t reduction = args.integer(3);
  check_reduction(args, reduction);
  if (!is_floating_point(self.dtype())) {
    args.fail("expected a floating point input, found ", scalar_type_name(self.dtype()));
  }
  if (self.dim() < 1) args.fail("expected an input of at least 1 dim, found 0 dims");
  if (target.dtype() != ScalarType::Int64 && target.dtype() != ScalarType::Int32) {
    args.fail("expected an int64 or int32 target, found ", scalar_type_name(target.dtype()));
  }
  const int64_t class_dim = self.dim() == 1 ? 0 : 1;
  const int64_t classes = self.sizes()[class_dim];
  DimVector target_shape = sizes_of(self);
  target_shape.erase(target_shape.begin() + class_dim);
  if (!std::ranges::equal(target.sizes(), target_shape)) {
    args.fail("expected a target of shape ", shape_to_string(target_shape),
              " for an input of shape ", shape_to_string(self.sizes()), ", found ",
              shape_to_string(target.sizes()));
  }
  if (weight != nullptr && (weight->dim() != 1 || weight->sizes()[0] != classes)) {
    args.fail("expected a weight of shape [", classes, "] (one per class), found ",
              shape_to_string(weight->sizes()));
  }
  Device device = args.common_device({&self, &target, weight});
  if (reduction == 0) {
    out.push_back(output(target_shape, self.dtype(), device));
  } else {
    out.push_back(output({}, self.dtype(), device));
  }
}

constexpr ShapeRuleEntry kRules[] = {
    {"loom::softmax.int", &softmax},
    {"loom::log_softmax.int", &softmax},
    {"loom::native_layer_norm", &native_layer_norm},
    {"loom::embedding", &embedding},
    {"loom::nll_loss", &nll_loss},
};

}  // namespace

std::span<const ShapeRuleEntry> nn_shape_rules() {
  return kRules;
}

}  // namespace loom::ops
