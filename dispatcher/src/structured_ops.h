// Structured ops (Note [Structured ops]): deriving the in-place and out= variants of a
// standard op, the core's kernels for the functional and in-place variants, and the
// step that prepares a backend's out= kernel call.
#pragma once

#include <string>
#include <vector>

#include "loom/core/op_library.h"
#include "loom/dispatcher/dispatcher.h"
#include "loom/plugin.h"
#include "shape_rules/shape_rule.h"

namespace loom::dispatch {

class OperatorEntry;
struct KernelSlot;

enum class StructuredVariant : uint8_t { Functional, Inplace, Out };

// Immutable once the op is defined; OperatorEntry::structured points at it.
struct StructuredInfo {
  StructuredVariant variant;
  OutputRule rule;
  std::string base_name;           // "add", for messages
  OperatorEntry* out_op;           // the out= variant of the family
  std::vector<int> inputs;         // indices of the Tensor inputs (out= excluded)
  int num_inputs_and_scalars;      // arguments of the functional variant
  int num_outputs = 1;             // out= arguments (the last ones of the out= variant)
  ShapeRule shape_rule = nullptr;  // rule Shaped only
  uint64_t mask_inputs = 0;        // bit i: argument i is a bool mask (Note [Masks and modes])
  int rounding_mode = -1;          // index of a `str? rounding_mode` argument, or -1
};

// Defines the standard op library: every entry, and for structured entries their
// in-place and out= variants with the core's composite kernels and Meta kernels.
void define_standard_ops(Dispatcher& dispatcher);

// Runs a backend's out= kernel after checking `out` and bringing every tensor input to
// the output's shape and compute dtype (the kernel contract). Called by dispatch() when
// a structured out= op reaches a backend key.
void call_structured_out(const OperatorEntry& e, const StructuredInfo& info, const KernelSlot& slot,
                         DispatchKey key, DispatchKeySet keys, const LoomValue* args,
                         size_t num_args, LoomValue* returns, size_t num_returns,
                         const OutputMeta* known_meta = nullptr);

}  // namespace loom::dispatch
