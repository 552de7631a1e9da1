// Shape helpers for kernels: a shape as text ("[2, 3]") for error messages, and the
// broadcast of several shapes (PyTorch's rule: trailing dims align, sizes of 1 stretch).
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "loom/sdk/error.hpp"

namespace loom::sdk {

inline std::string shape_string(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// The shape all of `shapes` broadcast to, or "[op] shapes ... cannot be broadcast".
inline std::vector<int64_t> broadcast_shape(std::span<const std::span<const int64_t>> shapes,
                                            const char* op) {
  size_t ndim = 0;
  for (auto s : shapes) ndim = std::max(ndim, s.size());
  std::vector<int64_t> out(ndim, 1);
  for (auto s : shapes) {
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[ndim - s.size() + i];
      if (s[i] == o || s[i] == 1) continue;
      if (o != 1) {
        throw Error(std::string("[") + op + "] shapes " + shape_string(shapes[0]) + " and " +
                    shape_string(shapes[1]) + " cannot be broadcast");
      }
      o = s[i];
    }
  }
  return out;
}

}  // namespace loom::sdk
