// relay-run: starts N local processes of one job with the environment a rank-local relay
// communicator (and torchrun-style code) reads, prefixes each line they print with "[rank] ",
// and when one fails stops the others and exits with the failing rank's status.
//
//   relay-run -n N [--devices LIST] [--timeout S] [--grace S] -- COMMAND ARGS...
//   relay-run --version | --help
//
// Each rank gets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR=127.0.0.1, MASTER_PORT (a free
// port), the same as RELAY_RANK, RELAY_WORLD_SIZE, RELAY_LOCAL_RANK, RELAY_STORE_ADDR,
// RELAY_STORE_PORT, and RELAY_DEVICE: the LIST entry rank % len(LIST) with --devices, the local
// rank without. CUDA_VISIBLE_DEVICES is left alone, so every rank sees every device (peer access
// between processes needs that).
//
// Exit status: 0 when every rank exits 0; otherwise the first failing rank's exit status
// (128 + signal when it was killed); 124 when --timeout stopped the job. A failing rank's peers
// get SIGTERM, then SIGKILL after the grace period (default 3 s).
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "relay/bootstrap/tcp_bootstrap.hpp"

#ifndef RELAY_VERSION
#error "RELAY_VERSION is defined by examples/CMakeLists.txt (the project's version)"
#endif

namespace {

using clock_type = std::chrono::steady_clock;

struct options {
  int ranks = 0;
  std::vector<std::string> devices;
  double timeout = 0, grace = 3;
  std::vector<char*> command;
};

constexpr const char* synopsis =
    "usage: relay-run -n N [--devices LIST] [--timeout S] [--grace S] -- COMMAND ARGS...\n";

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "relay-run: %s\n%s", why.c_str(), synopsis);
  std::exit(2);
}

[[noreturn]] void help() {
  std::printf(
      "relay-run: starts N local processes of one job, one per rank, with RANK, WORLD_SIZE,\n"
      "LOCAL_RANK, MASTER_ADDR, MASTER_PORT and relay's RELAY_* variables set; prefixes their\n"
      "output with the rank; when one fails, stops the others and exits with its status.\n%s"
      "  -n N            processes (1..1024)\n"
      "  --devices LIST  RELAY_DEVICE of rank r: entry r %% len(LIST) (default: the local rank)\n"
      "  --timeout S     stop the job after S seconds, exit 124 (default: none)\n"
      "  --grace S       seconds between SIGTERM and SIGKILL for the others (default 3)\n"
      "  --version       print the version\n",
      synopsis);
  std::exit(0);
}

double seconds(const char* text, const char* flag) {
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(v > 0)) usage(std::string(flag) + " takes seconds > 0");
  return v;
}

options parse(int argc, char** argv) {
  options o;
  std::set<std::string> seen;  // a repeated option is an error, as in relay-plan and relay-bench
  int i = 1;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--version") {
      std::printf("relay-run %s\n", RELAY_VERSION);
      std::exit(0);
    }
    if (a == "-h" || a == "--help") help();
    if (a != "--" && !seen.insert(a).second) usage(a + " is given twice");
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "-n") {
      char* end = nullptr;
      const char* v = value();
      const long n = std::strtol(v, &end, 10);
      if (end == v || *end != '\0' || n < 1 || n > 1024) usage("-n takes 1..1024 processes");
      o.ranks = static_cast<int>(n);
    } else if (a == "--devices") {
      std::string list = value();
      for (std::size_t at = 0; at <= list.size();) {
        const std::size_t comma = std::min(list.find(',', at), list.size());
        const std::string d = list.substr(at, comma - at);
        if (d.empty() || d.find_first_not_of("0123456789") != std::string::npos)
          usage("--devices takes a comma-separated list of device numbers");
        o.devices.push_back(d);
        at = comma + 1;
      }
    } else if (a == "--timeout") {
      o.timeout = seconds(value(), "--timeout");
    } else if (a == "--grace") {
      o.grace = seconds(value(), "--grace");
    } else {
      usage("unknown option " + a + " (the command follows --)");
    }
  }
  if (o.ranks == 0) usage("-n N is required");
  if (i >= argc) usage("no command after --");
  for (; i < argc; ++i)
    o.command.push_back(argv[i]);
  o.command.push_back(nullptr);
  return o;
}

// A port nobody listens on now (the store binds it moments later).
int free_port() {
  int port = 0;
  if (const relay::status s = relay::free_loopback_port(port); !s) {
    std::fprintf(stderr, "relay-run: %s\n", s.message().c_str());
    std::exit(2);
  }
  return port;
}

struct stream {
  int fd = -1;
  FILE* to = nullptr;
  std::string pending;  // a line not yet ended
};

struct rank_process {
  pid_t pid = -1;
  bool running = false;
  int status = 0;
  stream out, err;
};

volatile sig_atomic_t interrupted = 0;
void on_signal(int sig) {
  interrupted = sig;
}

void emit(int rank, stream& s, const char* data, std::size_t n) {
  s.pending.append(data, n);
  std::size_t start = 0;
  for (std::size_t nl; (nl = s.pending.find('\n', start)) != std::string::npos; start = nl + 1)
    std::fprintf(s.to, "[%d] %.*s\n", rank, static_cast<int>(nl - start), s.pending.data() + start);
  s.pending.erase(0, start);
  std::fflush(s.to);
}

void drain(int rank, stream& s) {
  char buf[65536];
  const ssize_t n = ::read(s.fd, buf, sizeof buf);
  if (n > 0) {
    emit(rank, s, buf, static_cast<std::size_t>(n));
    return;
  }
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (!s.pending.empty()) emit(rank, s, "\n", 1);
  ::close(s.fd);
  s.fd = -1;
}

