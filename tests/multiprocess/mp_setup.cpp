// The shm transport's set-up across processes: a job SIGKILLed at any point of its set-up, or
// after it, leaves nothing in /dev/shm, and a normal job's segment is mapped from no file at all.
//
//   relay_mp_setup jobs RELAY_RUN RUNS SEED   the driver: one normal job of 4 ranks, then RUNS
//                                             jobs whose every rank is SIGKILLed at one random
//                                             instant; after each, no new /dev/shm/relay* entry
//                                             whose owner is gone
//   relay_mp_setup rank normal                one rank of a normal job (under relay-run)
//   relay_mp_setup rank at_start NS           one rank, killed at CLOCK_MONOTONIC instant NS
//   relay_mp_setup rank after_bootstrap US    one rank, killed US microseconds after rank 0 has
//                                             its bootstrap, so just before or during the
//                                             segment's creation and hand-over
//
// The kill instants: a third of the jobs at a uniform point from their start to about the end of
// a normal job, two thirds log-uniformly 0.2..10 ms after the bootstrap, where the segment is
// created and handed over (dense there: a named segment's window was about 1..3 ms after it on a
// loaded 2-core machine; the later kills land after the set-up).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "multiprocess/mp_support.hpp"
#include "support/dev_shm.hpp"

using namespace relay;

namespace {

std::int64_t monotonic_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return std::int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

// The kernel SIGKILLs this process at CLOCK_MONOTONIC instant `ns` (at once if it has passed):
// every rank of a job armed with one instant dies at it, wherever its set-up is.
void arm_kill(std::int64_t ns) {
  sigevent ev{};
  ev.sigev_notify = SIGEV_SIGNAL;
  ev.sigev_signo = SIGKILL;
  timer_t timer{};
  itimerspec when{};
  when.it_value.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
  when.it_value.tv_nsec = static_cast<long>(ns % 1'000'000'000);
  if (::timer_create(CLOCK_MONOTONIC, &ev, &timer) != 0 ||
      ::timer_settime(timer, TIMER_ABSTIME, &when, nullptr) != 0) {
    std::perror("arming the kill timer");
    std::exit(2);
  }
}

// Set-up has ended (well or not): wait for the kill. A rank still alive after 10 s says so.
[[noreturn]] void wait_for_kill() {
  std::this_thread::sleep_for(std::chrono::seconds(10));
  std::fprintf(stderr, "FAILED: this rank was not killed\n");
  std::exit(3);
}

int normal_rank() {
  auto comm = testing::connect_or_exit();
  const int me = comm->rank();
  if (const std::string m = testing::dev_shm_mappings(); !m.empty()) {
    std::fprintf(stderr, "FAILED: the segment is a file in /dev/shm:\n%s", m.c_str());
    return 1;
  }
  // One allreduce of the pairs {r, r^1}: rank r contributes 1000*r + i, so the pair sums to
  // 1000*(r + (r^1)) + 2i (worked out by hand); the output is poisoned first.
  group_list groups;
  for (int r = 0; r < comm->size(); r += 2)
    groups.push_back({r, r + 1});
  const std::vector<std::int64_t> counts(groups.size(), 5);
  std::vector<std::int32_t> in(5), out(5, 0x7f7f7f7f);
  for (std::int32_t i = 0; i < 5; ++i)
    in[static_cast<std::size_t>(i)] = 1000 * me + i;
  const status s = allreduce(*comm, groups, {in.data(), 20}, {out.data(), 20}, counts, dtype::int32,
                             reduce_op::sum);
  if (!s) {
    std::fprintf(stderr, "FAILED: the call: %s\n", s.to_string().c_str());
    return 1;
  }
  for (std::int32_t i = 0; i < 5; ++i)
    if (out[static_cast<std::size_t>(i)] != 1000 * (me + (me ^ 1)) + 2 * i) {
      std::fprintf(stderr, "FAILED: element %d is %d\n", i, out[static_cast<std::size_t>(i)]);
      return 1;
    }
  return 0;
}

// Every wait below has the environment's timeout; the kill comes first or soon after.
[[noreturn]] void killed_rank(bool at_start, std::int64_t when) {
  if (at_start) arm_kill(when);
  environment env;
  status s = environment_from_process(env);
  std::unique_ptr<bootstrap> boot;
  if (s) s = make_tcp_bootstrap(env, boot);
  if (!at_start) {
    if (!s) {
      std::fprintf(stderr, "FAILED: the bootstrap: %s\n", s.to_string().c_str());
      std::exit(2);
    }
    // Rank 0 fixes the instant, just before it creates the segment; everyone arms it.
    const std::int64_t instant = monotonic_ns() + when * 1000;
    std::vector<std::vector<std::byte>> all;
    if (s = boot->all_gather(std::as_bytes(std::span(&instant, 1)), all, env.timeout); !s) {
      std::fprintf(stderr, "FAILED: sharing the instant: %s\n", s.to_string().c_str());
      std::exit(2);
    }
    std::int64_t shared = 0;
    std::memcpy(&shared, all[0].data(), sizeof shared);
    arm_kill(shared);
  }
  std::unique_ptr<transport> link;
  if (s) s = shm_factory()(*boot, env, link);
  wait_for_kill();
}

// An entry is left behind when its creator is gone: "relay-<pid>-..." with no such process, or
// a name that does not say who made it. (Other jobs on this machine may hold live entries.)
bool owner_gone(const std::string& name) {
  long pid = 0;
  if (std::sscanf(name.c_str(), "relay-%ld-", &pid) != 1 || pid <= 0) return true;
  return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

struct job_result {
  int status = -1;  // relay-run's exit status; -1: it had to be stopped
  double seconds = 0;
  std::string output;
};

// Runs `relay-run -n 4 --timeout 20 -- this rank ARGS...`, output captured, within 30 s.
job_result run_job(const std::string& relay_run, const std::vector<std::string>& rank_args) {
  std::vector<std::string> args = {
      relay_run,   "-n", "4",
      "--timeout", "20", "--grace",
      "1",         "--", std::filesystem::read_symlink("/proc/self/exe").string(),
      "rank"};
  args.insert(args.end(), rank_args.begin(), rank_args.end());
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  FILE* log = std::tmpfile();
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(::fileno(log), 1);
    ::dup2(::fileno(log), 2);
    ::execv(argv[0], argv.data());
    std::perror("exec relay-run");
    ::_exit(127);
  }
  job_result r;
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) {
      r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(30)) {
      ::kill(pid, SIGTERM);  // relay-run stops its ranks
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::rewind(log);
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, log)) > 0;)
    r.output.append(buf, n);
  std::fclose(log);
  return r;
}

