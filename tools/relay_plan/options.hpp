// relay-plan's command line. The flags are a contract: scripts call the printer, so a flag's
// name, its values and the exit codes stay as they are once released.
//
// Parsing is table driven (options.cpp): one row per flag gives its name, its value's shape,
// its help line and how it sets `options`, so the usage text and the parser cannot drift apart
// and a new flag is one row.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "relay/core/dtype.hpp"
#include "relay/core/wire.hpp"
#include "relay/hosted/hosting.hpp"
#include "relay/schedule/evaluate.hpp"
#include "relay/schedule/schedule.hpp"

namespace relay_plan {

// Exit codes: 0 success (and --help), 1 a check failed (--verify, or --run found a wrong element
// or an error), 2 a usage error.
inline constexpr int exit_ok = 0;
inline constexpr int exit_check_failed = 1;
inline constexpr int exit_usage = 2;

struct options {
  relay::schedule_spec spec{};
  std::string topology = "mi300x";
  relay::dtype type = relay::dtype::float32;
  // Per-group counts: empty when none was given (the output stays symbolic); one value from
  // --count (every group); one per group from --counts.
  std::vector<std::int64_t> counts;
  bool counts_per_group = false;
  std::int64_t alignment = relay::default_alignment;  // elements
  relay::reduce_op op = relay::reduce_op::sum;
  bool in_place = false;  // NCCL's in-place layout, for the plan and --run
  // --helper-devices: the helpers hosted by the --active processes (docs/hosted-helpers.md), one
  // device per helper rank; they are priced as any helpers (the links are the same).
  std::vector<int> helper_devices;
  // --wire: how data crosses links (relay::wire_format); --wire-threshold: bytes of the largest
  // group count from which fp8 is taken (-1: the cost model's threshold on --topology).
  relay::wire_format wire = relay::wire_format::native;
  std::int64_t wire_threshold = -1;
  bool run = false;  // execute on the host executor and check against a naive reference
  bool json = false;
  bool verify = false;
  bool full = false;  // list every operation of every group, not just group 0's
  bool help = false;
  bool version = false;
};

// Which process runs which rank with --helper-devices (the --active processes host the rest).
relay::hosting hosting_of(const options& o);

// The per-group counts the options ask for (--count repeated over the groups), or empty.
std::vector<std::int64_t> group_counts(const options& o);

struct parse_result {
  options opts;
  std::string error;  // empty: parsed and valid
};

// Parses the arguments after the program name and validates them (every flag's value, the
// required flags, that A/N/mode/route have a schedule, that the topology fits N, that --counts has
// one count per group, that --in-place has an in-place form and that --run has counts and fits
// in memory). --help short-circuits everything else.
parse_result parse_arguments(std::span<const std::string_view> args);

// The --help text.
std::string usage();

}  // namespace relay_plan
