// How a transport names a peer's process in an error: its pid and, where the process ran other
// ranks of the job too (hosted helpers, docs/hosted-helpers.md), those ranks, which went with it:
// "rank 1 (pid 4242, which also ran ranks 5, 6, 7) exited".
#pragma once

#include <cstdint>
#include <string>

namespace relay {

// " (pid P)" or " (pid P, which also ran rank(s) ...)" for rank q of `ranks`, whose processes'
// ids `pid_of(r)` gives (0: unknown, and then "").
template <class PidOf>
std::string process_of(int q, int ranks, PidOf&& pid_of) {
  const auto pid = static_cast<std::uint64_t>(pid_of(q));
  if (pid == 0) return "";
  std::string others;
  int count = 0;
  for (int r = 0; r < ranks; ++r) {
    if (r == q || static_cast<std::uint64_t>(pid_of(r)) != pid) continue;
    others.append(count++ > 0 ? ", " : "").append(std::to_string(r));
  }
  return " (pid " + std::to_string(pid) +
         (count == 0
              ? ""
              : (count == 1 ? ", which also ran rank " : ", which also ran ranks ") + others) +
         ")";
}

}  // namespace relay
