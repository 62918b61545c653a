// Waiting for a peer process's counter in shared memory: spin briefly (the peer is usually
// almost there), then yield (ranks may outnumber cores), then sleep in growing intervals up to
// 200 us. Every few milliseconds it asks whether the job is in trouble (a process gone, a rank
// that gave up), so a failure anywhere ends the wait at once instead of at the timeout.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string_view>
#include <thread>

namespace relay::shm {

enum class wait_result { reached, timed_out, trouble };

// True when `pid` is gone or a zombie (exited, not yet reaped by its parent). Reads
// /proc/<pid>/stat into a stack buffer: a wait asks this every few milliseconds, and a repeated
// call allocates nothing however long it waits.
inline bool process_exited(std::int64_t pid) {
  if (pid <= 0) return false;
  if (::kill(static_cast<pid_t>(pid), 0) != 0) return errno == ESRCH;
  char path[48];
  std::snprintf(path, sizeof path, "/proc/%lld/stat", static_cast<long long>(pid));
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[1024];  // "pid (comm) S ...": comm is at most 64 bytes
  const ssize_t n = ::read(fd, buf, sizeof buf);
  ::close(fd);
  if (n <= 0) return false;
  const std::string_view line(buf, static_cast<std::size_t>(n));
  const auto close = line.rfind(')');
  return close != std::string_view::npos && close + 2 < line.size() &&
         (line[close + 2] == 'Z' || line[close + 2] == 'X');
}

// Waits until counter >= target (acquire), until `deadline`, or until `trouble()` (asked every
// few milliseconds: whether some process of the job is gone or gave up) returns true.
template <class Trouble>
wait_result wait_at_least(const std::uint64_t& counter, std::uint64_t target,
                          std::chrono::steady_clock::time_point deadline, Trouble&& trouble) {
  std::atomic_ref<const std::uint64_t> c(counter);
  for (int i = 0; i < 200; ++i)
    if (c.load(std::memory_order_acquire) >= target) return wait_result::reached;
  using clock = std::chrono::steady_clock;
  auto next_check = clock::now() + std::chrono::milliseconds(5);
  std::chrono::microseconds nap{0};
  for (int round = 0;; ++round) {
    if (c.load(std::memory_order_acquire) >= target) return wait_result::reached;
    if (round < 64) {
      std::this_thread::yield();
      continue;
    }
    nap = std::min(std::chrono::microseconds(200), nap + std::chrono::microseconds(10));
    std::this_thread::sleep_for(nap);
    const auto now = clock::now();
    if (now >= next_check) {
      if (c.load(std::memory_order_acquire) >= target) return wait_result::reached;
      // Trouble seen after the counter was read: a peer may have published and then left (or
      // exited) in between. What it published before that is visible now, so read it again.
      if (trouble())
        return c.load(std::memory_order_acquire) >= target ? wait_result::reached
                                                           : wait_result::trouble;
      if (now >= deadline) return wait_result::timed_out;
      next_check = now + std::chrono::milliseconds(5);
    }
  }
}

}  // namespace relay::shm
