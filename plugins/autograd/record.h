// Recording: the Autograd kernel that runs an op below the Autograd key and, when an
// input requires grad, records a FormulaNode with what the op's formula saves.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "formula.h"
#include "graph.h"
#include "loom/plugin.h"

namespace loom::autograd {

// What the recorder knows about an op, from its schema text and the formula table.
struct OpInfo {
  const LoomOperator* op = nullptr;
  std::string name;        // "loom::mul.Tensor"
  std::string short_name;  // "mul"
  std::string node_name;   // "MulBackward0"
  std::vector<std::string> arg_names;
  uint64_t mutable_args = 0;  // Tensor(a!) arguments
  bool is_out = false;        // writes keyword-only (a!) arguments: an out= variant
  bool is_view = false;       // Tensor(a) self -> Tensor(a)
  bool lists_only = false;    // writes a Tensor(a!)[] or returns a Tensor[] (foreach ops)
  const Formula* formula = nullptr;
};

// The parts of a saved argument that need memory of their own (most arguments are a
// tensor or a number and have none).
struct ArgumentStorage {
  std::vector<int64_t> ints;
  std::vector<double> doubles;
  std::string str;
  std::vector<Sizes> list_sizes;  // a Tensor[]'s elements' shapes (cat's offsets)
};

// A saved argument of a recorded call.
struct SavedArgument {
  LoomValue value{};               // non-tensor values; lists point into `storage`
  int32_t first_edge = -1;         // tensors: the next edge of the (first) tensor
  uint32_t num_tensors = 0;        // 1, or a Tensor[]'s length
  std::vector<SavedTensor> saved;  // per tensor, when the formula reads them
  std::unique_ptr<ArgumentStorage> storage;
  ArgumentStorage& owned() {
    if (!storage) storage = std::make_unique<ArgumentStorage>();
    return *storage;
  }
};

class FormulaNode final : public Node {
 public:
  explicit FormulaNode(const OpInfo* op_info) : info(op_info) {}
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  std::string name() const override { return info->node_name; }
  std::string forward_op() const override { return info->name; }
  void release_saved() override;

  const OpInfo* info;
  absl::InlinedVector<SavedArgument, 4> args;
  std::vector<SavedTensor> results;  // by return index, when saved
};

// Backward of an op without a formula: fails naming the op and the input.
class NotImplementedNode final : public Node {
 public:
  NotImplementedNode(const OpInfo* op_info, std::string input)
      : info(op_info), input_name(std::move(input)) {}
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  std::string name() const override { return info->node_name; }
  const OpInfo* info;
  std::string input_name;
};

// Builds the op table from the formulas (at plugin init).
void build_formula_table();
// Every formula's op, with whether it resolved (for `autograd::formulas`).
const std::vector<Formula>& all_formulas();
// The op's info (computed once per op).
const OpInfo& op_info(const LoomOperator* op);

// The Autograd key's kernel: a whole-key fallback, and also registered per op for ops
// with formulas (so it wins over a CompositeImplicit decomposition).
LoomError* autograd_kernel(void* ctx, const LoomKernelCall* call) noexcept;

}  // namespace loom::autograd
