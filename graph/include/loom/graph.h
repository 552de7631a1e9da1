// loom's graph IR: a program as a list of nodes, each calling one operator by its
// schema with typed arguments, over values defined once (SSA). Placeholders bring in
// user inputs, parameters, buffers and constants; outputs name the results. Every value
// may carry its tensor metadata (dtype, sizes with symbolic dimensions, device), filled
// by running the graph on the meta device (loom/graph_interpreter.h). Graphs print as
// readable text and serialise as protobuf (loom/graph_proto.h); PyTorch's exported
// programs load into them (loom/exported_program.h).
//
//   graph(%x: float32[s0, 16], %fc1.weight: float32[32, 16] parameter):
//     %permute: float32[16, 32] = loom::permute(self=%fc1.weight, dims=[1, 0])
//     %addmm = loom::addmm(self=%fc1.bias, mat1=%x, mat2=%permute, beta=1, alpha=1)
//     return (%addmm)
//   s0 in [1, 1024]
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "loom/core/device.h"
#include "loom/core/scalar_type.h"
#include "loom/value.h"

namespace loom::graph {

// A value's index in Graph::values().
using ValueId = int32_t;
inline constexpr ValueId kNoValue = -1;

// One size of a tensor: a number, or a symbol ("s0") bound from the inputs when the
// graph runs. A symbol stands for any size in its range (Graph::symbols()).
struct SymSize {
  int64_t value = 0;   // the size when not symbolic; otherwise the size it was traced at
  std::string symbol;  // empty: a fixed size
  bool is_symbolic() const { return !symbol.empty(); }
  bool operator==(const SymSize&) const = default;
};

struct TensorMeta {
  ScalarType dtype = ScalarType::Float32;
  std::vector<SymSize> sizes;
  Device device{};
  bool operator==(const TensorMeta&) const = default;
};

enum class ValueType : uint8_t {
  Tensor,
  SymInt,    // an int computed while the graph runs (a size, sym_size.int)
  SymFloat,  // a float computed while the graph runs
  SymBool,   // a bool computed while the graph runs
};
std::string_view value_type_name(ValueType type);

struct ValueInfo {
  std::string name;  // unique in the graph
  ValueType type = ValueType::Tensor;
  std::optional<TensorMeta> meta;  // tensors only; empty until known
};

// One element of a list argument: a value of the graph, or (value == kNoValue) a
// constant int of an `int[]` or None of a `Tensor?[]`.
struct ListItem {
  ValueId value = kNoValue;
  int64_t constant = 0;
  bool operator==(const ListItem&) const = default;
};

// One argument of a node, named as in the operator's schema.
struct Argument {
  enum class Kind : uint8_t {
    Constant,  // `constant`: None, a number (also for a Tensor: a wrapped 0-dim tensor), a
               // string, a dtype, a device, a list of numbers
    Value,     // `value`: a tensor or symbolic number defined earlier
    List,      // `items`: a Tensor[], Tensor?[] or int[] holding values of the graph
  };
  std::string name;
  Kind kind = Kind::Constant;
  loom::Value constant;
  ValueId value = kNoValue;
  std::vector<ListItem> items;

  static Argument of_constant(std::string name, loom::Value constant);
  static Argument of_value(std::string name, ValueId value);
  static Argument of_list(std::string name, std::vector<ListItem> items);
};

// Operators a node may call besides the dispatcher's: arithmetic on symbolic numbers
// (what PyTorch records as Python's `operator.mul` and friends on sizes).
// Their op names start with "sym::" ("sym::mul"); each takes arguments a and b (neg one).
bool is_symbolic_builtin(std::string_view op);

struct Node {
  std::string op;      // "loom::addmm", "loom::add.Tensor", "sym::floordiv"
  std::string source;  // where the node came from ("torch.ops.aten.addmm.default"), or empty
  std::vector<Argument> arguments;  // every argument of the schema, in its order
  // One value per return of the schema (kNoValue: a return nobody reads); for a schema
  // that returns one Tensor[], one value per element.
  std::vector<ValueId> outputs;
  bool list_return = false;  // the schema returns one Tensor[] (split_with_sizes)
};

enum class InputRole : uint8_t { UserInput, Parameter, Buffer, Constant };
std::string_view input_role_name(InputRole role);

struct GraphInput {
  ValueId value = kNoValue;
  InputRole role = InputRole::UserInput;
  std::string target;  // parameters, buffers, constants: their name in the state ("fc1.weight")
};

// The range a symbolic size may take, both ends included.
struct SymbolRange {
  std::string symbol;
  int64_t min = 0;
  int64_t max = INT64_MAX;
  bool operator==(const SymbolRange&) const = default;
};

class Graph {
 public:
  // Adds a value; "[graph] value 'x' is defined twice" when the name is taken.
  ValueId add_value(std::string name, ValueType type, std::optional<TensorMeta> meta = {});
  void add_input(ValueId value, InputRole role, std::string target = "");
  void add_node(Node node);
  void add_output(ValueId value);
  void add_symbol(SymbolRange range);
  // For passes (loom/graph_passes.h): the node list and the outputs, replaced whole.
  // Values keep their ids; a value no node defines any more is simply unused.
  void replace_nodes(std::vector<Node> nodes) { nodes_ = std::move(nodes); }
  void replace_outputs(std::vector<ValueId> outputs) { outputs_ = std::move(outputs); }
  void replace_input(size_t index, GraphInput input) { inputs_.at(index) = std::move(input); }
  void replace_symbols(std::vector<SymbolRange> symbols) { symbols_ = std::move(symbols); }

  const std::vector<ValueInfo>& values() const { return values_; }
  // A value by id (its metadata may be filled in; its name, which indexes it, stays).
  ValueInfo& value(ValueId id);
  const ValueInfo& value(ValueId id) const;
  std::optional<ValueId> find_value(std::string_view name) const;
  const std::vector<GraphInput>& inputs() const { return inputs_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<ValueId>& outputs() const { return outputs_; }
  const std::vector<SymbolRange>& symbols() const { return symbols_; }
  const SymbolRange* find_symbol(std::string_view symbol) const;

  // Checks that the graph is well formed: every value defined once (as an input or a
  // node's output) before any node reads it, references in range, outputs defined,
  // every operator known (the dispatcher's, or a symbolic builtin) and each node's
  // arguments those of its schema, in order, of kinds the schema accepts. Throws
  // loom::Error "[graph] node 'addmm' (loom::addmm): ..." naming the first problem.
  void validate() const;

  // The readable text form (the header comment of this file).
  std::string to_text() const;

 private:
  std::vector<ValueInfo> values_;
  std::unordered_map<std::string, ValueId> index_;  // value name -> id
  std::vector<GraphInput> inputs_;
  std::vector<Node> nodes_;
  std::vector<ValueId> outputs_;
  std::vector<SymbolRange> symbols_;
};

// "float32[s0, 16]"; "float32[]" for a 0-dim tensor.
std::string meta_to_string(const TensorMeta& meta);

}  // namespace loom::graph
