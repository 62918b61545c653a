#include "report/progress.hpp"

#include <fmt/format.h>
#include <unistd.h>
#include <cstdio>

namespace relay::bench {

progress::progress(int mode, int total_steps)
    : terminal_(isatty(STDERR_FILENO) == 1),
      total_(total_steps),
      start_(std::chrono::steady_clock::now()) {
  on_ = mode == 1 || (mode == -1 && terminal_);
}

void progress::update(int done, const std::string& what) {
  if (!on_) return;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string line =
      fmt::format("relay-bench: {}/{} {} ({:.0f} s)", done + 1, total_, what, elapsed);
  if (terminal_)
    fmt::print(stderr, "\r\033[K{}", line);
  else
    fmt::print(stderr, "{}\n", line);
  std::fflush(stderr);
}

void progress::finish() {
  if (on_ && terminal_) {
    fmt::print(stderr, "\r\033[K");
    std::fflush(stderr);
  }
}

}  // namespace relay::bench
