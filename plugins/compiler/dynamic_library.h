// Opening a vendor library at run time (NVRTC, the CUDA driver, libamdhip64) and binding
// its functions, for cuda_libraries.cc and hip_libraries.cc.
#pragma once

#include <dlfcn.h>

#include <initializer_list>
#include <string>

#include "loom/sdk/error.hpp"

namespace loom::compiler {

// The first of `names` that loads (RTLD_LOCAL), or null with `tried` listing them all.
inline void* open_first(std::initializer_list<const char*> names, std::string* tried) {
  for (const char* name : names) {
    if (void* h = ::dlopen(name, RTLD_NOW | RTLD_LOCAL)) return h;
    *tried += std::string(tried->empty() ? "" : ", ") + name;
  }
  return nullptr;
}

// Binds `*out` to `name` of `library`; throws sdk::Error "[compiler] <owner> has no
// symbol <name>" (UNIMPLEMENTED: the kernels it serves are unavailable) when absent.
template <typename F>
void bind(void* library, const char* name, F* out, const char* owner) {
  void* s = ::dlsym(library, name);
  if (s == nullptr) {
    throw sdk::Error(std::string("[compiler] ") + owner + " has no symbol " + name,
                     LOOM_STATUS_UNIMPLEMENTED);
  }
  *out = reinterpret_cast<F>(s);
}

}  // namespace loom::compiler
