// How large a plan the plan stream takes (serve/plans.hpp):
//   - any plan: its record must fit a plan slot, plane_geometry::plan_bytes (65,536 bytes by
//     default): a forward of calls in relay's terms takes forward_plan_bytes(plan), 29 bytes and
//     44 + 12 G + 4 R per call of G groups of R ranks in all (1,023 calls of one group of 2 by
//     default); a torchcomms plan 44 bytes and 8 per count (8,186 counts by default:
//     control_counts_held);
//   - a torchcomms plan (publish_control): at most the control limit's counts, RCCLX's
//     NCCL_RELAY_CONTROL_MAX_CALLS where set, else its default, 128, so that a program written
//     against RCCLX meets the limit it was written for. A limit set (the variable, or
//     plane_geometry::control_max_calls) that the slots cannot hold is refused, never lowered: a
//     plan the program takes to be accepted is not refused later. The default alone is lowered
//     to what slots made smaller than 1,068 bytes hold.
// Each rank resolves its own limit when its plane is made; attach_plane then checks that every
// rank's is the same.
#pragma once

#include <cstdint>
#include <string>

#include "relay/bootstrap/environment.hpp"
#include "relay/core/status.hpp"
#include "relay/serve/record.hpp"

namespace relay::serve {

inline constexpr const char* control_max_calls_variable = "NCCL_RELAY_CONTROL_MAX_CALLS";
inline constexpr std::uint32_t default_control_max_calls = 128;  // RCCLX's

// A rank's control limit and where it came from (what an error about it says).
struct control_limit {
  std::uint32_t max_calls = 0;
  std::string source;  // "NCCL_RELAY_CONTROL_MAX_CALLS=8000", "RCCLX's default", ...
};

// This rank's control limit: `asked` where not 0 (plane_geometry::control_max_calls), else the
// variable, else 128 (at most what the slots hold); a limit set is refused where it is not a
// positive count or more than plan slots of `plan_bytes` hold, naming the value and what holds
// it.
inline status resolve_control_limit(std::uint32_t asked, std::uint32_t plan_bytes,
                                    control_limit& out) {
  const std::uint32_t held = control_counts_held(plan_bytes);
  if (asked != 0) {
    out = {asked, "plane_geometry::control_max_calls=" + std::to_string(asked)};
  } else if (const auto text = relay::detail::getenv_first(control_max_calls_variable, nullptr)) {
    int n = 0;
    if (!relay::detail::parse_int(*text, 1, 0x7fffffff, n))
      return {errc::invalid_argument, std::string(control_max_calls_variable) + " = '" + *text +
                                          "' is not a positive count of calls"};
    out = {static_cast<std::uint32_t>(n), std::string(control_max_calls_variable) + "=" + *text};
  } else if (held < default_control_max_calls) {
    out = {held, "what plan slots of " + std::to_string(plan_bytes) + " bytes hold"};
  } else {
    out = {default_control_max_calls, "RCCLX's default"};
  }
  if (out.max_calls > held)
    return {errc::invalid_argument,
            out.source + " allows torchcomms plans of " + std::to_string(out.max_calls) +
                " counts; the control plane's plan slots of " + std::to_string(plan_bytes) +
                " bytes hold " + std::to_string(held) +
                " (set it to at most that, or raise plane_geometry::plan_bytes)"};
  return {};
}

}  // namespace relay::serve
