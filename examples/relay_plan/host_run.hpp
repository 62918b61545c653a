// --run: the call executed on relay's CPU executor (relay::host_executor, through the collective
// API) with random data, and every output element checked against the naive reference the tests
// use (tests/support/reference.hpp).
#pragma once

#include <cstdint>
#include <string>

#include "options.hpp"
#include "relay/core/status.hpp"

namespace relay_plan {

struct run_result {
  relay::status status;      // what the collective call returned
  std::int64_t checked = 0;  // output elements compared
  std::int64_t wrong = 0;    // of those, outside the reference's bound
  std::string first_wrong;   // where the first wrong one is, and what it holds
  double seconds = 0;        // wall time of one call, after a warm-up call
  bool ok() const { return status.ok() && wrong == 0; }
};

// `o` must have passed parse_arguments with --run (so it has counts).
run_result run_on_host(const options& o);

}  // namespace relay_plan
