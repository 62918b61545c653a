// Handing a file descriptor from one process of a job to the others on its host. The holder
// listens on a Unix-domain socket in the abstract namespace: a name in no file system, gone when
// the socket closes, so a process killed at any point leaves nothing behind. It sends the
// descriptor (SCM_RIGHTS) to one connection from each process it expects, known by its pid
// (SO_PEERCRED: the kernel's word, not the peer's), and closes any other. Every wait has a
// deadline.
#pragma once

#include <signal.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "relay/bootstrap/exchange.hpp"
#include "relay/bootstrap/socket.hpp"
#include "relay/core/status.hpp"

namespace relay::detail {

// "\0name": an abstract socket address (Linux).
inline socklen_t abstract_address(const std::string& name, sockaddr_un& addr) {
  addr = {};
  addr.sun_family = AF_UNIX;
  const std::size_t n = std::min(name.size(), sizeof addr.sun_path - 1);
  std::memcpy(addr.sun_path + 1, name.data(), n);
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
}

// One byte with room for one descriptor beside it: what goes over the socket.
struct fd_message {
  char byte = 'f';
  iovec data{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  fd_message() {
    msg.msg_iov = &data;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
  }
  fd_message(const fd_message&) = delete;
  fd_message& operator=(const fd_message&) = delete;
};

class fd_offer {
 public:
  // Listens under the abstract name `name` (unique to the job: the caller's choice).
  status listen(const std::string& name, int backlog) {
    listener_ = unique_fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (listener_.get() < 0) return socket_error("a Unix-domain socket");
    sockaddr_un addr{};
    const socklen_t len = abstract_address(name, addr);
    if (::bind(listener_.get(), reinterpret_cast<const sockaddr*>(&addr), len) != 0 ||
        ::listen(listener_.get(), backlog) != 0)
      return socket_error("listening on the abstract socket @" + name);
    return {};
  }

