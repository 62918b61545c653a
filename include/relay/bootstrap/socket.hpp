// Sockets with deadlines, for the bootstrap and for what transports set up over it: a descriptor
// that closes itself, the time left before a deadline as poll() takes it, and a connect that
// gives up at the deadline (a blocking connect() can wait minutes: the kernel's SYN retries to a
// listener whose accept queue is full last about two).
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <utility>

#include "relay/core/status.hpp"

namespace relay::detail {

using steady = std::chrono::steady_clock;

inline status socket_error(const std::string& what) {
  return {errc::system_error, what + ": " + std::strerror(errno)};
}

// Milliseconds from now to `deadline` for poll(), rounded up so that a wait of that long ends at
// or after the deadline, never before it: 0 once it has passed.
inline int remaining_ms(steady::time_point deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - steady::now());
  return left.count() <= 0 ? 0 : static_cast<int>(std::min<long long>(left.count(), 1 << 30));
}

inline long long elapsed_ms(steady::time_point since) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - since).count();
}

// A file descriptor that closes itself.
class unique_fd {
 public:
  unique_fd() = default;
  explicit unique_fd(int fd) : fd_(fd) {}
  unique_fd(unique_fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  unique_fd& operator=(unique_fd&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;
  ~unique_fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_ = -1;
};

// Waits until `fd` is ready for `events` or `deadline` passes: true when ready.
inline bool wait_ready(int fd, short events, steady::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int ready = ::poll(&p, 1, remaining_ms(deadline));
    if (ready < 0 && errno == EINTR) continue;
    return ready > 0;
  }
}

// Connects the non-blocking socket `fd` to `addr`, giving up at `deadline`: 0, or the errno of
// the failure (ETIMEDOUT when the deadline came first; EAGAIN where a local listener's queue is
// full).
inline int connect_before(int fd, const sockaddr* addr, socklen_t len,
                          steady::time_point deadline) {
  if (::connect(fd, addr, len) == 0) return 0;
  if (errno != EINPROGRESS && errno != EINTR) return errno;
  if (!wait_ready(fd, POLLOUT, deadline)) return ETIMEDOUT;
  int error = 0;
  socklen_t size = sizeof error;
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) != 0) return errno;
  return error;
}

}  // namespace relay::detail
