// A job a test forks itself (scenarios that kill, stall or misconfigure a process): relay-run's
// variables set in each child, one process per rank, each writing what it saw into one pipe.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "relay/core/status.hpp"
#include "support/dev_shm.hpp"

namespace relay::testing {

// What relay-run sets for one rank (docs/multiprocess.md), for a child of a forked job.
inline void set_rank_environment(int rank, int size, int port, std::chrono::milliseconds timeout) {
  ::setenv("RELAY_RANK", std::to_string(rank).c_str(), 1);
  ::setenv("RELAY_WORLD_SIZE", std::to_string(size).c_str(), 1);
  ::setenv("RELAY_STORE_ADDR", "127.0.0.1", 1);
  ::setenv("RELAY_STORE_PORT", std::to_string(port).c_str(), 1);
  ::setenv("RELAY_TIMEOUT", std::to_string(timeout.count() / 1000.0).c_str(), 1);
}

// The outcome of a forked job: each rank's exit status (waitpid's) and its reports in order.
template <class Report>
struct forked_job {
  std::vector<pid_t> pids;
  std::vector<int> statuses;
  std::vector<std::vector<Report>> reports;
  bool hung = false;  // a process outlived `deadline` and was killed
};

// Forks `ranks` processes, child r running run(r, fd) (it must not return: std::_Exit), which
// writes Reports (each one write(), smaller than PIPE_BUF, with its `rank`) to `fd`; waits for
// them all, SIGKILLing every one left at `deadline`.
template <class Report, class Run>
status fork_job(int ranks, Run&& run, std::chrono::steady_clock::time_point deadline,
                forked_job<Report>& out) {
  int pipe_fd[2];
  if (::pipe(pipe_fd) != 0)
    return {errc::system_error, std::string("pipe: ") + std::strerror(errno)};
  out = {};
  for (int r = 0; r < ranks; ++r) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(pipe_fd[0]);
      run(r, pipe_fd[1]);
      std::_Exit(111);
    }
    out.pids.push_back(pid);
  }
  ::close(pipe_fd[1]);
  out.statuses.assign(out.pids.size(), -1);
  std::size_t alive = out.pids.size();
  while (alive > 0) {
    int st = 0;
    const pid_t p = ::waitpid(-1, &st, WNOHANG);
    if (p > 0) {
      for (std::size_t r = 0; r < out.pids.size(); ++r)
        if (out.pids[r] == p) {
          out.statuses[r] = st;
          --alive;
        }
      continue;
    }
    if (std::chrono::steady_clock::now() > deadline && !out.hung) {
      out.hung = true;
      for (pid_t q : out.pids)
        ::kill(q, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  out.reports.assign(static_cast<std::size_t>(ranks), {});
  Report x;
  while (::read(pipe_fd[0], &x, sizeof x) == static_cast<ssize_t>(sizeof x))
    if (x.rank >= 0 && x.rank < ranks) out.reports[static_cast<std::size_t>(x.rank)].push_back(x);
  ::close(pipe_fd[0]);
  return {};
}

// Runs every scenario of `all` (each with a `name`), or the one named `only`, through
// `run(scenario)` (what failed, empty when it held), and checks that none left anything in
// /dev/shm. Returns the program's exit status.
template <class Scenario, std::size_t N, class Run>
int run_scenarios(const Scenario (&all)[N], const std::string& only, Run&& run) {
  const std::set<std::string> before = relay_names_in_dev_shm();
  int failed = 0, ran = 0;
  for (const Scenario& s : all) {
    if (!only.empty() && only != s.name) continue;
    ++ran;
    const auto start = std::chrono::steady_clock::now();
    const std::vector<std::string> f = run(s);
    for (const std::string& x : f)
      std::fprintf(stderr, "FAILED: %s\n", x.c_str());
    failed += static_cast<int>(f.size());
    for (const std::string& n : relay_names_in_dev_shm())
      if (!before.count(n)) {
        std::fprintf(stderr, "FAILED: %s: /dev/shm/%s was left behind\n", s.name, n.c_str());
        ++failed;
      }
    std::printf("%-18s %s (%.1f s)\n", s.name, f.empty() ? "as promised" : "FAILED",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  if (ran == 0) {
    std::fprintf(stderr, "no scenario named %s\n", only.c_str());
    return 2;
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace relay::testing
