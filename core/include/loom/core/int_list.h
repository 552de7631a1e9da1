// IntList: a borrowed list of int64 that binds to braces, vectors, arrays, spans and a
// single int, for `int[]` parameters of the typed op API (`t.sum({0, 1})`, `t.sum(1)`);
// OptionalIntList for `int[]?` parameters (also binds std::nullopt).
#pragma once

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <optional>
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
  // One int, as `int[1]` parameters accept (held inline).
  IntList(int64_t value) : single_(value), is_single_(true) {}  // NOLINT
  IntList(int value) : IntList(static_cast<int64_t>(value)) {}  // NOLINT
  IntList(const IntList& o) : values_(o.values_), single_(o.single_), is_single_(o.is_single_) {}
  IntList& operator=(const IntList& o) {
    values_ = o.values_;
    single_ = o.single_;
    is_single_ = o.is_single_;
    return *this;
  }

  std::span<const int64_t> span() const {
    return is_single_ ? std::span<const int64_t>(&single_, 1) : values_;
  }
  operator std::span<const int64_t>() const { return span(); }  // NOLINT
  const int64_t* data() const { return span().data(); }
  size_t size() const { return span().size(); }

 private:
  std::span<const int64_t> values_;
  int64_t single_ = 0;
  bool is_single_ = false;
};

// An `int[]?` parameter: a list, or None (`std::nullopt`, the default).
class OptionalIntList {
 public:
  OptionalIntList() = default;
  OptionalIntList(std::nullopt_t) {}  // NOLINT
  OptionalIntList(std::initializer_list<int64_t> values) : list_(values), has_value_(true) {}
  template <typename T>
  requires std::constructible_from<IntList, const T&> OptionalIntList(const T& values)
      : list_(values), has_value_(true) {}  // NOLINT

  bool has_value() const { return has_value_; }
  explicit operator bool() const { return has_value_; }
  const IntList& operator*() const { return list_; }
  const IntList* operator->() const { return &list_; }

 private:
  IntList list_;
  bool has_value_ = false;
};

}  // namespace loom
