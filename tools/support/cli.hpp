// What relay-plan and relay-bench share on their command lines, so that one option has one range,
// one default and one message in both: the version, numbers with their range, the option values
// both take, how an argument is quoted in a message, byte sizes, and repeated options.
#pragma once

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "relay/topology/parse.hpp"

namespace relay::cli {

#ifndef RELAY_VERSION
#error "RELAY_VERSION is defined by examples/CMakeLists.txt (the project's version)"
#endif
inline constexpr std::string_view version = RELAY_VERSION;

// An inclusive range of a whole-number option, shared by both tools.
struct int_range {
  std::int64_t lo, hi;
};
// The allreduce offload share of the relay route, permille; 0 in the options means the
// link-balanced default (1000*H/N), which is not something to type.
inline constexpr int_range permille_range{1, 999};
// The pipelined route's depth; both tools default to 4 tiles and say so where they print.
inline constexpr int_range tiles_range{2, 64};
inline constexpr int default_tiles = 4;
// Active ranks per group (a power of two; relay/schedule/generate.hpp's spec_error says which)
// and ranks per node; a relay needs one helper, so A < N. relay-bench also runs A = N on the
// direct route (a plain collective without helpers, as the nccl transport runs on 2 GPUs), so its
// node may have 2 ranks.
inline constexpr int_range active_range{2, 16};
inline constexpr int_range ranks_range{3, 64};
inline constexpr int_range bench_ranks_range{2, 64};
// Chunk alignment in elements.
inline constexpr int_range alignment_range{1, std::int64_t{1} << 20};

// An argument as a message shows it: quoted, and cut to its first 40 characters (a 100 KB argument
// is not echoed whole).
inline std::string quoted(std::string_view arg) {
  constexpr std::size_t shown = 40;
  if (arg.size() <= shown) return "'" + std::string(arg) + "'";
  return "'" + std::string(arg.substr(0, shown)) + "...' (" + std::to_string(arg.size()) +
         " characters)";
}

// A whole number in `range`, or the reason it is not one (naming the valid values).
inline std::optional<std::int64_t> parse_int(std::string_view s, int_range range,
                                             std::string& error) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || end != s.data() + s.size() || ec == std::errc::invalid_argument) {
    error = quoted(s) + " is not a whole number";
    return std::nullopt;
  }
  if (ec == std::errc::result_out_of_range || v < range.lo || v > range.hi) {
    error = quoted(s) + " is out of range (" + std::to_string(range.lo) + ".." +
            std::to_string(range.hi) + ")";
    return std::nullopt;
  }
  return v;
}

// The topology text (relay/topology/parse.hpp) at `ranks` ranks, or an error that says what is
// wrong: an unknown name, a fixed machine of another size, or a number outside its range.
inline std::optional<topology> parse_topology_option(std::string_view text, int ranks,
                                                     std::string& error) {
  if (auto t = parse_topology(text, ranks)) return t;
  if (parse_topology(text, 8)) {  // every preset has 8 ranks: a fixed machine of another size
    error = quoted(text) + " is a fixed machine of 8 ranks, not " + std::to_string(ranks);
    return std::nullopt;
  }
  char limits[200];
  std::snprintf(
      limits, sizeof limits,
      "GBPS and MEM finite numbers in %g..%.0f, US, OPUS and CALLUS in 0..%.0f (microseconds)",
      topology_text_limits::min_gbps, topology_text_limits::max_gbps, topology_text_limits::max_us);
  error = quoted(text) + " is not one of ";
  for (const topology* t : topology_presets)
    error += std::string(t->name) + ", ";
  error +=
      "mesh:GBPS[:US[:OPUS[:MEM[:CALLUS]]]] or switched:GBPS[:US[:OPUS[:MEM[:CALLUS]]]] with " +
      std::string(limits);
  return std::nullopt;
}

// 1024-based sizes, written with binary units: 4 KiB, 1.5 MiB, 1 GiB.
inline std::string format_bytes(std::int64_t bytes) {
  constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double x = static_cast<double>(bytes);
  int u = 0;
  while (x >= 1024 && u < 4) {
    x /= 1024;
    ++u;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.4g %s", x, units[u]);
  return buffer;
}

// The options seen so far: a second use of one is an error in both tools (a script that sets an
// option twice has a bug; keeping the last one would hide it).
class seen_options {
 public:
  // The error for `name` given again, or empty the first time.
  std::string add(std::string_view name) {
    for (std::string_view s : seen_)
      if (s == name) return std::string(name) + " is given twice";
    seen_.push_back(name);
    return {};
  }
  bool contains(std::string_view name) const {
    for (std::string_view s : seen_)
      if (s == name) return true;
    return false;
  }

 private:
  std::vector<std::string_view> seen_;
};

}  // namespace relay::cli
