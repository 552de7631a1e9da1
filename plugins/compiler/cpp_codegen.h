// C++ source for a fused kernel program: one function, loom_kernel_v1, that computes every
// statement per element in registers, vectorised (Note [Vectorised kernel loops]) and cut
// into pieces over OpenMP's threads, loom's CPU pool.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernel_program.h"

namespace loom::compiler {

// What the generated function receives (its C twin is written into every source).
struct KernelArgs {
  const void* const* inputs;
  const int64_t* const* strides;  // per input, broadcast to the kernel's shape (strided only)
  void* const* outputs;
  const int64_t* sizes;  // the kernel's shape
  int64_t numel;
  int32_t ndim;
  int32_t threads;
};
using KernelFn = int (*)(const KernelArgs*);
inline constexpr const char* kKernelSymbol = "loom_kernel_v1";
inline constexpr const char* kKernelKeySymbol = "loom_kernel_key";

// The source of `program`; `key` is written into it (kKernelKeySymbol) so that a loaded
// library can be matched with the cache entry it came from. Throws sdk::Error
// "[compiler] ..." (UNIMPLEMENTED) for an operator or dtype it cannot generate.
std::string generate_cpp(const Program& program, std::string_view key);

// Whether a program holds a row operator (Note [Row kernels]).
bool is_row_program(const Program& program);
// Whether `op` is a row reduction of a row kernel (sum, mean, amax over the last
// dimension: one value per row; Note [Row kernels]).
bool reduces_to_row(const std::string& op);
// Per slot of a row kernel's program: whether it holds one value per row (a reduction,
// or an elementwise statement of such values alone). All false for other programs.
std::vector<bool> row_values(const Program& program);

// The operators a program may use, with the dtypes they compute in: "loom::sin:f" (floats)
// or "loom::add.Tensor:fib" (floats, integers and bool); "r" marks a row op (Note [Row
// kernels]): softmax, log_softmax, layer_norm, sum, mean, amax over the last dimension.
std::vector<std::string> fusible_ops();

}  // namespace loom::compiler
