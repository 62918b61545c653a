// What one row of the report holds: a size of one configuration, measured out of place and in
// place, for relay and for the baseline.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "relay/core/wire.hpp"
#include "sweep/predict.hpp"

namespace relay::bench {

// How each measurement runs: untimed warm-up, timed iterations (median), one checked run.
struct measure_settings {
  int warmup = 5;
  int iterations = 20;
  bool check = true;
  std::uint64_t seed = 1;
};

struct form_result {
  bool ran = false;
  double seconds = NAN;     // the median of the timed iterations
  std::int64_t wrong = -1;  // elements wrong in the checked run; -1: not checked
  std::string first_wrong;  // where the first one was
  // The wire the run took (relay's plans; the baseline's is native), and on an fp8 wire the
  // checked run's largest relative error against the exact result (NAN: not measured).
  wire_format wire = wire_format::native;
  double max_relative_error = NAN;
};

struct form_pair {
  form_result relay, base;
};

// Which baseline a configuration is compared with.
enum class base_source : unsigned char { none, direct, nccl };

struct row {
  call_shape shape{};
  std::int64_t n = 0;      // per-group count
  std::int64_t bytes = 0;  // nccl-tests' size
  std::int64_t count = 0;  // nccl-tests' count
  route chosen = route::relay;
  double predicted = NAN;         // seconds
  double direct_predicted = NAN;  // seconds: the direct route's, for the predicted speedup
  int sets = 1;                   // buffer sets rotated through
  std::int64_t host_memory = 0;   // the CPU executor's estimated peak (row_runner::host_memory)
  base_source base = base_source::none;
  form_pair out_of_place, in_place;
};

}  // namespace relay::bench
