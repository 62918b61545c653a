// The ipc transport's watchdog (ipc/transport.hpp): a host thread that looks every 2 ms whether
// each peer process still exists, since kernels cannot see processes, and tells the transport of
// the first one gone, which raises its rank's flag for its kernels (report.hpp). Peers in this
// process, and processes this one cannot see (another pid namespace), are not watched. It
// allocates nothing while it watches (a call's allocation count is the process's). Host-only: it
// is unit-tested without a device.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "relay/core/no_copy.hpp"

namespace relay::ipc {

// Whether process `pid` is gone: no such process, or a zombie (exited, not yet reaped), read from
// `stat_path` (/proc/<pid>/stat) into a buffer on the stack: the watchdog calls it every few
// milliseconds and must not allocate.
inline bool process_gone(pid_t pid, const char* stat_path) {
  if (::kill(pid, 0) != 0) return errno == ESRCH;
  const int fd = ::open(stat_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT;
  char buf[512];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  const char* close = std::strrchr(buf, ')');  // the name may hold spaces and parentheses
  return close != nullptr && close[1] == ' ' && (close[2] == 'Z' || close[2] == 'X');
}

class watchdog : no_copy {
 public:
  ~watchdog() { stop(); }

  // Watches every rank's process of `pids` (0: unknown) but this one's; calls `gone(rank)` once,
  // on the watchdog's thread, for the first rank found gone, and then stops watching. Nothing
  // starts when there is no peer to watch.
  template <class Gone>
  void start(std::span<const std::uint64_t> pids, Gone gone) {
    const auto self = static_cast<std::uint64_t>(::getpid());
    std::vector<watched> peers;
    for (std::size_t q = 0; q < pids.size(); ++q)
      if (pids[q] != 0 && pids[q] != self &&
          (::kill(static_cast<pid_t>(pids[q]), 0) == 0 || errno == EPERM))
        peers.push_back(
            {static_cast<int>(q), pids[q], "/proc/" + std::to_string(pids[q]) + "/stat"});
    if (peers.empty()) return;
    thread_ = std::thread([this, peers = std::move(peers), gone = std::move(gone)] {
      while (!stop_.load()) {
        for (const watched& w : peers)
          if (process_gone(static_cast<pid_t>(w.pid), w.stat.c_str())) {
            gone(w.rank);
            return;
          }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    });
  }

  // Ends the watching (joins the thread).
  void stop() {
    if (!thread_.joinable()) return;
    stop_.store(true);
    thread_.join();
  }

 private:
  struct watched {
    int rank;
    std::uint64_t pid;
    std::string stat;  // /proc/<pid>/stat
  };
  std::thread thread_;
  std::atomic<bool> stop_{false};
};

}  // namespace relay::ipc
