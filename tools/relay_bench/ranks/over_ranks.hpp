// What relay-bench's ranks combine across the job, through the bootstrap (as the communicators'
// own exchanges do): an iteration's time as its slowest rank's, and every rank's check of its
// output as one verdict.
#pragma once

#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "relay/bootstrap/exchange.hpp"
#include "relay/hosted/hosting.hpp"
#include "relay/topology/topology.hpp"
#include "sweep/data.hpp"
#include "sweep/options.hpp"

namespace relay::bench {

// --helper-devices: the processes host those helpers (docs/hosted-helpers.md) in the
// communicator made next from the environment (RELAY_HELPER_DEVICES, which, where set without the
// flag, is read as it is).
inline void host_helper_devices(const options& o) {
  if (!o.helper_devices.empty())
    ::setenv("RELAY_HELPER_DEVICES", devices_text(o.helper_devices).c_str(), 1);
}

// --emulate-mesh with -x ipc: every rank's transport paces its pushes at that rate
// (RELAY_IPC_EMULATE_MESH, read by the ipc transports made next, the hosted ranks' included).
inline void emulate_mesh_on_ipc(const options& o) {
  if (o.emulate_mesh_gbps > 0)
    ::setenv("RELAY_IPC_EMULATE_MESH", fmt::format("{}", o.emulate_mesh_gbps).c_str(), 1);
}

// Every rank's device into `t` (topology::device), so that the prediction prices the device
// memories the ranks share: each process's own from the job's exchange, then each hosted rank's
// helper device, in rank order. `processes`: the job's bootstrap, one rank per process; `device`:
// this process's; `hosted`: the hosted ranks' devices; `ranks`: the communicator's.
inline status rank_devices_into(bootstrap& processes, int device, std::span<const int> hosted,
                                int ranks, milliseconds timeout, topology& t) {
  std::vector<int> devices;
  if (status s = exchange(processes, device, devices, timeout, "device"); !s) return s;
  devices.insert(devices.end(), hosted.begin(), hosted.end());
  if (static_cast<int>(devices.size()) != ranks)
    return {errc::invalid_argument, "the job names " + std::to_string(devices.size()) +
                                        " devices for its " + std::to_string(ranks) + " ranks"};
  for (std::size_t r = 0; r < devices.size() && r < t.device.size(); ++r)
    t.device[r] = static_cast<std::uint8_t>(devices[r]);
  return {};
}

// How the job's ranks run, for the run's header: "8 processes, one per rank", or "2 processes
// hosting 6 helpers (8 ranks)".
inline std::string job_of_ranks(int processes, int ranks) {
  return processes == ranks ? fmt::format("{} processes, one per rank", ranks)
                            : fmt::format("{} processes hosting {} helpers ({} ranks)", processes,
                                          ranks - processes, ranks);
}

// Replaces each of `times` by its largest over the ranks (every rank passes as many).
inline status largest_over_ranks(bootstrap& boot, std::vector<double>& times,
                                 milliseconds timeout) {
  std::vector<std::vector<double>> all;
  if (status s = exchange(boot, std::span<const double>(times), all, timeout, "list of times"); !s)
    return s;
  for (const std::vector<double>& theirs : all)
    for (std::size_t i = 0; i < times.size(); ++i)
      times[i] = std::max(times[i], theirs[i]);
  return {};
}

// Every rank's check of its output as one: the wrong elements summed, the largest relative
// error (fp8), and where the lowest rank that erred first did ("rank 3: ...").
inline status combine_checks(bootstrap& boot, const check_result& mine, check_result& total,
                             milliseconds timeout) {
  struct counts {
    std::int64_t wrong;
    double max_relative_error;
  };
  const counts c{mine.wrong, std::isnan(mine.max_relative_error) ? 0.0 : mine.max_relative_error};
  std::vector<with_text<counts>> all;
  if (status s = exchange(boot, c, mine.wrong > 0 ? mine.first : "", all, timeout, "check"); !s)
    return s;
  total = {};
  for (std::size_t r = 0; r < all.size(); ++r) {
    total.wrong += all[r].value.wrong;
    total.max_relative_error = std::max(total.max_relative_error, all[r].value.max_relative_error);
    if (total.first.empty() && !all[r].text.empty())
      total.first = fmt::format("rank {}: {}", r, all[r].text);
  }
  return {};
}

}  // namespace relay::bench
