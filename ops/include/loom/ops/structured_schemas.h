// The schemas of a structured op's derived variants (Note [Structured ops]). Pure
// functions of the functional schema, shared by the op library and ops/opgen.
#pragma once

#include <string_view>

#include "loom/dispatcher/function_schema.h"
#include "loom/ops/op_library.h"

namespace loom::ops {

using dispatch::FunctionSchema;

// loom::add_.Tensor(Tensor(a!) self, ...) -> Tensor(a!)
FunctionSchema inplace_schema(const FunctionSchema& functional);
// loom::add.out(..., *, Tensor(a!) out) -> Tensor(a!); overload "Tensor" or none -> "out",
// otherwise "<overload>_out". Ops with several outputs get one out argument per return,
// named after it (`Tensor(a!) values, Tensor(b!) indices`) or out0, out1, ...
FunctionSchema out_schema(const FunctionSchema& functional);
// Whether the family has an in-place variant: first argument `Tensor self`, one output,
// rule Promoted / PromotedFloat, or Shaped with the "inplace_variant" tag.
bool has_inplace_variant(const FunctionSchema& functional, OutputRule rule, std::string_view tags);
// Whether a comma-separated tag list holds `tag`.
bool has_tag(std::string_view tags, std::string_view tag);

}  // namespace loom::ops
