// How a call's data crosses links (docs/schedules.md, "fp8 on the wire"): as it is (native), or
// quantized to fp8 blocks (fp8_block.hpp) where it leaves a rank and dequantized where it arrives.
//
//   native          every byte as the caller's dtype (and fp32 partial sums) holds it
//   fp8             the machine's fp8 encoding (topology::fp8: e4m3_fnuz on mi300x, OCP e4m3 on
//                   mi350x and h200): what a caller writes who does not care which
//   fp8_e4m3        OCP e4m3 (NVIDIA Hopper/Blackwell, AMD gfx950)
//   fp8_e4m3_fnuz   e4m3 fnuz (AMD gfx942, MI300X)
//
// fp8 takes floating data only (float32, float16, bfloat16): integers would lose their
// exactness, and float64 would keep 4 of its 53 significant bits, which no caller asking for
// float64 wants.
#pragma once

#include <optional>
#include <string_view>
#include <type_traits>

#include "relay/core/dtype.hpp"
#include "relay/core/fp8.hpp"
#include "relay/core/half.hpp"
#include "relay/core/names.hpp"

namespace relay {

enum class wire_format : unsigned char { native, fp8, fp8_e4m3, fp8_e4m3_fnuz };

namespace detail {
inline constexpr name_table<wire_format, 4> wire_names{
    {"native", "fp8", "fp8_e4m3", "fp8_e4m3_fnuz"}, "unknown"};
}  // namespace detail

constexpr std::string_view name(wire_format w) {
  return detail::wire_names(w);
}

// Accepts the names above and the short ones (e4m3, e4m3_fnuz, fnuz).
constexpr std::optional<wire_format> parse_wire(std::string_view s) {
  if (auto w = detail::wire_names.parse(s)) return w;
  if (s == "e4m3") return wire_format::fp8_e4m3;
  if (s == "e4m3_fnuz" || s == "fnuz") return wire_format::fp8_e4m3_fnuz;
  return std::nullopt;
}

constexpr bool is_fp8(wire_format w) {
  return w == wire_format::fp8 || w == wire_format::fp8_e4m3 || w == wire_format::fp8_e4m3_fnuz;
}

// The encoding of a concrete fp8 wire (fp8_e4m3 or fp8_e4m3_fnuz).
constexpr fp8_format fp8_format_of(wire_format w) {
  return w == wire_format::fp8_e4m3_fnuz ? fp8_format::e4m3_fnuz : fp8_format::e4m3;
}
constexpr wire_format wire_of(fp8_format f) {
  return f == fp8_format::e4m3_fnuz ? wire_format::fp8_e4m3_fnuz : wire_format::fp8_e4m3;
}

// The dtypes an fp8 wire takes.
constexpr bool fp8_wire_dtype(dtype t) {
  return t == dtype::float32 || t == dtype::float16 || t == dtype::bfloat16;
}
// The same as element types, for code generic in T (visit_dtype's lambdas, kernels).
template <class T>
inline constexpr bool fp8_wire_type =
    std::is_same_v<T, float> || std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>;

}  // namespace relay