int drive(const std::string& relay_run, int runs, std::uint64_t seed) {
  ::setenv("RELAY_TIMEOUT", "5", 1);
  ::setenv("RELAY_SHM_BYTES", "1M", 1);
  int failures = 0;
  auto fail = [&](const std::string& what, const job_result& j) {
    std::fprintf(stderr, "FAILED (seed %llu): %s\n%s", static_cast<unsigned long long>(seed),
                 what.c_str(), j.output.c_str());
    ++failures;
  };
  // Entries left by this job: reported, then removed so that the machine stays clean.
  const std::set<std::string> before = testing::relay_names_in_dev_shm();
  auto left_behind = [&]() {
    std::string left;
    for (const std::string& n : testing::relay_names_in_dev_shm())
      if (!before.count(n) && owner_gone(n)) {
        left += " /dev/shm/" + n;
        std::filesystem::remove("/dev/shm/" + n);
      }
    return left;
  };

  const job_result normal = run_job(relay_run, {"normal"});
  if (normal.status != 0) fail("the normal job exited " + std::to_string(normal.status), normal);
  if (const std::string left = left_behind(); !left.empty())
    fail("the normal job left" + left, normal);
  // A normal job's time from start to exit: about its set-up, where the kills land.
  const double span = std::max(0.02, normal.seconds);

  std::mt19937_64 rng(seed);
  int leaking_runs = 0;
  for (int run = 0; run < runs; ++run) {
    std::vector<std::string> plan;
    if (run % 3 != 2) {
      const double us = 200 * std::pow(50.0, std::uniform_real_distribution<>(0, 1)(rng));
      plan = {"after_bootstrap", std::to_string(static_cast<std::int64_t>(us))};
    } else {
      const double s = std::uniform_real_distribution<>(0, span)(rng);
      plan = {"at_start", std::to_string(monotonic_ns() + static_cast<std::int64_t>(s * 1e9))};
    }
    const job_result j = run_job(relay_run, plan);
    const std::string what = "run " + std::to_string(run) + " (" + plan[0] + " " + plan[1] + ")";
    // Every rank dies of SIGKILL (relay-run reports the first: 137; it SIGTERMs the others).
    if (j.status != 137 && j.status != 143)
      fail(what + ": relay-run exited " + std::to_string(j.status) + ", not 137 (SIGKILL)", j);
    if (const std::string left = left_behind(); !left.empty()) {
      fail(what + " left" + left, j);
      ++leaking_runs;
    }
  }
  std::printf("%d jobs killed during or after set-up; %d left entries in /dev/shm (seed %llu)\n",
              runs, leaking_runs, static_cast<unsigned long long>(seed));
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string role = argc > 1 ? argv[1] : "";
  const std::string what = argc > 2 ? argv[2] : "";
  if (role == "jobs" && argc == 5) return drive(argv[2], std::atoi(argv[3]), std::stoull(argv[4]));
  if (role == "rank" && what == "normal") return normal_rank();
  if (role == "rank" && (what == "at_start" || what == "after_bootstrap") && argc == 4)
    killed_rank(what == "at_start", std::stoll(argv[3]));
  std::fprintf(stderr,
               "usage: relay_mp_setup jobs RELAY_RUN RUNS SEED | rank normal | rank at_start NS |"
               " rank after_bootstrap US\n");
  return 2;
}
