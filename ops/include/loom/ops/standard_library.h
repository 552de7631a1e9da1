// Registering the standard op library (ops.def) with the dispatcher: every op, the
// derived variants of structured ops with their kernels, meta kernels and
// decompositions. Done once per process, when a runtime starts.
#pragma once

namespace loom::dispatch {
struct Registrant;
}

namespace loom::ops {

// Defines the standard ops unless they are defined already; thread-safe. loom::Runtime
// calls it before loading plugins, and the typed op API before its first lookup.
void load_standard_library();

// The registrant that owns the standard ops ("core").
const dispatch::Registrant* op_library_registrant();

}  // namespace loom::ops
