// Decompositions of the linear algebra ops: matmul (dot, mm or a broadcast bmm, after
// PyTorch's rules), linear, the matrix-vector products mv and addmv, linalg_vector_norm
// and cdist.
#include <algorithm>
#include <cmath>
#include <vector>

#include "decomposition.h"
#include "loom/core/type_promotion.h"

namespace loom::ops {
namespace {

// The broadcast of two batch shapes.
DimVector broadcast_batch(IntArrayRef a, IntArrayRef b, IntArrayRef self, IntArrayRef other) {
  size_t n = std::max(a.size(), b.size());
  DimVector out(n, 1);
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t y = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (x != y && x != 1 && y != 1) {
      fail("loom::matmul", "expected batch dims that broadcast, found self ", shape_to_string(self),
           " and other ", shape_to_string(other));
    }
    out[n - 1 - i] = x == 1 ? y : x;
  }
  return out;
}

int64_t product(IntArrayRef sizes) {
  int64_t p = 1;
  for (int64_t s : sizes) p *= s;
  return p;
}

// Note [matmul]
// ~~~~~~~~~~~~~
// 1-D @ 1-D is dot; 2-D @ 2-D is mm; a 1-D operand becomes a matrix (a row on the left, a
// column on the right) whose added dim is dropped from the result. An N-D self (N >= 3)
// times a matrix folds self's batch dims into its rows (one mm). Otherwise the batch dims
// (all but the last two) broadcast: both operands are expanded to the common batch shape,
// flattened to one batch dim (a view when the strides allow) and multiplied with bmm.
Tensor matmul_decomposition(const Tensor& self, const Tensor& other) {
  int64_t da = self.dim();
  int64_t db = other.dim();
  if (da == 0 || db == 0) {
    fail("loom::matmul", "expected both arguments to have at least 1 dim, found ", da, " and ", db);
  }
  if (da == 1 && db == 1) return loom::dot(self, other);
  if (da == 2 && db == 1) return loom::mm(self, other.unsqueeze(1)).squeeze(1);
  if (da == 1 && db == 2) return loom::mm(self.unsqueeze(0), other).squeeze(0);
  if (da == 2 && db == 2) return loom::mm(self, other);
  if (da >= 3 && db <= 2) {
    Tensor b = db == 1 ? other.unsqueeze(1) : other;
    int64_t k = self.size(-1);
    if (b.size(0) != k) {
      fail("loom::matmul", "expected other with ", k, " rows (self is ",
           shape_to_string(self.sizes()), "), found ", shape_to_string(other.sizes()));
    }
    // the row count spelled out: -1 cannot be inferred when k is 0
    Tensor rows = loom::reshape(self, {product(self.sizes().first(self.dim() - 1)), k});
    DimVector shape(self.sizes().begin(), self.sizes().end() - 1);
    if (db == 2) shape.push_back(b.size(1));
    return loom::reshape(loom::mm(rows, b), shape);
  }
  Tensor a = da == 1 ? self.unsqueeze(0) : self;
  Tensor b = db == 1 ? other.unsqueeze(1) : other;
  int64_t n = a.size(-2), k = a.size(-1), p = b.size(-1);
  if (b.size(-2) != k) {
    fail("loom::matmul", "expected other with ", k, " rows (self is ",
         shape_to_string(self.sizes()), "), found ", shape_to_string(other.sizes()));
  }
  DimVector batch = broadcast_batch(a.sizes().first(a.dim() - 2), b.sizes().first(b.dim() - 2),
                                    self.sizes(), other.sizes());
  int64_t batches = product(batch);
  DimVector a_shape = batch, b_shape = batch;
  a_shape.insert(a_shape.end(), {n, k});
  b_shape.insert(b_shape.end(), {k, p});
  Tensor a3 = loom::reshape(a.expand(a_shape), {batches, n, k});
  Tensor b3 = loom::reshape(b.expand(b_shape), {batches, k, p});
  DimVector shape = batch;
  if (da > 1) shape.push_back(n);
  if (db > 1) shape.push_back(p);
  return loom::reshape(loom::bmm(a3, b3), shape);
}

Tensor linear(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
  if (weight.dim() != 1 && weight.dim() != 2) {
    fail("loom::linear", "expected a 1-D or 2-D weight, found ", shape_to_string(weight.sizes()));
  }
  if (bias && input.dim() == 2 && weight.dim() == 2) {
    return loom::addmm(*bias, input, weight.t());
  }
  Tensor out = matmul_decomposition(input, weight.t());
  return bias ? loom::add(out, *bias) : out;
}

// addmm, then relu in place on the product (which nothing else holds; relu's gradient
// needs only its result), or gelu (whose gradient needs the product).
Tensor addmm_activation(const Tensor& self, const Tensor& mat1, const Tensor& mat2,
                        const Scalar& beta, const Scalar& alpha, bool use_gelu) {
  Tensor out = loom::addmm(self, mat1, mat2, beta, alpha);
  return use_gelu ? loom::gelu(out) : loom::relu_(out);
}

void check_matrix_vector(const char* op, const Tensor& mat, const Tensor& vec) {
  if (mat.dim() != 2 || vec.dim() != 1) {
    fail(op, "expected a 2-D matrix and a 1-D vector, found ", mat.dim(), "-D and ", vec.dim(),
         "-D");
  }
  if (mat.sizes()[1] != vec.sizes()[0]) {
    fail(op, "size mismatch: the matrix is ", shape_to_string(mat.sizes()), " and the vector ",
         shape_to_string(vec.sizes()), " (expected ", mat.sizes()[1], " elements)");
  }
}

// mv as an [n, m] x [m, 1] product.
Tensor mv(const Tensor& self, const Tensor& vec) {
  check_matrix_vector("loom::mv", self, vec);
  return loom::mm(self, vec.unsqueeze(1)).squeeze(1);
}

// beta * self + alpha * (mat @ vec) through addmm, which ignores self when beta is 0 (NaN
// included) as PyTorch's addmv does; self broadcasts to [n].
Tensor addmv(const Tensor& self, const Tensor& mat, const Tensor& vec, const Scalar& beta,
             const Scalar& alpha) {
  check_matrix_vector("loom::addmv", mat, vec);
  if (self.dim() > 1) {
    fail("loom::addmv", "expected self of at most 1 dim to broadcast to [", mat.sizes()[0],
         "], found shape ", shape_to_string(self.sizes()));
  }
  const Tensor column = self.dim() == 1 ? self.unsqueeze(1) : self;
  return loom::addmm(column, mat, vec.unsqueeze(1), beta, alpha).squeeze(1);
}

// sum(|x|^ord)^(1/ord) over `dim` (all dims when None), computed in `dtype` when given;
// ord inf / -inf is the max / min of |x|, ord 0 the count of non-zeros.
Tensor vector_norm(const Tensor& self, const Scalar& ord, const OptionalIntList& dim, bool keepdim,
                   std::optional<ScalarType> dtype) {
  constexpr const char* op = "loom::linalg_vector_norm";
  const ScalarType compute = dtype.value_or(self.dtype());
  if (!is_floating_point(compute)) {
    fail(op, "expected a floating point input or dtype, found ", scalar_type_name(compute));
  }
  Tensor x = loom::abs(cast(self, compute));
  std::vector<int64_t> dims;
  if (dim && dim->size() > 0) {
    dims.assign(dim->data(), dim->data() + dim->size());
  } else {
    for (int64_t d = 0; d < self.dim(); ++d) dims.push_back(d);
  }
  const double p = ord.to_double();
  if (std::isinf(p)) {
    if (x.numel() == 0 && p > 0) {
      return loom::sum(x, dims, keepdim);  // the max of no |x| is 0 (PyTorch: 0 for inf)
    }
    return p > 0 ? loom::amax(x, dims, keepdim) : loom::amin(x, dims, keepdim);
  }
  if (p == 0) return loom::sum(cast(loom::ne(x, wrapped_number(0.0)), compute), dims, keepdim);
  if (p == 1) return loom::sum(x, dims, keepdim);
  if (p == 2) return loom::sqrt(loom::sum(loom::mul(x, x), dims, keepdim));
  return loom::pow(loom::sum(loom::pow(x, wrapped_number(p)), dims, keepdim),
                   wrapped_number(1.0 / p));
}

// The p-norm distance between each row of x1 [.., P, M] and of x2 [.., R, M]: [.., P, R].
// Computed from the differences (exact, like PyTorch's compute_mode for small inputs).
Tensor cdist(const Tensor& x1, const Tensor& x2, double p, std::optional<int64_t> compute_mode) {
  constexpr const char* op = "loom::cdist";
  if (x1.dim() < 2 || x2.dim() < 2) {
    fail(op, "expected inputs of at least 2 dims, found ", x1.dim(), " and ", x2.dim());
  }
  if (x1.sizes()[x1.dim() - 1] != x2.sizes()[x2.dim() - 1]) {
    fail(op, "expected x1 and x2 with the same number of columns, found ", x1.sizes()[x1.dim() - 1],
         " and ", x2.sizes()[x2.dim() - 1]);
  }
  if (!(p >= 0)) fail(op, "expected a non-negative p, found ", p);
  if (compute_mode && (*compute_mode < 0 || *compute_mode > 2)) {
    fail(op, "expected compute_mode None, 0, 1 or 2, found ", *compute_mode);
  }
  Tensor diff = loom::sub(x1.unsqueeze(-2), x2.unsqueeze(-3));  // [.., P, R, M]
  return vector_norm(diff, Scalar(p), IntList{-1}, false, std::nullopt);
}

Tensor cdist_forward(const Tensor& x1, const Tensor& x2, double p,
                     std::optional<int64_t> compute_mode) {
  return loom::cdist(x1, x2, p, compute_mode);
}

// The p-norm distances between the rows of self [N, M], pairs i < j in row-major order
// (N (N - 1) / 2 values): the norms of the pairs' differences, never of a row with
// itself, whose zero distance has no derivative for p = 2.
Tensor pdist_forward(const Tensor& self, double p) {
  const char* op = "loom::_pdist_forward";
  if (self.dim() != 2)
    fail(op, "expected a 2-D input [N, M], found ", shape_to_string(self.sizes()));
  if (!(p >= 0)) fail(op, "expected a non-negative p, found ", p);
  const int64_t n = self.size(0);
  std::vector<int64_t> first, second;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = i + 1; j < n; ++j) {
      first.push_back(i);
      second.push_back(j);
    }
  }
  Tensor diff = loom::sub(loom::index_select(self, 0, int64_tensor(first, self.device())),
                          loom::index_select(self, 0, int64_tensor(second, self.device())));
  return loom::linalg_vector_norm(diff, p, IntList{1}, false, std::nullopt);
}

constexpr DecompositionEntry kDecompositions[] = {
    {"loom::_cdist_forward", decomposition<&cdist_forward>()},
    {"loom::_pdist_forward", decomposition<&pdist_forward>()},
    {"loom::matmul", decomposition<&matmul_decomposition>()},
    {"loom::linalg_vector_norm", decomposition<&vector_norm>()},
    {"loom::cdist", decomposition<&cdist>()},
    {"loom::mv", decomposition<&mv>()},
    {"loom::addmv", decomposition<&addmv>()},
    {"loom::linear", decomposition<&linear>()},
    {"loom::_addmm_activation", decomposition<&addmm_activation>()},
};

}  // namespace

std::span<const DecompositionEntry> linalg_decompositions() {
  return kDecompositions;
}

}  // namespace loom::ops
