// CUDA C++ for a fused kernel program with `target cuda`: one __global__ function that
// computes every statement per element in registers, over a grid-stride loop. NVRTC
// builds it at run time (cuda_libraries.h); no CUDA header is needed to generate it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "kernel_program.h"

namespace loom::compiler {

inline constexpr const char* kCudaKernelSymbol = "loom_cuda_kernel";
inline constexpr int kCudaMaxDims = 8;

// One shape or stride vector, passed by value (the generated `lk_dims`).
struct CudaDims {
  int64_t v[kCudaMaxDims];
};

// The kernel's parameters, in order: a pointer per input, a pointer per output, the
// kernel's sizes (CudaDims), the strides of each strided input in input order (CudaDims,
// broadcast dimensions 0), the number of dimensions (int32_t) and of elements (int64_t).
// Throws sdk::Error "[compiler] ..." (UNIMPLEMENTED) for a program it cannot generate:
// row operators, or an operator or dtype the C++ generator lacks.
std::string generate_cuda(const Program& program, std::string_view key);

}  // namespace loom::compiler
