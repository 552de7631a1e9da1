// IntList: a borrowed list of int64 that binds to braces, vectors, arrays and spans, for
// `int[]` parameters of the typed op API (`t.sum_to({0, 1})`).
#pragma once

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

namespace loom {

class IntList {
 public:
  IntList() = default;
  // The braces' array lives until the end of the full expression: fine for a call.
  IntList(std::initializer_list<int64_t> values) : values_(values.begin(), values.size()) {}
  IntList(const std::vector<int64_t>& values) : values_(values) {}  // NOLINT
  IntList(std::span<const int64_t> values) : values_(values) {}     // NOLINT
  // Any contiguous container of int64 (DimVector, std::array).
  template <typename C>
  requires requires(const C& c) {
    { c.data() } -> std::convertible_to<const int64_t*>;
    { c.size() } -> std::convertible_to<size_t>;
  }
  IntList(const C& values) : values_(values.data(), values.size()) {}  // NOLINT

  std::span<const int64_t> span() const { return values_; }
  operator std::span<const int64_t>() const { return values_; }  // NOLINT
  const int64_t* data() const { return values_.data(); }
  size_t size() const { return values_.size(); }

 private:
  std::span<const int64_t> values_;
};

}  // namespace loom
