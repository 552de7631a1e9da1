// The system C++ compiler that builds fused kernels, and the disk cache of what it built
// (Note [The kernel cache]).
#pragma once

#include <string>
#include <vector>

#include "cpp_codegen.h"

namespace loom::compiler {

struct Toolchain {
  std::string compiler;            // the path found ("/usr/bin/c++")
  std::string version;             // the first line of `compiler --version`
  std::vector<std::string> flags;  // every kernel's
  std::string isa;                 // the CPU's model and features, hashed
  std::string describe() const;    // "g++ (Debian 12.2.0-14) 12.2.0 (/usr/bin/c++) -O3 ..."
};

// The toolchain, found once per process ($LOOM_CXX, else c++, g++, clang++ on PATH).
// Throws sdk::Error "[compiler] no C++ compiler found ..." (FAILED_PRECONDITION) naming
// what was looked for.
const Toolchain& toolchain();

struct BuiltKernel {
  KernelFn fn = nullptr;
  int source = 0;  // 0 built now, 2 loaded from the disk cache
  double ms = 0;   // building or loading
};

// The cache key of a program: a hash of it, the generator's version, the toolchain
// (compiler, flags, ISA) and loom's version. 32 hex digits.
std::string kernel_key(const std::string& program);

// Loads the kernel of `key` from `cache_dir` ("" : no disk cache) when a sound entry is
// there, else writes `source` beside it, compiles and loads it. `debug_dir` (may be
// empty) receives the program and the source.
BuiltKernel build_or_load(const std::string& key, const std::string& program,
                          const std::string& source, const std::string& cache_dir,
                          const std::string& debug_dir);

// The key of a GPU program (target cuda or hip): a hash of it, the GPU generator's
// version, loom's, the runtime compiler's (NVRTC, hiprtc) and the architecture built for.
// Throws as nvrtc_version() / hiprtc_version() where that compiler is missing.
std::string gpu_kernel_key(Target target, const std::string& program);

// Loads the GPU image of `key` from `cache_dir` ("": no disk cache) when a sound entry
// is there, else builds `source` (cuda_codegen.h) with NVRTC (a cubin for device 0, or
// PTX where no device is present) or hiprtc (a code object) and stores it; writes program
// and source to `debug_dir` (may be empty).
BuiltKernel build_gpu(Target target, const std::string& key, const std::string& program,
                      const std::string& source, const std::string& cache_dir,
                      const std::string& debug_dir, std::string* image);

// $LOOM_CACHE_DIR, else $HOME/.cache/loom/compile.
std::string default_cache_dir();

}  // namespace loom::compiler
