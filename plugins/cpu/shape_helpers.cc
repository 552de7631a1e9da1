// Shape and dtype helpers shared by the CPU kernels (declared in strided_loop.h).
#include <algorithm>

#include "strided_loop.h"

namespace loom::cpu {

std::vector<int64_t> broadcast_shape(std::span<const std::span<const int64_t>> shapes,
                                     const char* op) {
  size_t ndim = 0;
  for (auto s : shapes) ndim = std::max(ndim, s.size());
  std::vector<int64_t> out(ndim, 1);
  for (auto s : shapes) {
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[ndim - s.size() + i];
      if (s[i] == o || s[i] == 1) continue;
      if (o != 1) {
        throw sdk::Error(std::string("[") + op + "] shapes " + shape_string(shapes[0]) + " and " +
                         shape_string(shapes[1]) + " cannot be broadcast");
      }
      o = s[i];
    }
  }
  return out;
}

std::string shape_string(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

const char* dtype_name(LoomDType t) {
  static const char* kNames[] = {"bool",  "uint8",   "int8",     "int16",   "int32",
                                 "int64", "float16", "bfloat16", "float32", "float64",
                                 "qint8", "quint8",  "qint32"};
  return t >= 0 && t < LOOM_DTYPE_COUNT ? kNames[t] : "invalid";
}

}  // namespace loom::cpu
