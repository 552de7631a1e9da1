// Capturing the op calls of one thread: a fallback on the Tracer key records each call
// made outside any other op (Note [Capturing op calls]) and runs it.
#pragma once

#include "loom/compiler_api.h"

namespace loom::compiler {

// The fallback registered on LOOM_KEY_TRACER.
LoomError* capture_op(void* ctx, const LoomKernelCall* call);

// The table's capture_begin and capture_end (loom/compiler_api.h).
LoomError* capture_begin();
LoomError* capture_end(void* ctx, LoomCaptureVisitFn visit);

}  // namespace loom::compiler
