// The steady clock in microseconds since its epoch: the one clock the processes of a
// multi-process test share (forked from one launcher, they read the same CLOCK_MONOTONIC), so
// that a fault's time written by one rank and another rank's return time compare directly.
#pragma once

#include <chrono>

namespace relay::testing {

inline long long steady_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace relay::testing