pid_t spawn(const options& o, int rank, int port, rank_process& p) {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    std::perror("relay-run: pipe");
    std::exit(2);
  }
  // Until the child has its default handlers back, a SIGTERM would run this process's handler
  // in the child and be lost: block it across fork, restore it in the child, then unblock.
  sigset_t stop_signals, previous;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  ::sigprocmask(SIG_BLOCK, &stop_signals, &previous);
  const pid_t pid = ::fork();
  if (pid < 0) {
    std::perror("relay-run: fork");
    std::exit(2);
  }
  if (pid == 0) {
    ::setpgid(0, 0);  // its own group: stopping a rank stops what it started too
    ::signal(SIGTERM, SIG_DFL);
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGPIPE, SIG_DFL);
    ::sigprocmask(SIG_SETMASK, &previous, nullptr);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    const std::string r = std::to_string(rank), n = std::to_string(o.ranks),
                      port_text = std::to_string(port);
    const std::string device =
        o.devices.empty() ? r : o.devices[static_cast<std::size_t>(rank) % o.devices.size()];
    for (const char* name : {"RANK", "RELAY_RANK", "LOCAL_RANK", "RELAY_LOCAL_RANK"})
      ::setenv(name, r.c_str(), 1);
    for (const char* name : {"WORLD_SIZE", "RELAY_WORLD_SIZE", "LOCAL_WORLD_SIZE"})
      ::setenv(name, n.c_str(), 1);
    for (const char* name : {"MASTER_ADDR", "RELAY_STORE_ADDR"})
      ::setenv(name, "127.0.0.1", 1);
    for (const char* name : {"MASTER_PORT", "RELAY_STORE_PORT"})
      ::setenv(name, port_text.c_str(), 1);
    ::setenv("RELAY_DEVICE", device.c_str(), 1);
    ::execvp(o.command[0], o.command.data());
    std::fprintf(stderr, "relay-run: cannot run %s: %s\n", o.command[0], std::strerror(errno));
    ::_exit(127);
  }
  ::sigprocmask(SIG_SETMASK, &previous, nullptr);
  ::setpgid(pid, pid);  // also here, so a signal right after fork finds the group
  ::close(out[1]);
  ::close(err[1]);
  p.pid = pid;
  p.running = true;
  p.out = {out[0], stdout, {}};
  p.err = {err[0], stderr, {}};
  return pid;
}

// The rank and everything it started.
void signal_rank(pid_t pid, int sig) {
  ::kill(-pid, sig);
  ::kill(pid, sig);
}

int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const options o = parse(argc, argv);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  const int port = free_port();
  std::vector<rank_process> ranks(static_cast<std::size_t>(o.ranks));
  for (int r = 0; r < o.ranks; ++r)
    spawn(o, r, port, ranks[static_cast<std::size_t>(r)]);

  const auto start = clock_type::now();
  const auto grace =
      std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(o.grace));
  int failed_rank = -1, result = 0;
  bool stopping = false;
  clock_type::time_point kill_at{};
  auto stop_all = [&](const char* why) {
    if (stopping) return;
    stopping = true;
    std::fprintf(stderr, "relay-run: %s; stopping the other ranks\n", why);
    for (rank_process& p : ranks)
      if (p.running) signal_rank(p.pid, SIGTERM);
    kill_at = clock_type::now() + grace;
  };

  for (;;) {
    std::vector<pollfd> fds;
    std::vector<std::pair<int, stream*>> owners;
    for (int r = 0; r < o.ranks; ++r)
      for (stream* s :
           {&ranks[static_cast<std::size_t>(r)].out, &ranks[static_cast<std::size_t>(r)].err})
        if (s->fd >= 0) {
          fds.push_back({s->fd, POLLIN, 0});
          owners.emplace_back(r, s);
        }
    const bool any_running =
        std::any_of(ranks.begin(), ranks.end(), [](const rank_process& p) { return p.running; });
    if (fds.empty() && !any_running) break;
    if (::poll(fds.data(), fds.size(), 20) > 0)
      for (std::size_t i = 0; i < fds.size(); ++i)
        if (fds[i].revents != 0) drain(owners[i].first, *owners[i].second);

    int status = 0;
    for (pid_t pid; (pid = ::waitpid(-1, &status, WNOHANG)) > 0;)
      for (int r = 0; r < o.ranks; ++r) {
        rank_process& p = ranks[static_cast<std::size_t>(r)];
        if (p.pid != pid) continue;
        p.running = false;
        p.status = status;
        if (exit_code(status) != 0 && failed_rank < 0 && result == 0) {
          failed_rank = r;
          result = exit_code(status);
          const std::string why =
              "rank " + std::to_string(r) + " exited with status " + std::to_string(result);
          stop_all(why.c_str());
        }
      }
    const auto now = clock_type::now();
    if (interrupted != 0 && !stopping) {
      result = 128 + interrupted;
      stop_all("interrupted");
    }
    if (o.timeout > 0 && !stopping && now - start > std::chrono::duration<double>(o.timeout)) {
      result = 124;
      const std::string why = "the job ran past --timeout " + std::to_string(o.timeout) + " s";
      stop_all(why.c_str());
    }
    if (stopping && now >= kill_at)
      for (rank_process& p : ranks)
        if (p.running) signal_rank(p.pid, SIGKILL);
  }
  if (failed_rank >= 0)
    std::fprintf(stderr, "relay-run: rank %d failed with status %d\n", failed_rank, result);
  return result;
}
