// Shape and dtype helpers shared by the CPU kernels (declared in strided_loop.h).
#include "loom/sdk/shape.hpp"
#include "strided_loop.h"

namespace loom::cpu {

std::vector<int64_t> broadcast_shape(std::span<const std::span<const int64_t>> shapes,
                                     const char* op) {
  return sdk::broadcast_shape(shapes, op);
}

std::string shape_string(std::span<const int64_t> shape) {
  return sdk::shape_string(shape);
}

const char* dtype_name(LoomDType t) {
  static const char* kNames[] = {"bool",  "uint8",   "int8",     "int16",     "int32",
                                 "int64", "float16", "bfloat16", "float32",   "float64",
                                 "qint8", "quint8",  "qint32",   "complex64", "complex128"};
  return t >= 0 && t < LOOM_DTYPE_COUNT ? kNames[t] : "invalid";
}

}  // namespace loom::cpu
