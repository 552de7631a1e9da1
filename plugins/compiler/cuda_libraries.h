// NVRTC and the CUDA driver, found at run time with dlopen: the compiler plugin links
// neither, so it loads where CUDA is absent and only its CUDA kernels are unavailable
// there, with an error naming the libraries looked for.
#pragma once

#include <cstdint>
#include <string>

namespace loom::compiler {

// "NVRTC 13.0", or throws sdk::Error "[compiler] CUDA kernels need NVRTC: ..."
// (UNIMPLEMENTED, so a graph keeps its ops unfused) naming the libraries looked for.
std::string nvrtc_version();

// Compiles CUDA C++ `source` (kernel `name`, for the log) with NVRTC for `arch`:
// "sm_90" gives a cubin, "compute_90" PTX. Throws sdk::Error "[compiler] NVRTC could not
// compile ...: <log>" (INTERNAL) when it fails.
std::string nvrtc_compile(const std::string& source, const std::string& name,
                          const std::string& arch);

// The architecture of CUDA device `index` ("sm_90"), through the driver.
std::string cuda_device_arch(int index);

// Loads a compiled image on device `index` (made current: its primary context) and
// returns the kernel function `symbol` (a CUfunction).
void* cuda_load_function(const std::string& image, int index, const char* symbol);

// Launches `function` over `numel` elements (a grid-stride loop: 256 threads a block) on
// `stream` (a CUstream; null: the default stream) of device `index`.
void cuda_launch(void* function, int index, void* stream, int64_t numel, void** params);

}  // namespace loom::compiler
