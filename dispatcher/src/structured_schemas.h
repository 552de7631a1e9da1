// The schemas of a structured op's derived variants (Note [Structured ops]). Pure
// functions of the functional schema, shared by the dispatcher and tools/opgen.
#pragma once

#include "loom/core/op_library.h"
#include "loom/dispatcher/function_schema.h"

namespace loom::dispatch {

// loom::add_.Tensor(Tensor(a!) self, ...) -> Tensor(a!)
FunctionSchema inplace_schema(const FunctionSchema& functional);
// loom::add.out(..., *, Tensor(a!) out) -> Tensor(a!); overload "Tensor" or none -> "out",
// otherwise "<overload>_out".
FunctionSchema out_schema(const FunctionSchema& functional);
// Whether the family has an in-place variant: first argument `Tensor self`, rule not Bool.
bool has_inplace_variant(const FunctionSchema& functional, OutputRule rule);

}  // namespace loom::dispatch
