// LOOM_OPTION: a field of a layer's options struct with a chainable setter, as libtorch's
// TORCH_ARG: `Conv2dOptions(1, 32, 3).padding(1).bias(false)`.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

#include "loom/core/error.h"

#define LOOM_OPTION(Type, name) \
 public:                        \
  auto& name(Type value) {      \
    name##_ = std::move(value); \
    return *this;               \
  }                             \
  const Type& name() const {    \
    return name##_;             \
  }                             \
                                \
 private:                       \
  Type name##_

namespace loom::nn {

// N sizes given as one number for all (3) or one each ({3, 5}), as libtorch's
// ExpandingArray.
template <size_t N>
class ExpandingArray {
 public:
  ExpandingArray(int64_t v) { values_.fill(v); }         // NOLINT: implicit by design
  ExpandingArray(std::initializer_list<int64_t> list) {  // NOLINT: implicit by design
    LOOM_CHECK(list.size() == N, "nn", "expected ", N, " sizes, found ", list.size());
    std::copy(list.begin(), list.end(), values_.begin());
  }
  int64_t operator[](size_t i) const { return values_[i]; }
  const std::array<int64_t, N>& values() const { return values_; }
  std::string to_string() const {
    std::string s = "(";
    for (size_t i = 0; i < N; ++i) s += (i ? ", " : "") + std::to_string(values_[i]);
    return s + ")";
  }

 private:
  std::array<int64_t, N> values_{};
};

}  // namespace loom::nn
