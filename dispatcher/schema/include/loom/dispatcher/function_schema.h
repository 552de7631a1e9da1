// Operator schemas in the PyTorch schema grammar: the data types that describe an operator's
// name, arguments and returns, and the parser that builds them from text such as
// "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor".
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace loom::dispatch {

// "aten::add.Tensor" is {ns = "aten", name = "add", overload = "Tensor"}; the overload may be
// empty.
struct OperatorName {
  std::string ns;
  std::string name;
  std::string overload;

  // "ns::name" or "ns::name.overload".
  std::string qualified() const;

  friend bool operator==(const OperatorName&, const OperatorName&) = default;
};

// The type of an argument or return. Base kinds carry nothing else; List and Optional wrap
// `elem`, and a List may have a fixed size (`int[2]`). SymInt is parsed as Int.
struct SchemaType {
  enum class Kind {
    Tensor,
    Int,
    Float,
    Bool,
    Str,
    Scalar,
    ScalarType,
    Device,
    Generator,
    Layout,
    MemoryFormat,
    List,
    Optional,
  };

  Kind kind = Kind::Tensor;
  std::shared_ptr<const SchemaType> elem;  // Set for List and Optional only.
  std::optional<int64_t> fixed_size;       // Set for fixed-size lists (`int[2]`) only.

  static SchemaType of(Kind base);
  static SchemaType list_of(SchemaType elem, std::optional<int64_t> fixed_size = std::nullopt);
  static SchemaType optional_of(SchemaType elem);

  bool is_list() const { return kind == Kind::List; }
  bool is_optional() const { return kind == Kind::Optional; }

  // Schema spelling without alias annotations: "Tensor?", "int[2]", "Tensor?[]".
  std::string to_string() const;

  // Deep comparison (elements are compared by value, not by pointer).
  friend bool operator==(const SchemaType& a, const SchemaType& b);
};

// The schema spelling of a base kind ("Tensor", "int", ...); "List"/"Optional" for wrappers.
std::string_view kind_name(SchemaType::Kind kind);

// `Tensor(a)` reads set "a"; `Tensor(a!)` also writes it. `Tensor(a -> *)` reads as set "a".
struct AliasInfo {
  std::string set;
  bool is_write = false;

  friend bool operator==(const AliasInfo&, const AliasInfo&) = default;
};

// A default value; std::monostate stands for None.
using DefaultValue = std::variant<std::monostate, int64_t, double, bool, std::string,
                                  std::vector<int64_t>, std::vector<double>, std::vector<bool>>;

// Schema spelling of a default: "None", "1", "1e-05", "True", "\"mean\"", "[1, 2]".
std::string default_value_to_string(const DefaultValue& value);

// An argument or return value; returns may be unnamed (empty name) and never have defaults.
// The alias annotation belongs to the Tensor inside the type: `Tensor(a!)[]`, `Tensor(a)?`.
struct Argument {
  std::string name;
  SchemaType type;
  std::optional<DefaultValue> default_value;
  bool kwarg_only = false;
  std::optional<AliasInfo> alias;

  // "Tensor(a!) self", "Scalar alpha=1", "Tensor" (unnamed return).
  std::string to_string() const;

  // Defaults compare equal when both are NaN in the same places.
  friend bool operator==(const Argument& a, const Argument& b);
};

struct FunctionSchema {
  OperatorName name;
  std::vector<Argument> arguments;
  std::vector<Argument> returns;

  // Canonical text that parse_schema reads back into an equal schema, e.g.
  // "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor".
  std::string to_string() const;

  // True when any argument carries a write alias (`Tensor(a!)`).
  bool is_mutable() const;

  friend bool operator==(const FunctionSchema&, const FunctionSchema&) = default;
};

// Parse a whole schema. Throws loom::Error (component "schema") whose detail starts with
// "column N: " and says what was expected and what was found.
FunctionSchema parse_schema(std::string_view text);

// Parse just "ns::name" or "ns::name.overload"; throws like parse_schema.
OperatorName parse_operator_name(std::string_view text);

}  // namespace loom::dispatch
