// hiprtc and the HIP runtime (both in libamdhip64), found at run time with dlopen, for
// the ROCm plugin's tensors: the counterpart of cuda_libraries.h. The compiler plugin
// links neither; where they are missing, HIP kernels are unavailable with an error naming
// the libraries looked for.
#pragma once

#include <cstdint>
#include <string>

namespace loom::compiler {

// "hiprtc 5.2", or throws sdk::Error "[compiler] HIP kernels need hiprtc: ..."
// (UNIMPLEMENTED, so a graph keeps its ops unfused).
std::string hiprtc_version();

// What a HIP image is built for: "gcnArch 910" of device 0, or "gfx90a" where no AMD GPU
// is present (building only). Part of a HIP kernel's cache key.
std::string hip_target();

// Compiles the CUDA generator's source (cuda_codegen.h; HIP reads it as is) with hiprtc:
// for device 0's architecture (hiprtc's default: the current device), or for gfx90a where
// no device is present. Throws sdk::Error "[compiler] hiprtc could not compile ...: <log>"
// (INTERNAL).
std::string hiprtc_compile(const std::string& source, const std::string& name);

// Loads a code object on AMD device `index` (made current) and returns its function
// `symbol` (a hipFunction_t).
void* hip_load_function(const std::string& image, int index, const char* symbol);

// Launches `function` over `numel` elements (a grid-stride loop: 256 threads a block) on
// `stream` (a hipStream_t; null: the default stream) of device `index`.
void hip_launch(void* function, int index, void* stream, int64_t numel, void** params);

}  // namespace loom::compiler
