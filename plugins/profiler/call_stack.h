// The C++ call stack of the calling thread, symbolised (with_stack).
#pragma once

#include <string>

namespace loom::profiler {

// Up to 32 frames, innermost first, one "function+0xoffset" per line, demangled; the
// first `skip` frames (the profiler's own) are left out.
std::string capture_call_stack(int skip);

}  // namespace loom::profiler
