// Derivatives of the reduction family: sum, prod, amax/amin, max/min along a dim, var;
// var_mean (a decomposition with a CPU kernel of its own); any, all, argmax, argmin, bincount
// and histc are not differentiable. The full reductions, mean, std, norm and logsumexp are
// decompositions and differentiate through their pieces.
#include "helpers.h"

namespace loom::autograd {
using namespace formulas;

namespace {

// The gradient of amax/amin: shared evenly among the elements equal to the extremum.
void extremum(BackwardContext& c) {
  c.set(0, [&] {
    Tensor self = c.input(0);
    std::vector<int64_t> dims = reduced_dims(c.ints(1), self.dim(), false);
    const bool keepdim = c.bool_arg(2);
    Tensor result = expand_reduced(c.result(), self.sizes(), dims, keepdim);
    Tensor hits = op::to(op::eq(self, result), self.dtype());
    Tensor count = op::sum(hits, std::optional<sdk::IntList>(dims), true);
    Tensor share =
        expand_reduced(c.grad(), self.sizes(), dims, keepdim) / op::expand(count, self.sizes());
    return share * hits;
  });
}

// The gradient of values chosen at `indices` along `dim`: scattered back.
Tensor scatter_back(const Tensor& grad, const Tensor& indices, std::span<const int64_t> sizes,
                    int64_t dim, bool keepdim) {
  Tensor g = grad, idx = indices;
  if (!keepdim && static_cast<int64_t>(sizes.size()) > 0) {
    g = op::unsqueeze(g, dim);
    idx = op::unsqueeze(idx, dim);
  }
  Tensor zeros = sdk::full(sizes, 0.0, grad.dtype(), grad.device());
  return op::scatter(zeros, dim, idx, g);
}

void select_along_dim(BackwardContext& c) {
  c.set(0, [&] {
    std::span<const int64_t> sizes = c.input_sizes(0);
    int64_t dim = c.int_arg(1);
    if (dim < 0) dim += std::max<int64_t>(static_cast<int64_t>(sizes.size()), 1);
    return scatter_back(c.grad(0), c.result(1), sizes, dim, c.bool_arg(2));
  });
}

// The reduced dims, correction and keepdim of var.correction and var_mean.correction
// (self, dim, correction, keepdim), with N the number of reduced elements.
struct ReducedArgs {
  std::vector<int64_t> dims;
  double correction;
  bool keepdim;
  double count;
};

ReducedArgs reduced_args(BackwardContext& c, const Tensor& self) {
  ReducedArgs r{reduced_dims(c.ints(1), self.dim(), c.is_none(1)),
                c.is_none(2) ? 1.0 : c.scalar_arg(2).to_double(), c.bool_arg(3), 1.0};
  for (int64_t d : r.dims) r.count *= static_cast<double>(self.size(d));
  return r;
}

// var's gradient: 2 (x - mean) / (N - correction) times the expanded output gradient;
// `mean` keeps the reduced dims (size 1).
Tensor variance_grad(const Tensor& grad, const Tensor& self, const Tensor& mean,
                     const ReducedArgs& r) {
  Tensor g = expand_reduced(grad, self.sizes(), r.dims, r.keepdim);
  return g * (self - mean) * (2.0 / (r.count - r.correction));
}

}  // namespace

void register_reduction_formulas(FormulaTable& t) {
  t.add({"loom::sum.dim_IntList", 0, 0, [](BackwardContext& c) {
           c.set(0, [&] {
             std::span<const int64_t> sizes = c.input_sizes(0);
             std::vector<int64_t> dims =
                 reduced_dims(c.ints(1), static_cast<int64_t>(sizes.size()), c.is_none(1));
             return expand_reduced(c.grad(), sizes, dims, c.bool_arg(2));
           });
         }});
  // prod along a dim: prod / x_i (inputs without zeros; a zero gives inf * 0).
  t.add({"loom::prod.dim_int", inputs({0}), outputs({0}), [](BackwardContext& c) {
           c.set(0, [&] {
             Tensor self = c.input(0);
             std::vector<int64_t> dims =
                 reduced_dims(std::vector<int64_t>{c.int_arg(1)}, self.dim(), false);
             const bool keepdim = c.bool_arg(2);
             Tensor product = expand_reduced(c.result(), self.sizes(), dims, keepdim);
             return expand_reduced(c.grad(), self.sizes(), dims, keepdim) * product / self;
           });
         }});
  t.add({"loom::amax", inputs({0}), outputs({0}), extremum});
  t.add({"loom::amin", inputs({0}), outputs({0}), extremum});
  t.add({"loom::max.dim", 0, outputs({1}), select_along_dim, true, outputs({0})});
  t.add({"loom::min.dim", 0, outputs({1}), select_along_dim, true, outputs({0})});
  // var: 2 (x - mean) / (N - correction), N the number of reduced elements.
  t.add({"loom::var.correction", inputs({0}), 0, [](BackwardContext& c) {
           c.set(0, [&] {
             Tensor self = c.input(0);
             ReducedArgs r = reduced_args(c, self);
             Tensor mean = op::mean(self, std::optional<sdk::IntList>(r.dims), true);
             return variance_grad(c.grad(), self, mean, r);
           });
         }});
  // var_mean: var's gradient from the first return plus mean's (grad / N) from the
  // second; the saved mean is the forward's (Note [var_mean kernel] in the CPU plugin).
  t.add({"loom::var_mean.correction", inputs({0}), outputs({1}), [](BackwardContext& c) {
           c.set(0, [&] {
             Tensor self = c.input(0);
             ReducedArgs r = reduced_args(c, self);
             const bool var_grad = c.has_grad(0), mean_grad = c.has_grad(1);
             Tensor g;
             if (var_grad) {
               Tensor mean = expand_reduced(c.result(1), self.sizes(), r.dims, r.keepdim);
               g = variance_grad(c.grad(0), self, mean, r);
             }
             if (var_grad && !mean_grad) return g;
             Tensor m = expand_reduced(c.grad(1) / r.count, self.sizes(), r.dims, r.keepdim);
             return var_grad ? g + m : m;
           });
         }});
  t.not_differentiable({"loom::any.dims", "loom::all.dims", "loom::any", "loom::all",
                        "loom::argmax", "loom::argmin", "loom::bincount", "loom::histc"});
}

}  // namespace loom::autograd
