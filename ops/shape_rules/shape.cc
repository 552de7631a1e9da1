// Shape rules of the shape ops with kernels: cat, flip, roll, repeat, tril, triu.
#include "loom/core/type_promotion.h"
#include "shape_rule.h"

namespace loom::ops {
namespace {

// Note [Legacy empty tensors in cat]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// As in PyTorch, a 1-D tensor of size 0 is skipped by cat whatever the other tensors'
// shapes are (it was once the only way to write an empty tensor); it still takes part in
// the type promotion of the result.
bool skipped_by_cat(const TensorImpl& t) {
  return t.dim() == 1 && t.sizes()[0] == 0;
}

void cat(const ShapeArgs& args, OutputMetas& out) {
  std::vector<const TensorImpl*> tensors = args.tensors(0);
  if (tensors.empty()) args.fail("expected a non-empty list of tensors");
  std::vector<PromotionOperand> operands;
  for (const TensorImpl* t : tensors) {
    operands.push_back({t->dtype(), PromotionOperand::Tier::Dimensioned});
  }
  ScalarType dtype = result_type(operands, args.op());
  size_t ref = 0;
  while (ref < tensors.size() && skipped_by_cat(*tensors[ref])) ++ref;
  std::optional<Device> device;
  for (const TensorImpl* t : tensors) {
    if (!device) {
      device = t->device();
    } else if (!(t->device() == *device)) {
      args.fail("expected all tensors on one device, found ", device->to_string(), " and ",
                t->device().to_string());
    }
  }
  if (ref == tensors.size()) {  // only legacy empty tensors
    args.wrap_dim(args.integer(1), 1);
    out.push_back(output(DimVector{0}, dtype, *device));
    return;
  }
  const TensorImpl& first = *tensors[ref];
  if (first.dim() == 0) {
    args.fail("expected tensors with at least one dim, found tensor ", ref, " with 0 dims");
  }
  const int64_t ndim = first.dim();
  const int64_t dim = args.wrap_dim(args.integer(1), ndim);
  DimVector shape = sizes_of(first);
  shape[dim] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorImpl& t = *tensors[i];
    if (skipped_by_cat(t)) continue;
    if (t.dim() != ndim) {
      args.fail("expected tensors with ", ndim, " dims like tensor ", ref, ", found tensor ", i,
                " with ", t.dim(), " dims");
    }
    for (int64_t d = 0; d < ndim; ++d) {
      if (d != dim && t.sizes()[d] != first.sizes()[d]) {
        args.fail("expected size ", first.sizes()[d], " in dim ", d, " like tensor ", ref,
                  ", found size ", t.sizes()[d], " in tensor ", i);
      }
    }
    shape[dim] += t.sizes()[dim];
  }
  out.push_back(output(std::move(shape), dtype, *device));
}

// Same shape and dtype as self.
OutputMeta like_self(const TensorImpl& self) {
  return output(sizes_of(self), self.dtype(), self.device());
}

void flip(const ShapeArgs& args, OutputMetas& out) {
  const TensorImpl& self = args.tensor(0);
  reduced_dim_mask(args, args.ints(1), self.dim());  // dims in range, no repeats
  out.push_back(like_self(self));
}

void roll(const ShapeArgs& args, OutputMetas& out) {
  const TensorImpl& self = args.tensor(0);
  std::span<const int64_t> shifts = args.ints(1);
  std::span<const int64_t> dims = args.ints(2);
  if (dims.empty()) {
    if (shifts.size() != 1) {
      args.fail(
          "expected one shift when no dims are given (the flattened tensor is rolled), "
          "found ",
          shifts.size());
    }
  } else if (shifts.size() != dims.size()) {
    args.fail("expected as many shifts as dims, found ", shifts.size(), " shifts and ", dims.size(),
              " dims");
  }
  for (int64_t d : dims) args.wrap_dim(d, self.dim());
  out.push_back(like_self(self));
}

void repeat(const ShapeArgs& args, OutputMetas& out) {
  const TensorImpl& self = args.tensor(0);
  std::span<const int64_t> repeats = args.ints(1);
  const int64_t n = static_cast<int64_t>(repeats.size());
  if (n < self.dim()) {
    args.fail("expected at least ", self.dim(), " repeats (one per dim of self), found ", n);
  }
  DimVector shape(repeats.size());
  const int64_t lead = n - self.dim();
  for (int64_t i = 0; i < n; ++i) {
    if (repeats[i] < 0) args.fail("expected non-negative repeats, found ", repeats[i]);
    if (__builtin_mul_overflow(repeats[i], i < lead ? 1 : self.sizes()[i - lead], &shape[i])) {
      args.fail("repeats ", repeats[i], " times dim ", i - lead, " of size ",
                self.sizes()[i - lead], " overflow int64");
    }
  }
  out.push_back(output(std::move(shape), self.dtype(), self.device()));
}

void triangle(const ShapeArgs& args, OutputMetas& out) {
  const TensorImpl& self = args.tensor(0);
  if (self.dim() < 2) args.fail("expected a tensor with at least 2 dims, found ", self.dim());
  out.push_back(like_self(self));
}

constexpr ShapeRuleEntry kRules[] = {
    {"loom::cat", &cat},       {"loom::flip", &flip},     {"loom::roll", &roll},
    {"loom::repeat", &repeat}, {"loom::tril", &triangle}, {"loom::triu", &triangle},
};

}  // namespace

std::span<const ShapeRuleEntry> shape_shape_rules() {
  return kRules;
}

}  // namespace loom::ops
