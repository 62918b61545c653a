// A topology from its text form, as command-line tools and calibration write it:
//
//   a preset name            mi300x, mi350x, h200-nvswitch, mi250x (see topology.hpp)
//   mesh:GBPS[:US[:OPUS[:MEM[:CALLUS]]]]  a full mesh, GBPS GB/s per link and direction, US
//                            microseconds per step (default 10), OPUS microseconds per operation
//                            (default 0), MEM GB/s of a device's memory, read + written (default
//                            4300), CALLUS microseconds a call costs once (default 0)
//   switched:GBPS[:US[:OPUS[:MEM[:CALLUS]]]] a non-blocking switch, GBPS GB/s per port and
//                            direction
//
// `gpu_calibrate` (examples/) prints the line for the machine it measured; relay-bench and
// relay-plan take it with --topology.
#pragma once

#include <charconv>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <system_error>

#include "relay/topology/topology.hpp"

namespace relay {

// The numbers of the mesh and switched forms must be finite and within these (a link from 1 MB/s
// to 1 PB/s, latencies up to a second), so that no time the cost model prints overflows or turns
// into a 300-digit number.
struct topology_text_limits {
  static constexpr double min_gbps = 1e-3, max_gbps = 1e6;
  static constexpr double max_us = 1e6;
};

namespace detail {

inline std::optional<double> parse_double(std::string_view s) {
  double v = 0;
  const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || error != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace detail

// `ranks` sizes a mesh, a switch or a resizable preset; nullopt when the text is none of the
// forms above or a number is out of range (topology_text_limits; NaN and infinities are out).
inline std::optional<topology> parse_topology(std::string_view text, int ranks) {
  if (auto preset = preset_topology(text, ranks)) return preset;
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  const std::string_view kind = text.substr(0, colon);
  if (kind != "mesh" && kind != "switched") return std::nullopt;
  // Up to five numbers after the kind; the latencies default to the presets' 10 us and 0, the
  // memory to the topology's default, the call's latency to none.
  double values[5] = {0, 10, 0, topology{}.memory_bandwidth / 1e9, 0};
  std::string_view rest = text.substr(colon + 1);
  for (int i = 0;; ++i) {
    if (i == 5) return std::nullopt;
    const std::size_t next = rest.find(':');
    const auto v = detail::parse_double(rest.substr(0, next));
    if (!v) return std::nullopt;
    values[i] = *v;
    if (next == std::string_view::npos) break;
    rest = rest.substr(next + 1);
  }
  using limits = topology_text_limits;
  // Written so that NaN fails every comparison and is refused.
  for (const double gbps : {values[0], values[3]})
    if (!(gbps >= limits::min_gbps && gbps <= limits::max_gbps)) return std::nullopt;
  for (const double us : {values[1], values[2], values[4]})
    if (!(us >= 0 && us <= limits::max_us)) return std::nullopt;
  const double bandwidth = values[0] * 1e9, step = values[1] * 1e-6, op = values[2] * 1e-6;
  topology t = kind == "mesh" ? mesh(ranks, bandwidth, step, op, "mesh")
                              : switched(ranks, bandwidth, step, op, "switched");
  t.memory_bandwidth = values[3] * 1e9;
  t.call_latency = values[4] * 1e-6;
  return t;
}

}  // namespace relay
