// How a call's data crosses links (issue 12, "fp8 on the wire"): as it is (native), or quantized
// to fp8 blocks (fp8_block.hpp) where it leaves a rank and dequantized where it arrives.
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

#include "relay/core/dtype.hpp"
#include "relay/core/fp8.hpp"

namespace relay {

enum class wire_format : unsigned char { native, fp8, fp8_e4m3, fp8_e4m3_fnuz };

constexpr std::string_view name(wire_format w) {
  switch (w) {
    case wire_format::native: return "native";
    case wire_format::fp8: return "fp8";
    case wire_format::fp8_e4m3: return "fp8_e4m3";
    case wire_format::fp8_e4m3_fnuz: return "fp8_e4m3_fnuz";
  }
  return "unknown";
}

// Accepts the names above and the short ones (e4m3, e4m3_fnuz, fnuz).
constexpr std::optional<wire_format> parse_wire(std::string_view s) {
  if (s == "native") return wire_format::native;
  if (s == "fp8") return wire_format::fp8;
  if (s == "fp8_e4m3" || s == "e4m3") return wire_format::fp8_e4m3;
  if (s == "fp8_e4m3_fnuz" || s == "e4m3_fnuz" || s == "fnuz") return wire_format::fp8_e4m3_fnuz;
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

}  // namespace relay
