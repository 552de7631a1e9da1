// Derived schemas of structured ops.
#include "structured_schemas.h"

namespace loom::dispatch {

FunctionSchema inplace_schema(const FunctionSchema& functional) {
  FunctionSchema s = functional;
  s.name.name += "_";
  s.arguments[0].alias = AliasInfo{"a", true};
  Argument ret;
  ret.type = SchemaType::of(SchemaType::Kind::Tensor);
  ret.alias = AliasInfo{"a", true};
  s.returns = {ret};
  return s;
}

FunctionSchema out_schema(const FunctionSchema& functional) {
  FunctionSchema s = functional;
  const std::string& overload = functional.name.overload;
  s.name.overload = overload.empty() || overload == "Tensor" ? "out" : overload + "_out";
  Argument out;
  out.name = "out";
  out.type = SchemaType::of(SchemaType::Kind::Tensor);
  out.kwarg_only = true;
  out.alias = AliasInfo{"a", true};
  s.arguments.push_back(out);
  Argument ret;
  ret.type = out.type;
  ret.alias = out.alias;
  s.returns = {ret};
  return s;
}

bool has_inplace_variant(const FunctionSchema& functional, OutputRule rule) {
  return rule != OutputRule::Bool && !functional.arguments.empty() &&
         functional.arguments[0].name == "self" &&
         functional.arguments[0].type.kind == SchemaType::Kind::Tensor;
}

}  // namespace loom::dispatch