  // Sends `fd` to one connection from each entry of `pids` (a pid listed twice: two
  // connections), until all are served, `deadline` passes, or one not served yet has exited (it
  // will never come: the caller's next exchange names it); returns how many were served. The
  // descriptor must stay open until then.
  std::size_t serve(int fd, const std::vector<pid_t>& pids, steady::time_point deadline) {
    std::vector<bool> served(pids.size(), false);
    std::size_t count = 0;
    while (count < pids.size() && remaining_ms(deadline) > 0) {
      for (std::size_t i = 0; i < pids.size(); ++i)
        if (!served[i] && ::kill(pids[i], 0) != 0 && errno == ESRCH) return count;
      if (!wait_ready(listener_.get(), POLLIN,
                      std::min(deadline, steady::now() + std::chrono::milliseconds(20))))
        continue;
      const unique_fd c(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
      if (c.get() < 0) continue;
      ucred who{};
      socklen_t len = sizeof who;
      if (::getsockopt(c.get(), SOL_SOCKET, SO_PEERCRED, &who, &len) != 0) continue;
      std::size_t i = 0;
      while (i < pids.size() && (served[i] || pids[i] != who.pid))
        ++i;
      if (i == pids.size()) continue;  // no process of the job, or one already served
      if (send_fd(c.get(), fd)) {
        served[i] = true;
        ++count;
      }
    }
    return count;
  }

 private:
  static bool send_fd(int socket, int fd) {
    fd_message m;
    cmsghdr* c = CMSG_FIRSTHDR(&m.msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
    // A fresh connection has room for one byte: this never waits.
    return ::sendmsg(socket, &m.msg, MSG_NOSIGNAL | MSG_DONTWAIT) == 1;
  }

  unique_fd listener_;
};

// Connects to the abstract socket `name` and takes the descriptor it hands over, before
// `deadline`. `holder` names the other end in errors ("rank 0").
inline status fetch_fd(const std::string& name, const std::string& holder,
                       steady::time_point deadline, unique_fd& out) {
  sockaddr_un addr{};
  const socklen_t len = abstract_address(name, addr);
  unique_fd c;
  for (;;) {
    c = unique_fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (c.get() < 0) return socket_error("a Unix-domain socket");
    const int error =
        connect_before(c.get(), reinterpret_cast<const sockaddr*>(&addr), len, deadline);
    if (error == 0) break;
    // EAGAIN: its queue is full for now.
    if (error != EAGAIN || remaining_ms(deadline) == 0)
      return {
          error == ETIMEDOUT || error == EAGAIN ? errc::timeout : errc::system_error,
          "connecting to " + holder + "'s socket @" + name + ": " + std::strerror(error) +
              (error == ECONNREFUSED ? " (" + holder + " exited, or is on another host?)" : "")};
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!wait_ready(c.get(), POLLIN, deadline))
    return {errc::timeout, holder + " did not hand over the descriptor in time"};
  fd_message m;
  const ssize_t n = ::recvmsg(c.get(), &m.msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  const cmsghdr* h = n == 1 ? CMSG_FIRSTHDR(&m.msg) : nullptr;
  if (h == nullptr || h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS ||
      h->cmsg_len != CMSG_LEN(sizeof(int)))
    return {
        errc::system_error,
        holder + " closed its socket @" + name + " without handing over the descriptor" +
            (n == 0 ? " (it exited, or did not expect this process: another pid namespace?)" : "")};
  int fd = -1;
  std::memcpy(&fd, CMSG_DATA(h), sizeof fd);
  out = unique_fd(fd);
  return {};
}

// Collective over `boot`: rank 0 makes a memory file (create(memory): "" or why not) and hands it
// to every other rank, which maps it (attach(fd): "" or why not), each within `timeout`. Fails on
// every rank, naming the rank that could not: what the shm segment and the control plane share.
// `what` names the file in an error; `socket_prefix` begins its socket's name.
template <class Create, class Attach>
status share_memory_file(bootstrap& boot, std::string_view what, std::string_view socket_prefix,
                         Create&& create, Attach&& attach, std::chrono::milliseconds timeout) {
  // Rank 0 says "+" and its socket's name, or why it has none; every other rank its pid, the
  // only processes rank 0 hands the file to.
  std::string mine;
  unique_fd memory;
  fd_offer offer;
  if (boot.rank() == 0) {
    mine = create(memory);
    if (mine.empty()) {
      std::random_device rd;
      const std::string name = std::string(socket_prefix) + "-" + std::to_string(::getpid()) + "-" +
                               std::to_string(rd()) + std::to_string(rd());
      const status s = offer.listen(name, boot.size());
      mine = s ? "+" + name : s.message();
    }
  } else {
    mine = std::to_string(::getpid());
  }
  std::vector<std::string> all;
  if (status s = exchange(boot, mine, all, timeout); !s) return s;
  const std::string announced = all[0];
  std::string attach_error;
  const auto deadline = steady::now() + timeout;
  if (announced.empty() || announced[0] != '+') {
    attach_error = "rank 0 could not create " + std::string(what) + ": " + announced;
  } else if (boot.rank() == 0) {
    // A rank that does not come is named by the exchange below (its error, or its absence).
    std::vector<pid_t> pids;
    for (std::size_t r = 1; r < all.size(); ++r)
      pids.push_back(static_cast<pid_t>(std::atol(all[r].c_str())));
    (void)offer.serve(memory.get(), pids, deadline);
  } else {
    unique_fd fd;
    if (status s = fetch_fd(announced.substr(1), "rank 0", deadline, fd); !s)
      attach_error = s.message();
    else
      attach_error = attach(fd.get());
  }
  memory = {};
  if (status s = exchange(boot, attach_error, all, timeout); !s) return s;
  for (std::size_t r = 0; r < all.size(); ++r)
    if (!all[r].empty()) return {errc::system_error, "rank " + std::to_string(r) + ": " + all[r]};
  return {};
}

}  // namespace relay::detail
