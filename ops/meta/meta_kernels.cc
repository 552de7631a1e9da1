// Meta kernels of the ops without a shape rule (rule None in ops.def): random ops whose
// output is shaped like an input (bernoulli, dropout), one_hot with a given class count,
// advanced indexing with integer indices; and, for the ops whose output shape depends on
// tensor values (nonzero, masks, one_hot inferring its class count), an error that says
// so instead of "no kernel for dispatch key Meta".
//
// Note [Meta kernels of unstructured ops]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A structured op gets its meta kernel from its shape rule (structured_ops.cc). The ops
// here are unstructured because their output is allocated by the kernel, often from the
// data; where the shape follows from the arguments alone they get a typed meta kernel
// that checks the arguments as the CPU kernel does and returns an empty meta tensor.
// Where it does not, PyTorch's meta device raises for data-dependent shapes, and so do
// these kernels, naming the op and what the shape depends on.
#include <algorithm>
#include <string>
#include <vector>

#include "decompositions/decomposition.h"

#include "loom/core/type_promotion.h"

namespace loom::ops {
namespace {

[[noreturn]] void data_dependent(const char* op, const char* what) {
  fail(op, "the output shape depends on ", what,
       ", which a meta tensor does not have (expected a tensor with data)");
}

void check_probability(const char* op, double p) {
  if (!(p >= 0.0 && p <= 1.0)) fail(op, "expected p in [0, 1], found p=", p);
}

void check_floating(const char* op, const Tensor& t) {
  if (!is_floating_point(t.dtype())) {
    fail(op, "dtype ", scalar_type_name(t.dtype()), " is not supported (expected a floating type)");
  }
}

Tensor bernoulli_meta(const Tensor& self) {
  check_floating("loom::bernoulli", self);
  return empty(self.sizes(), self.dtype(), self.device());
}

Tensor dropout_meta(const Tensor& input, double p, bool train) {
  check_probability("loom::dropout", p);
  check_floating("loom::dropout", input);
  if (!train) return input;
  return empty(input.sizes(), input.dtype(), input.device());
}

Tensor one_hot_meta(const Tensor& self, int64_t num_classes) {
  const char* op = "loom::one_hot";
  if (self.dtype() != ScalarType::Int64) {
    fail(op, "expected an int64 input, found ", scalar_type_name(self.dtype()));
  }
  if (num_classes < -1) {
    fail(op, "expected num_classes >= 0 (or -1 to infer it), found ", num_classes);
  }
  if (num_classes == -1) data_dependent(op, "the largest class (num_classes=-1)");
  DimVector sizes(self.sizes().begin(), self.sizes().end());
  sizes.push_back(num_classes);
  return empty(sizes, ScalarType::Int64, self.device());
}

Tensor nonzero_meta(const Tensor&) {
  data_dependent("loom::nonzero", "the number of nonzero elements");
}

// Note [Advanced indexing] (plugins/cpu/indexing_kernels.cc) with integer indices only:
// the broadcast index shape replaces the indexed dims, in place when they are adjacent,
// else first.
Tensor index_meta(const Tensor& self, const std::vector<std::optional<Tensor>>& indices) {
  const char* op = "loom::index.Tensor";
  if (static_cast<int64_t>(indices.size()) > self.dim()) {
    fail(op, "too many indices for a tensor of ", self.dim(), " dims: found ", indices.size());
  }
  DimVector broadcast;
  std::vector<int64_t> indexed;
  for (size_t i = 0; i < indices.size(); ++i) {
    if (!indices[i]) continue;
    const ScalarType dtype = indices[i]->dtype();
    if (dtype == ScalarType::Bool || dtype == ScalarType::UInt8) {
      data_dependent(op, "the number of true elements of a mask");
    }
    if (dtype != ScalarType::Int64) {
      fail(op, "expected int64 or bool index tensors, found ", scalar_type_name(dtype),
           " for index ", i);
    }
    broadcast = indexed.empty() ? DimVector(indices[i]->sizes().begin(), indices[i]->sizes().end())
                                : broadcast_shapes(broadcast, indices[i]->sizes(), op);
    indexed.push_back(static_cast<int64_t>(i));
  }
  if (indexed.empty()) return empty(self.sizes(), self.dtype(), self.device());
  const bool adjacent =
      indexed.back() - indexed.front() + 1 == static_cast<int64_t>(indexed.size());
  DimVector sizes;
  if (!adjacent) sizes = broadcast;
  for (int64_t d = 0; d < self.dim(); ++d) {
    const bool is_indexed = std::find(indexed.begin(), indexed.end(), d) != indexed.end();
    if (adjacent && d == indexed.front())
      sizes.insert(sizes.end(), broadcast.begin(), broadcast.end());
    if (!is_indexed) sizes.push_back(self.sizes()[d]);
  }
  return empty(sizes, self.dtype(), self.device());
}

constexpr DecompositionEntry kMetaKernels[] = {
    {"loom::bernoulli", decomposition<&bernoulli_meta>()},
    {"loom::dropout", decomposition<&dropout_meta>()},
    {"loom::one_hot", decomposition<&one_hot_meta>()},
    {"loom::nonzero", decomposition<&nonzero_meta>()},
    {"loom::index.Tensor", decomposition<&index_meta>()},
};

}  // namespace

LoomKernelFn find_meta_kernel(std::string_view op) {
  for (const DecompositionEntry& e : kMetaKernels) {
    if (e.op == op) return e.kernel;
  }
  return nullptr;
}

}  // namespace loom::ops
