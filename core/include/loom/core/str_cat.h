// loom::str_cat: absl::StrCat that also accepts std::string_view.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>

#include "absl/strings/str_cat.h"

namespace loom {

namespace detail {
// Debian's Abseil has an absl::string_view distinct from std::string_view, so StrCat
// does not take std::string_view; this adapts it.
template <typename T>
decltype(auto) str_piece(const T& v) {
  if constexpr (std::is_same_v<T, std::string_view>) {
    return absl::string_view(v.data(), v.size());
  } else {
    return (v);
  }
}
}  // namespace detail

// absl::StrCat that also accepts std::string_view.
template <typename... Args>
std::string str_cat(const Args&... args) {
  return absl::StrCat(detail::str_piece(args)...);
}

}  // namespace loom
