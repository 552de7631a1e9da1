// Shape rules of the matrix products: mm, bmm, addmm, baddbmm, dot.
#include "loom/core/type_promotion.h"
#include "shape_rule.h"

namespace loom::ops {
namespace {

std::string dims_of(const TensorImpl& t) {
  return shape_to_string(t.sizes());
}

void require_dim(const ShapeArgs& args, const TensorImpl& t, const char* name, int64_t ndim) {
  if (t.dim() != ndim) {
    args.fail("expected ", name, " to have ", ndim, " dims, found ", t.dim(), " dims (shape ",
              dims_of(t), ")");
  }
}

// Every operand of a product has one dtype (no promotion), and bool is not a number here.
void require_same_dtype(const ShapeArgs& args, std::initializer_list<const TensorImpl*> tensors,
                        std::initializer_list<const char*> names) {
  const TensorImpl* first = *tensors.begin();
  const char* first_name = *names.begin();
  if (first->dtype() == ScalarType::Bool) {
    args.fail("expected a numeric dtype, found bool");
  }
  auto name = names.begin();
  for (const TensorImpl* t : tensors) {
    if (t->dtype() != first->dtype()) {
      args.fail("expected ", *name, " to have the dtype of ", first_name, " (",
                scalar_type_name(first->dtype()), "), found ", scalar_type_name(t->dtype()));
    }
    ++name;
  }
}

// The rows/cols check of a (batched) product a @ b whose last two dims are multiplied.
void require_product(const ShapeArgs& args, const TensorImpl& a, const char* a_name,
                     const TensorImpl& b, const char* b_name) {
  int64_t inner = a.sizes()[a.dim() - 1];
  if (b.sizes()[b.dim() - 2] != inner) {
    args.fail("expected ", b_name, " with ", inner, " rows (", a_name, " is ", dims_of(a),
              "), found ", dims_of(b));
  }
  if (a.dim() == 3 && a.sizes()[0] != b.sizes()[0]) {
    args.fail("expected ", b_name, " with batch size ", a.sizes()[0], " (", a_name, " is ",
              dims_of(a), "), found ", dims_of(b));
  }
}

// self of addmm/baddbmm broadcasts to the product's shape.
void require_broadcastable(const ShapeArgs& args, const TensorImpl& self, const DimVector& shape) {
  bool ok = self.dim() <= static_cast<int64_t>(shape.size());
  for (int64_t i = 0; ok && i < self.dim(); ++i) {
    int64_t s = self.sizes()[self.dim() - 1 - i];
    int64_t r = shape[shape.size() - 1 - i];
    ok = s == 1 || s == r;
  }
  if (!ok) {
    args.fail("expected self to broadcast to the product's shape ", shape_to_string(shape),
              ", found ", dims_of(self));
  }
}

// mm / bmm: self [.., n, m] @ mat2 [.., m, p] -> [.., n, p].
DimVector product(const ShapeArgs& args, const TensorImpl& a, const char* a_name,
                  const TensorImpl& b, const char* b_name, int64_t ndim) {
  require_dim(args, a, a_name, ndim);
  require_dim(args, b, b_name, ndim);
  require_product(args, a, a_name, b, b_name);
  DimVector shape(a.sizes().begin(), a.sizes().end() - 1);
  shape.push_back(b.sizes()[ndim - 1]);
  return shape;
}

template <int64_t Ndim>
void mm_like(const ShapeArgs& args, OutputMetas& out) {
  const TensorImpl& self = args.tensor(0);
  const TensorImpl& mat2 = args.tensor(1);
  DimVector shape = product(args, self, "self", mat2, "mat2", Ndim);
  require_same_dtype(args, {&self, &mat2}, {"self", "mat2"});
  out.push_back(output(std::move(shape), self.dtype(), args.common_device({&self, &mat2})));
}

template <int64_t Ndim>
void addmm_like(const ShapeArgs& args, OutputMetas& out) {
  const TensorImpl& self = args.tensor(0);
  const TensorImpl& a = args.tensor(1);
  const TensorImpl& b = args.tensor(2);
  const char* a_name = Ndim == 2 ? "mat1" : "batch1";
  const char* b_name = Ndim == 2 ? "mat2" : "batch2";
  DimVector shape = product(args, a, a_name, b, b_name, Ndim);
  require_broadcastable(args, self, shape);
  require_same_dtype(args, {&a, &b, &self}, {a_name, b_name, "self"});
  out.push_back(output(std::move(shape), a.dtype(), args.common_device({&self, &a, &b})));
}

void dot(const ShapeArgs& args, OutputMetas& out) {
  const TensorImpl& self = args.tensor(0);
  const TensorImpl& other = args.tensor(1);
  require_dim(args, self, "self", 1);
  require_dim(args, other, "tensor", 1);
  if (self.numel() != other.numel()) {
    args.fail("expected tensors of the same length, found ", self.numel(), " and ", other.numel());
  }
  require_same_dtype(args, {&self, &other}, {"self", "tensor"});
  out.push_back(output({}, self.dtype(), args.common_device({&self, &other})));
}

constexpr ShapeRuleEntry kRules[] = {
    {"loom::mm", &mm_like<2>},         {"loom::bmm", &mm_like<3>}, {"loom::addmm", &addmm_like<2>},
    {"loom::baddbmm", &addmm_like<3>}, {"loom::dot", &dot},
};

}  // namespace

std::span<const ShapeRuleEntry> linalg_shape_rules() {
  return kRules;
}

}  // namespace loom::ops
