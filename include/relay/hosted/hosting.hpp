// Which process runs which rank of a communicator with hosted helpers (docs/hosted-helpers.md):
// a job of A processes and a list of H helper devices make a communicator of N = A + H ranks.
// Rank p < A is process p; rank A + i is the helper on devices[i], run by one of the processes:
// the helpers are dealt in blocks, in order, the first H mod A processes taking one more. The rule
// is a pure function of (A, devices), so every process derives the same map from the same list,
// which set-up agrees on first (agree_on_hosting: a list that differs anywhere fails everywhere).
//
//   RELAY_HELPER_DEVICES=2,3,4,5,6,7   with 2 processes: ranks 2, 3, 4 run in process 0 (devices
//                                      2, 3, 4), ranks 5, 6, 7 in process 1
#pragma once

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "relay/bootstrap/exchange.hpp"
#include "relay/core/status.hpp"

namespace relay {

// The most helpers a list may name: more ranks than any transport serves.
inline constexpr int max_helper_devices = 1024;

struct hosting {
  int processes = 1;         // A: the job's processes, ranks 0..A-1
  std::vector<int> devices;  // one per hosted rank, rank A + i on devices[i]

  int helpers() const { return static_cast<int>(devices.size()); }
  int ranks() const { return processes + helpers(); }
  // The process that runs `rank`.
  int host_of(int rank) const {
    if (rank < processes) return rank;
    const int i = rank - processes, q = helpers() / processes, r = helpers() % processes;
    const int big = r * (q + 1);  // the helpers of the processes that take one more
    return i < big ? i / (q + 1) : r + (i - big) / q;
  }
  // The ranks process `p` runs: p itself, then the ranks it hosts in order.
  std::vector<int> ranks_of(int p) const {
    std::vector<int> out{p};
    for (int r = processes; r < ranks(); ++r)
      if (host_of(r) == p) out.push_back(r);
    return out;
  }
  // The device of hosted rank `rank` (>= processes).
  int device_of(int rank) const { return devices[static_cast<std::size_t>(rank - processes)]; }
  bool operator==(const hosting&) const = default;
};

// "2,3,4" ("none" for an empty list).
inline std::string devices_text(std::span<const int> devices) {
  if (devices.empty()) return "none";
  std::string s;
  for (std::size_t i = 0; i < devices.size(); ++i)
    s.append(i ? "," : "").append(std::to_string(devices[i]));
  return s;
}

// "rank 5 (hosted by rank 1)", or "rank 1" for a process's own rank: how errors name a rank.
inline std::string rank_name(const hosting& h, int rank) {
  const std::string r = "rank " + std::to_string(rank);
  return rank < h.processes ? r : r + " (hosted by rank " + std::to_string(h.host_of(rank)) + ")";
}

// A list of devices as "2,3,4,5,6,7" (device numbers >= 0, repeats allowed: on one GPU every
// helper may be device 0) into `out`; an empty text is no helper. `what` names the list in errors
// ("RELAY_HELPER_DEVICES = '2,x': ..."; empty: the text alone).
inline status parse_helper_devices(std::string_view text, std::vector<int>& out,
                                   std::string_view what = "RELAY_HELPER_DEVICES") {
  out.clear();
  if (text.empty()) return {};
  auto refuse = [&](const std::string& why) {
    out.clear();
    return status{errc::invalid_argument, (what.empty() ? "" : std::string(what) + " = ") + "'" +
                                              std::string(text) + "': " + why +
                                              " (a comma-separated list of device numbers)"};
  };
  for (std::size_t at = 0; at <= text.size();) {
    const std::size_t end = std::min(text.find(',', at), text.size());
    const std::string_view item = text.substr(at, end - at);
    int d = -1;
    const auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), d);
    if (item.empty() || ec != std::errc{} || p != item.data() + item.size() || d < 0 ||
        d > (1 << 16))
      return refuse("'" + std::string(item) + "' is not a device number");
    out.push_back(d);
    if (out.size() > static_cast<std::size_t>(max_helper_devices))
      return refuse("more than " + std::to_string(max_helper_devices) + " helpers");
    at = end + 1;
  }
  return {};
}

// RELAY_HELPER_DEVICES into `out` where it is set (else `out` stays empty: no helper).
inline status helper_devices_from_environment(std::vector<int>& out) {
  out.clear();
  const char* v = std::getenv("RELAY_HELPER_DEVICES");
  return v == nullptr ? status{} : parse_helper_devices(v, out);
}

// Collective over the job's processes: every process's helper devices (`mine`; or `refused`, its
// own reason why it has none to give: a list that did not parse) compared with rank 0's, into
// `out`. The same outcome on every process: ok with the same hosting, or an error naming the
// process whose list differs (errc::mismatch) or was refused (its own error there,
// errc::peer_error naming it elsewhere).
inline status agree_on_hosting(bootstrap& processes, std::span<const int> mine,
                               const status& refused, std::chrono::milliseconds timeout,
                               hosting& out) {
  const std::int32_t code = static_cast<std::int32_t>(refused.code());
  const std::string text = refused ? devices_text(mine) : refused.message();
  std::vector<with_text<std::int32_t>> all;
  if (status s = exchange(processes, code, text, all, timeout, "helper devices"); !s) return s;
  for (std::size_t q = 0; q < all.size(); ++q)
    if (all[q].value != 0) {
      if (static_cast<int>(q) == processes.rank())
        return {refused.code(), refused.message(), processes.rank()};
      return {errc::peer_error,
              "rank " + std::to_string(q) + " could not read its helper devices: " + all[q].text,
              static_cast<int>(q)};
    }
  for (std::size_t q = 1; q < all.size(); ++q)
    if (all[q].text != all[0].text)
      return {errc::mismatch,
              "rank " + std::to_string(q) + " asked for helper devices " + all[q].text +
                  " but rank 0 for " + all[0].text +
                  "; every process passes the same (RELAY_HELPER_DEVICES, "
                  "relay_comm_config::helper_devices, helper_devices=)",
              static_cast<int>(q)};
  out.processes = processes.size();
  out.devices.assign(mine.begin(), mine.end());
  if (out.ranks() > max_helper_devices)
    return {errc::invalid_argument, "a communicator of " + std::to_string(out.ranks()) +
                                        " ranks is larger than relay serves"};
  return {};
}

}  // namespace relay
