// Derivative formulas: what each formulas/<family>.cc writes. A formula names its op,
// the tensor arguments and returns its backward reads, and the backward itself, written
// as math over the SDK's typed op API (loom/sdk/ops.hpp):
//
//   table.add({"loom::mul.Tensor", inputs({0, 1}), {}, [](BackwardContext& c) {
//     c.set(0, [&] { return c.grad() * c.input(1); });
//     c.set(1, [&] { return c.grad() * c.input(0); });
//   }});
//
// Arguments are numbered as in the op's schema. A gradient may keep the broadcast shape
// of the forward output: the engine sums it to the input's shape (Note [Gradient
// validation] in engine.cc). An op's in-place variant (mul_.Tensor) gets the same formula
// unless it has its own.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "graph.h"
#include "loom/sdk/ops.hpp"

namespace loom::autograd {

class BackwardContext;
using BackwardFn = void (*)(BackwardContext&);

struct Formula {
  const char* op = nullptr;    // "loom::mul.Tensor"
  uint64_t saved_inputs = 0;   // bit i: tensor argument i is saved for backward
  uint32_t saved_outputs = 0;  // bit i: return i is saved for backward
  BackwardFn backward = nullptr;
  bool differentiable = true;  // false: outputs never require grad (comparisons, argmax)
  // Bit i: return i gets a gradient history (default: every floating-point return).
  uint32_t differentiable_outputs = ~0u;
  // Bit i: only the layout (sizes, strides, storage offset) of tensor argument i is kept,
  // not its values, so later in-place writes do not matter (as_strided).
  uint64_t saved_layouts = 0;
  // Set: the op refuses a tensor that requires grad with this message (resize_).
  const char* refusal = nullptr;
};

constexpr uint64_t inputs(std::initializer_list<int> args) {
  uint64_t mask = 0;
  for (int a : args) mask |= uint64_t{1} << a;
  return mask;
}
constexpr uint32_t outputs(std::initializer_list<int> rets) {
  uint32_t mask = 0;
  for (int r : rets) mask |= uint32_t{1} << r;
  return mask;
}

// Marks ops whose outputs carry no gradient (integer or bool results, random draws).
inline Formula not_differentiable(const char* op) {
  Formula f;
  f.op = op;
  f.differentiable = false;
  return f;
}

// Marks an op that refuses arguments requiring grad, as PyTorch's resize_ does.
inline Formula refuses_grad(const char* op, const char* message) {
  Formula f = not_differentiable(op);
  f.refusal = message;
  return f;
}

class FormulaTable {
 public:
  void add(Formula f) { formulas_.push_back(f); }
  void not_differentiable(std::initializer_list<const char*> ops) {
    for (const char* op : ops) add(autograd::not_differentiable(op));
  }
  const std::vector<Formula>& all() const { return formulas_; }

 private:
  std::vector<Formula> formulas_;
};

// One per op family, defined in formulas/<family>.cc; the build lists the files it finds
// (autograd_formula_families.inc, Note [Op families as data]).
#define LOOM_FAMILY(family) void register_##family##_formulas(FormulaTable& t);
#include "autograd_formula_families.inc"
#undef LOOM_FAMILY

struct SavedArgument;
class FormulaNode;

// What a backward formula sees.
class BackwardContext {
 public:
  BackwardContext(FormulaNode& node, std::vector<Tensor>& grads, std::vector<Tensor>& grad_inputs,
                  bool create_graph)
      : node_(node), grads_(grads), grad_inputs_(grad_inputs), create_graph_(create_graph) {}

  // The gradient of return `output` (zeros when none flowed into it).
  const Tensor& grad(size_t output = 0);
  bool has_grad(size_t output = 0) const;
  // A saved tensor argument, or return.
  Tensor input(size_t arg) const;
  Tensor result(size_t output = 0) const;
  // An argument saved by layout only (Formula::saved_layouts): read its geometry, not values.
  Tensor layout(size_t arg) const;
  // A saved element of a Tensor[] argument.
  Tensor input(size_t arg, size_t element) const;

  int64_t int_arg(size_t arg) const;
  double double_arg(size_t arg) const;  // float or int
  bool bool_arg(size_t arg) const;
  sdk::Scalar scalar_arg(size_t arg) const;
  std::span<const int64_t> ints(size_t arg) const;
  std::string_view str_arg(size_t arg) const;
  bool is_none(size_t arg) const;

  // The forward input's shape and dtype (arguments that get a gradient).
  std::span<const int64_t> input_sizes(size_t arg, size_t element = 0) const;
  LoomDType input_dtype(size_t arg, size_t element = 0) const;
  size_t list_length(size_t arg) const;
  // The shape of element `element` of a Tensor[] argument.
  std::span<const int64_t> list_sizes(size_t arg, size_t element) const;
  // Whether a saved Tensor?[] element is present (not None).
  bool has_input(size_t arg, size_t element) const;
  // The forward output's shape.
  std::span<const int64_t> output_sizes(size_t output = 0) const;

  // Whether argument `arg` (element `element` of a Tensor[]) needs a gradient.
  bool needs(size_t arg, size_t element = 0) const;
  // Sets the gradient of `arg` to make() when it needs one.
  template <typename F>
  void set(size_t arg, F&& make) {
    if (needs(arg)) set_grad(arg, 0, make());
  }
  template <typename F>
  void set_element(size_t arg, size_t element, F&& make) {
    if (needs(arg, element)) set_grad(arg, element, make());
  }
  void set_grad(size_t arg, size_t element, Tensor grad);

  bool create_graph() const { return create_graph_; }
  const char* op_name() const;

 private:
  const SavedArgument& argument(size_t arg) const;
  FormulaNode& node_;
  std::vector<Tensor>& grads_;        // of the forward outputs
  std::vector<Tensor>& grad_inputs_;  // of the forward inputs, one per next edge
  bool create_graph_;
};

}  // namespace loom::autograd
