// The names of an enum's values as one table, in declaration order: name() reads it and parsing
// searches it, so each enumerator's name is written once and the two cannot disagree. A switch
// per enum would repeat the same case-per-value shape for every enum and still need its parse
// written separately. The enum must count from 0 without gaps (every enum here does).
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace relay {

template <class E, std::size_t N>
struct name_table {
  std::array<std::string_view, N> names;
  std::string_view unknown = "?";  // for a value outside the enum (a corrupt or foreign byte)

  constexpr std::string_view operator()(E e) const {
    const auto i = static_cast<std::size_t>(e);
    return i < N ? names[i] : unknown;
  }
  // The value named `s` exactly, or none.
  constexpr std::optional<E> parse(std::string_view s) const {
    for (std::size_t i = 0; i < N; ++i)
      if (names[i] == s) return static_cast<E>(i);
    return std::nullopt;
  }
};

}  // namespace relay
