// The loom::Value a schema argument's default stands for ("alpha=1" is Int 1, "None"
// None): for binding calls by name (loom/call.h) and graph nodes (loom/graph.h).
#pragma once

#include "loom/dispatcher/function_schema.h"
#include "loom/value.h"

namespace loom {

Value value_of_default(const dispatch::DefaultValue& d);

}  // namespace loom
