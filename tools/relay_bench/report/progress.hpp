// The progress line on stderr, for sweeps long enough to wonder about.
#pragma once

#include <chrono>
#include <string>

namespace relay::bench {

class progress {
 public:
  // mode -1: a line redrawn in place when stderr is a terminal, nothing otherwise; 0: never;
  // 1: always (a line per update where stderr is no terminal, for logs).
  progress(int mode, int total_steps);
  // Step `done` of the total is starting; `what` names it.
  void update(int done, const std::string& what);
  void finish();

 private:
  bool on_ = false, terminal_ = false;
  int total_ = 0;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace relay::bench
