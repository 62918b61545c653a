// --run: the call executed on relay's CPU executor (relay::host_executor, through the collective
// API) with random data, and every output element checked against the naive reference the tests
// use (relay/check/reference.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "options.hpp"
#include "relay/core/status.hpp"

namespace relay_plan {

struct run_result {
  relay::status status;              // what the collective call returned
  std::int64_t checked = 0;          // output elements compared
  std::int64_t wrong = 0;            // of those, outside the reference's bound
  std::string first_wrong;           // where the first wrong one is, and what it holds
  double seconds = 0;                // wall time of one call, after a warm-up call
  std::int64_t memory_estimate = 0;  // run_memory_bytes(): the peak host memory, bounded
  // On an fp8 wire: the largest |r - S| / |S| over the outputs (wrong: outside the fp8 bound).
  std::optional<double> max_relative_error;
  bool ok() const { return status.ok() && wrong == 0; }
};

// `o` must have passed parse_arguments with --run (so it has counts).
run_result run_on_host(const options& o);

// The host memory run_on_host holds at its peak, in bytes, for options with counts: every active
// rank's buffers, the copy of them that restarts each call, the reference's copies of the inputs
// and of the outputs, and the executor's scratch for the plan (every rank's). A bound, checked
// against the measured peak by tests/tools/relay_plan/run_memory.py.
std::int64_t run_memory_bytes(const options& o);

}  // namespace relay_plan
