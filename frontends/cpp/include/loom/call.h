// Calling any operator by name, the way Python calls `torch.ops.aten.add(a, b, alpha=2)`:
// for ops the typed API does not cover, such as ops a plugin defines. Arguments are bound
// to the schema positionally and by keyword, and missing ones take the schema's defaults.
//
//   auto r = loom::call("add", {a, b}, {{"alpha", 2}});            // loom::add.Tensor
//   auto s = loom::call("loom::sum.dim_IntList", {x, std::vector<int64_t>{1}},
//                       {{"keepdim", true}});
//   auto [values, indices] = std::pair(r[0].to_tensor(), r[1].to_tensor());
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "loom/value.h"

namespace loom {

using Kwargs = std::vector<std::pair<std::string, Value>>;

// Calls the operator `op` and returns its results, one Value per return of the schema.
//
// Note [Call by name]
// ~~~~~~~~~~~~~~~~~~~~
// `op` is "ns::name.overload", or "ns::name" to pick among the overloads; the namespace
// defaults to "loom". Without an overload the candidates are the op without overload
// name first, then the others in name order; the first one the arguments bind to
// without wrapping a number as a tensor is called, else the first one they bind to
// with it, so `call("add", {a, b})` is add.Tensor and `call("add", {a, b}, {{"out", c}})`
// add.out. Binding follows the schema: positional
// arguments fill the non-keyword-only arguments in order, keywords fill any argument by
// name, the rest take their defaults. Conversions are those Python's `torch.ops` makes: a
// number for a Tensor (a wrapped 0-dim tensor, promoting like a Python number), an int
// for a float, an int, float or bool for a Scalar, one int for an `int[N]` (repeated N
// times), a dtype or device name ("float16", "cpu") for a ScalarType or Device, an int
// for a Layout or MemoryFormat (PyTorch's enum values: torch.strided is 7), None for
// an optional argument. Errors (unknown op, no overload that binds, a missing, doubled,
// unknown or mistyped argument) are loom::Error naming the op and the argument.
std::vector<Value> call(std::string_view op, const std::vector<Value>& args = {},
                        const Kwargs& kwargs = {});

// The schemas `op` names (one, or every overload when no overload is given), in the
// order call tries them: "loom::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1)
// -> Tensor". Empty when there is no such op.
std::vector<std::string> schemas(std::string_view op);

}  // namespace loom
