// Decompositions of the foreach ops: each is the loop of its per-tensor op over element i
// of every list, which every backend gets; the CPU plugin overrides them with kernels that
// cover all the lists in one pass (plugins/cpu/kernels/foreach.cc).
//
// Note [Foreach ops]
// ~~~~~~~~~~~~~~~~~~
// `_foreach_mul_(params, 0.9)` is `params[i].mul_(0.9)` for every i, and must give the same
// bits, so an optimizer may use either (torch.optim's foreach and single-tensor paths). The
// lists must have the same length (at least one tensor); scalars come one for all
// (Scalar) or one per tensor (float[], of the lists' length). A Scalar travels as the
// per-tensor op's C++ number does (a wrapped number), so dtypes and promotion follow the
// per-tensor op too. A backend's multi-tensor kernel may take its fast path only where the
// loop's order cannot show: written tensors disjoint from each other, and an input tensor
// either disjoint from every written one or the very tensor written at its own position
// (`_foreach_addcmul_(v, g, g)`); elsewhere it runs the loop. The ops refuse autograd
// (tensors that require grad): optimizers call them under no-grad, as PyTorch's do.
#include "decomposition.h"

namespace loom::ops {
namespace {

using TensorVector = std::vector<Tensor>;

// Checks the lists of one call: not empty, all of self's length.
void check_lists(const char* op, const TensorVector& self,
                 std::initializer_list<std::pair<const char*, size_t>> others) {
  if (self.empty()) fail(op, "expected a non-empty tensor list for self, found an empty one");
  for (const auto& [name, size] : others) {
    if (size != self.size()) {
      fail(op, "expected ", name, " to have self's length ", self.size(), ", found ", size);
    }
  }
}

TensorVector foreach_add_list(const TensorVector& self, const TensorVector& other,
                              const Scalar& alpha) {
  check_lists("loom::_foreach_add.List", self, {{"other", other.size()}});
  TensorVector out;
  out.reserve(self.size());
  for (size_t i = 0; i < self.size(); ++i) out.push_back(loom::add(self[i], other[i], alpha));
  return out;
}

void foreach_add_scalar_(const TensorVector& self, const Scalar& scalar) {
  check_lists("loom::_foreach_add_.Scalar", self, {});
  for (const Tensor& t : self) loom::add_(t, wrapped_scalar(scalar));
}

void foreach_add_list_(const TensorVector& self, const TensorVector& other, const Scalar& alpha) {
  check_lists("loom::_foreach_add_.List", self, {{"other", other.size()}});
  for (size_t i = 0; i < self.size(); ++i) loom::add_(self[i], other[i], alpha);
}

TensorVector foreach_mul_list(const TensorVector& self, const TensorVector& other) {
  check_lists("loom::_foreach_mul.List", self, {{"other", other.size()}});
  TensorVector out;
  out.reserve(self.size());
  for (size_t i = 0; i < self.size(); ++i) out.push_back(loom::mul(self[i], other[i]));
  return out;
}

void foreach_mul_scalar_(const TensorVector& self, const Scalar& scalar) {
  check_lists("loom::_foreach_mul_.Scalar", self, {});
  for (const Tensor& t : self) loom::mul_(t, wrapped_scalar(scalar));
}

void foreach_mul_scalar_list_(const TensorVector& self, std::span<const double> scalars) {
  check_lists("loom::_foreach_mul_.ScalarList", self, {{"scalars", scalars.size()}});
  for (size_t i = 0; i < self.size(); ++i) loom::mul_(self[i], wrapped_scalar(scalars[i]));
}

void foreach_mul_list_(const TensorVector& self, const TensorVector& other) {
  check_lists("loom::_foreach_mul_.List", self, {{"other", other.size()}});
  for (size_t i = 0; i < self.size(); ++i) loom::mul_(self[i], other[i]);
}

void foreach_div_scalar_list_(const TensorVector& self, std::span<const double> scalars) {
  check_lists("loom::_foreach_div_.ScalarList", self, {{"scalars", scalars.size()}});
  for (size_t i = 0; i < self.size(); ++i) loom::div_(self[i], wrapped_scalar(scalars[i]));
}

void foreach_maximum_list_(const TensorVector& self, const TensorVector& other) {
  check_lists("loom::_foreach_maximum_.List", self, {{"other", other.size()}});
  for (size_t i = 0; i < self.size(); ++i) loom::maximum_(self[i], other[i]);
}

TensorVector foreach_clamp_min_scalar(const TensorVector& self, const Scalar& scalar) {
  check_lists("loom::_foreach_clamp_min.Scalar", self, {});
  TensorVector out;
  out.reserve(self.size());
  for (const Tensor& t : self) out.push_back(loom::clamp_min(t, scalar));
  return out;
}

TensorVector foreach_sqrt(const TensorVector& self) {
  check_lists("loom::_foreach_sqrt", self, {});
  TensorVector out;
  out.reserve(self.size());
  for (const Tensor& t : self) out.push_back(loom::sqrt(t));
  return out;
}

void foreach_rsqrt_(const TensorVector& self) {
  check_lists("loom::_foreach_rsqrt_", self, {});
  for (const Tensor& t : self) loom::rsqrt_(t);
}

void foreach_lerp_scalar_(const TensorVector& self, const TensorVector& tensors1,
                          const Scalar& weight) {
  check_lists("loom::_foreach_lerp_.Scalar", self, {{"tensors1", tensors1.size()}});
  for (size_t i = 0; i < self.size(); ++i) loom::lerp_(self[i], tensors1[i], weight);
}

void foreach_lerp_scalar_list_(const TensorVector& self, const TensorVector& tensors1,
                               std::span<const double> weight) {
  check_lists("loom::_foreach_lerp_.ScalarList", self,
              {{"tensors1", tensors1.size()}, {"weight", weight.size()}});
  for (size_t i = 0; i < self.size(); ++i) loom::lerp_(self[i], tensors1[i], weight[i]);
}

TensorVector foreach_addcmul_scalar(const TensorVector& self, const TensorVector& tensor1,
                                    const TensorVector& tensor2, const Scalar& value) {
  check_lists("loom::_foreach_addcmul.Scalar", self,
              {{"tensor1", tensor1.size()}, {"tensor2", tensor2.size()}});
  TensorVector out;
  out.reserve(self.size());
  for (size_t i = 0; i < self.size(); ++i) {
    out.push_back(loom::addcmul(self[i], tensor1[i], tensor2[i], value));
  }
  return out;
}

void foreach_addcmul_scalar_(const TensorVector& self, const TensorVector& tensor1,
                             const TensorVector& tensor2, const Scalar& value) {
  check_lists("loom::_foreach_addcmul_.Scalar", self,
              {{"tensor1", tensor1.size()}, {"tensor2", tensor2.size()}});
  for (size_t i = 0; i < self.size(); ++i) loom::addcmul_(self[i], tensor1[i], tensor2[i], value);
}

void foreach_addcdiv_scalar_(const TensorVector& self, const TensorVector& tensor1,
                             const TensorVector& tensor2, const Scalar& value) {
  check_lists("loom::_foreach_addcdiv_.Scalar", self,
              {{"tensor1", tensor1.size()}, {"tensor2", tensor2.size()}});
  for (size_t i = 0; i < self.size(); ++i) loom::addcdiv_(self[i], tensor1[i], tensor2[i], value);
}

void foreach_addcdiv_scalar_list_(const TensorVector& self, const TensorVector& tensor1,
                                  const TensorVector& tensor2, std::span<const double> scalars) {
  check_lists(
      "loom::_foreach_addcdiv_.ScalarList", self,
      {{"tensor1", tensor1.size()}, {"tensor2", tensor2.size()}, {"scalars", scalars.size()}});
  for (size_t i = 0; i < self.size(); ++i) {
    loom::addcdiv_(self[i], tensor1[i], tensor2[i], scalars[i]);
  }
}

TensorVector foreach_norm_scalar(const TensorVector& self, const Scalar& ord) {
  check_lists("loom::_foreach_norm.Scalar", self, {});
  TensorVector out;
  out.reserve(self.size());
  for (const Tensor& t : self) out.push_back(loom::linalg_vector_norm(t, ord));
  return out;
}

constexpr DecompositionEntry kDecompositions[] = {
    {"loom::_foreach_add.List", decomposition<&foreach_add_list>()},
    {"loom::_foreach_add_.Scalar", decomposition<&foreach_add_scalar_>()},
    {"loom::_foreach_add_.List", decomposition<&foreach_add_list_>()},
    {"loom::_foreach_mul.List", decomposition<&foreach_mul_list>()},
    {"loom::_foreach_mul_.Scalar", decomposition<&foreach_mul_scalar_>()},
    {"loom::_foreach_mul_.ScalarList", decomposition<&foreach_mul_scalar_list_>()},
    {"loom::_foreach_mul_.List", decomposition<&foreach_mul_list_>()},
    {"loom::_foreach_div_.ScalarList", decomposition<&foreach_div_scalar_list_>()},
    {"loom::_foreach_maximum_.List", decomposition<&foreach_maximum_list_>()},
    {"loom::_foreach_clamp_min.Scalar", decomposition<&foreach_clamp_min_scalar>()},
    {"loom::_foreach_sqrt", decomposition<&foreach_sqrt>()},
    {"loom::_foreach_rsqrt_", decomposition<&foreach_rsqrt_>()},
    {"loom::_foreach_lerp_.Scalar", decomposition<&foreach_lerp_scalar_>()},
    {"loom::_foreach_lerp_.ScalarList", decomposition<&foreach_lerp_scalar_list_>()},
    {"loom::_foreach_addcmul.Scalar", decomposition<&foreach_addcmul_scalar>()},
    {"loom::_foreach_addcmul_.Scalar", decomposition<&foreach_addcmul_scalar_>()},
    {"loom::_foreach_addcdiv_.Scalar", decomposition<&foreach_addcdiv_scalar_>()},
    {"loom::_foreach_addcdiv_.ScalarList", decomposition<&foreach_addcdiv_scalar_list_>()},
    {"loom::_foreach_norm.Scalar", decomposition<&foreach_norm_scalar>()},
};

}  // namespace

std::span<const DecompositionEntry> foreach_decompositions() {
  return kDecompositions;
}

}  // namespace loom::ops
