// Derived schemas of structured ops.
#include "loom/ops/structured_schemas.h"

namespace loom::ops {

using dispatch::AliasInfo;
using dispatch::Argument;
using dispatch::SchemaType;

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
  s.returns.clear();
  const size_t n = functional.returns.size();
  for (size_t i = 0; i < n; ++i) {
    Argument out;
    const std::string& named = functional.returns[i].name;
    out.name = n == 1 ? "out" : !named.empty() ? named : "out" + std::to_string(i);
    out.type = SchemaType::of(SchemaType::Kind::Tensor);
    out.kwarg_only = true;
    out.alias = AliasInfo{std::string(1, static_cast<char>('a' + i)), true};
    s.arguments.push_back(out);
    Argument ret;
    ret.name = n == 1 ? "" : out.name;
    ret.type = out.type;
    ret.alias = out.alias;
    s.returns.push_back(ret);
  }
  return s;
}

bool has_tag(std::string_view tags, std::string_view tag) {
  while (!tags.empty()) {
    size_t comma = tags.find(',');
    if (tags.substr(0, comma) == tag) return true;
    if (comma == std::string_view::npos) break;
    tags.remove_prefix(comma + 1);
  }
  return false;
}

bool has_inplace_variant(const FunctionSchema& functional, OutputRule rule, std::string_view tags) {
  bool self_first = !functional.arguments.empty() && functional.arguments[0].name == "self" &&
                    functional.arguments[0].type.kind == SchemaType::Kind::Tensor &&
                    functional.returns.size() == 1;
  switch (rule) {
    case OutputRule::Promoted:
    case OutputRule::PromotedFloat:
      return self_first;
    case OutputRule::Shaped:
      return self_first && has_tag(tags, "inplace_variant");
    default:
      return false;
  }
}

}  // namespace loom::ops
