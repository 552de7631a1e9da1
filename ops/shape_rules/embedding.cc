// Shape rule of embedding (one_hot has rule None: its meta kernel is in
// ops/meta/embedding.cc).
#include "loom/core/type_promotion.h"
#include "shape_rule.h"

namespace loom::ops {
namespace {

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

constexpr ShapeRuleEntry kRules[] = {
    {"loom::embedding", &embedding},
};

}  // namespace

std::span<const ShapeRuleEntry> embedding_shape_rules() {
  return kRules;
}

}  // namespace loom::ops
