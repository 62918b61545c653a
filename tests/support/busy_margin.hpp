// How long past a deadline the tests let a wait end: the code adds a few milliseconds (its waits
// check their peers every 5 ms), the rest is how long a busy machine takes to run the process
// again (CI runs the multi-process tests on 2 cores beside two spinners, scripts/busy; a few
// hundred milliseconds measured there, docs/multiprocess.md). Every time bound a test checks is a
// timeout plus this margin, so that a loaded machine fails no test and a wait that misses its
// deadline by more still fails one.
#pragma once

#include <chrono>

namespace relay::testing {

inline constexpr std::chrono::milliseconds busy_margin{2000};

}  // namespace relay::testing
