// A bootstrap over TCP: rank 0 listens at the store address, every other rank connects to it, and
// rank 0 relays each all-gather (every rank sends its bytes, rank 0 answers with everyone's).
// Configured from the environment (bootstrap/environment.hpp): relay-run, torchrun and
// mpirun-style launchers work unchanged. One TCP connection per rank, kept for the job.
//
// A rank that does not connect or contribute within the timeout, or whose connection closes,
// fails the call on every rank with errc::timeout naming it (rank 0 tells the others). Every wait
// has a deadline: resolving the store's name, each connect (non-blocking, retried while rank 0
// is not listening yet), accept, every send and receive. Set-up's waits (up to the barrier that
// ends it) have the set-up timeout (setup_timeout_of: at least a floor that grows with the job),
// the all-gathers after it the timeout they are given.
//
// One outcome per exchange: rank 0 decides every all-gather for every rank. A rank whose wait
// for rank 0's answer runs out tells rank 0 that it gives up (a give-up frame) and waits a
// little longer for its answer: the exchange went ahead (the answer is the data) only if rank 0
// answered before it saw the give-up, and otherwise fails on every rank, naming that rank's
// reason. A give-up frame rank 0 reads only in a later exchange is of an exchange decided
// already, and dropped.
#pragma once

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "relay/bootstrap/bootstrap.hpp"
#include "relay/bootstrap/environment.hpp"
#include "relay/bootstrap/socket.hpp"

namespace relay {
namespace detail {

// Frames on the wire: one kind byte (0: data, 1: an error, 2: a give-up), a 64-bit length, the
// bytes. An error's bytes are its code (one byte), the rank it names as its cause (32 bits, -1
// none) and its message; a give-up's, the exchange's number (64 bits), then an error's.
enum class frame_kind : unsigned char { data = 0, error = 1, give_up = 2 };

// Sends everything or fails: `peer` names the other end in the message.
inline status send_all(int fd, const void* data, std::size_t bytes, steady::time_point deadline,
                       const std::string& peer) {
  const auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    if (!wait_ready(fd, POLLOUT, deadline))
      return {errc::timeout, peer + " did not take our data in time"};
    // Never blocking: a blocking send waits for room for all of its bytes, past any deadline.
    const ssize_t n = ::send(fd, p, bytes, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (n <= 0) return {errc::timeout, peer + " closed its connection (exited?)"};
    p += n;
    bytes -= static_cast<std::size_t>(n);
  }
  return {};
}

inline status send_frame(int fd, frame_kind kind, std::span<const std::byte> payload,
                         steady::time_point deadline, const std::string& peer) {
  unsigned char header[9];
  header[0] = static_cast<unsigned char>(kind);
  const std::uint64_t len = payload.size();
  std::memcpy(header + 1, &len, 8);
  if (status s = send_all(fd, header, 9, deadline, peer); !s) return s;
  return send_all(fd, payload.data(), payload.size(), deadline, peer);
}

inline std::string error_bytes(const status& error) {
  std::string bytes(1, static_cast<char>(error.code()));
  const std::int32_t peer = error.peer();
  bytes.append(reinterpret_cast<const char*>(&peer), 4);
  return bytes + error.message();
}

inline status send_error(int fd, const status& error, steady::time_point deadline,
                         const std::string& peer) {
  const std::string bytes = error_bytes(error);
  return send_frame(fd, frame_kind::error, std::as_bytes(std::span(bytes)), deadline, peer);
}

inline status error_of(std::span<const std::byte> payload) {
  if (payload.size() < 5) return {errc::system_error, "a truncated error frame"};
  std::int32_t peer = -1;
  std::memcpy(&peer, payload.data() + 1, 4);
  return {static_cast<errc>(payload[0]),
          std::string(reinterpret_cast<const char*>(payload.data()) + 5, payload.size() - 5), peer};
}

// A give-up frame's exchange number (0 where the frame is too short to have one).
inline std::uint64_t exchange_of(std::span<const std::byte> payload) {
  std::uint64_t n = 0;
  if (payload.size() >= 8) std::memcpy(&n, payload.data(), 8);
  return n;
}

// Reads frames incrementally from several sockets at once.
struct frame_reader {
  std::vector<std::byte> bytes;
  bool done = false, closed = false;

  // Consumes what `fd` has of this frame, and never more (the next frame stays in the socket);
  // true when the whole frame is in `bytes`.
  bool pump(int fd) {
    std::size_t want = 9;
    if (bytes.size() >= 9) {
      std::uint64_t len = 0;
      std::memcpy(&len, bytes.data() + 1, 8);
      want = 9 + len;
    }
    std::byte buf[65536];
    const std::size_t ask = std::min(sizeof buf, want - bytes.size());
    const ssize_t n = ask == 0 ? 0 : ::recv(fd, buf, ask, MSG_DONTWAIT);
    if (n == 0 && ask > 0) closed = true;
    if (n > 0) bytes.insert(bytes.end(), buf, buf + n);
    if (bytes.size() >= 9) {
      std::uint64_t len = 0;
      std::memcpy(&len, bytes.data() + 1, 8);
      done = bytes.size() >= 9 + len;
    }
    return done;
  }
  frame_kind kind() const { return static_cast<frame_kind>(bytes[0]); }
  std::span<const std::byte> payload() const { return std::span(bytes).subspan(9); }
  void reset() { *this = {}; }
};

// Reads one whole frame from `fd` before `deadline`.
inline status receive_frame(int fd, frame_reader& r, steady::time_point deadline,
                            const std::string& peer, const std::string& what) {
  while (!r.done) {
    if (!wait_ready(fd, POLLIN, deadline))
      return {errc::timeout, peer + " did not answer " + what + " in time"};
    r.pump(fd);
    if (r.closed && !r.done)
      return {errc::timeout, peer + " closed its connection during " + what + " (exited?)"};
  }
  return {};
}

inline std::string rank_list(const std::vector<int>& ranks) {
  std::string s;
  for (std::size_t i = 0; i < ranks.size(); ++i)
    s.append(i ? "," : "").append(std::to_string(ranks[i]));
  return s;
}

class tcp_bootstrap final : public bootstrap {
 public:
  tcp_bootstrap(int rank, int size, std::vector<unique_fd> peers, std::string address)
      : rank_(rank), size_(size), peers_(std::move(peers)), address_(std::move(address)) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  // Rank 0: the store's address as configured; the others: the local end of their connection
  // to it.
  std::string address() const override { return address_; }

  status all_gather(std::span<const std::byte> mine, std::vector<std::vector<std::byte>>& all,
                    milliseconds timeout) override {
    const std::string what = "all-gather #" + std::to_string(++calls_);
    if (!broken_.ok()) return broken_;
    status s = rank_ == 0 ? gather_at_root(mine, all, timeout, what)
                          : gather_at_leaf(mine, all, timeout, what);
    // A failed exchange leaves the byte streams out of step: every later call fails too.
    if (!s) broken_ = status(s.code(), s.message() + " (the bootstrap is unusable after this)");
    return s;
  }

  status barrier(milliseconds timeout) override {
    std::vector<std::vector<std::byte>> ignored;
    return all_gather({}, ignored, timeout);
  }

 private:
  // Rank 0 reads one data frame per rank until `deadline`, dropping give-up frames of exchanges
  // decided already; a give-up of this exchange (a rank that stopped waiting for the answer) ends
  // the gathering at once. `late[r]` reads what rank r sends after its data.
  void gather_frames(std::vector<frame_reader>& data, std::vector<frame_reader>& late,
                     steady::time_point deadline) {
    for (;;) {
      std::vector<pollfd> fds;
      std::vector<int> whose;
      bool waiting = false;
      for (int r = 1; r < size_; ++r) {
        const frame_reader& d = data[static_cast<std::size_t>(r)];
        const frame_reader& l = late[static_cast<std::size_t>(r)];
        if (d.closed || l.closed || l.done) continue;
        waiting = waiting || !d.done;
        fds.push_back({peers_[static_cast<std::size_t>(r)].get(), POLLIN, 0});
        whose.push_back(r);
      }
      if (!waiting) return;
      const int ready = ::poll(fds.data(), fds.size(), remaining_ms(deadline));
      if (ready < 0 && errno == EINTR) continue;
      if (ready <= 0) return;
      for (std::size_t i = 0; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        const auto r = static_cast<std::size_t>(whose[i]);
        frame_reader& x = data[r].done ? late[r] : data[r];
        x.pump(fds[i].fd);
        if (x.done && x.kind() == frame_kind::give_up && exchange_of(x.payload()) < calls_)
          x.reset();  // of an exchange decided already
        if (late[r].done) return;
      }
    }
  }

  // What rank 0 decides of an exchange whose frames it read: the failure (a rank missing, closed,
  // failed or given up), or ok.
  status decide(const std::vector<frame_reader>& data, const std::vector<frame_reader>& late,
                milliseconds timeout, const std::string& what) const {
    std::vector<int> missing, closed;
    for (int r = 1; r < size_; ++r) {
      const frame_reader& x = data[static_cast<std::size_t>(r)];
      const frame_reader& l = late[static_cast<std::size_t>(r)];
      if (l.done && l.kind() == frame_kind::give_up) {
        const status why = error_of(l.payload().subspan(8));
        return {why.code(),
                why.message() + " (rank " + std::to_string(r) + " gave up on " + what + ")",
                why.peer()};
      }
      if (x.closed && !x.done)
        closed.push_back(r);
      else if (!x.done)
        missing.push_back(r);
    }
    if (!closed.empty())
      return {
          errc::peer_lost,
          "rank(s) " + rank_list(closed) + " closed their connection before " + what + " (exited?)",
          closed[0]};
    if (!missing.empty())
      return {errc::timeout,
              "rank(s) " + rank_list(missing) + " did not join " + what + " within " +
                  std::to_string(timeout.count()) + " ms",
              missing[0]};
    // Contributions that are error frames: a rank that already failed.
    for (int r = 1; r < size_; ++r)
      if (data[static_cast<std::size_t>(r)].kind() != frame_kind::data) {
        const status why = error_of(data[static_cast<std::size_t>(r)].payload());
        return {why.code(), "rank " + std::to_string(r) + " failed: " + why.message(), r};
      }
    return {};
  }

  status gather_at_root(std::span<const std::byte> mine, std::vector<std::vector<std::byte>>& all,
                        milliseconds timeout, const std::string& what) {
    std::vector<frame_reader> data(static_cast<std::size_t>(size_));
    std::vector<frame_reader> late(static_cast<std::size_t>(size_));
    gather_frames(data, late, steady::now() + timeout);
    // A give-up sent as the last contribution arrived: looked for once more. A frame that has
    // begun to arrive is read to its end, up to the timeout: the rank sent it whole, but a loaded
    // machine may run it again only much later; a frame left half read would put the stream out
    // of step.
    for (int r = 1; r < size_; ++r) {
      frame_reader& l = late[static_cast<std::size_t>(r)];
      const int fd = peers_[static_cast<std::size_t>(r)].get();
      if (data[static_cast<std::size_t>(r)].done && !l.done && !l.closed &&
          wait_ready(fd, POLLIN, steady::now()))
        (void)receive_frame(fd, l, steady::now() + timeout, "rank " + std::to_string(r), what);
    }
    const auto answer_deadline = steady::now() + timeout;
    if (status failed = decide(data, late, timeout, what); !failed) {
      for (int r = 1; r < size_; ++r)
        if (!data[static_cast<std::size_t>(r)].closed)
          (void)send_error(peers_[static_cast<std::size_t>(r)].get(), failed, answer_deadline,
                           "rank " + std::to_string(r));
      return failed;
    }
    all.assign(static_cast<std::size_t>(size_), {});
    all[0].assign(mine.begin(), mine.end());
    std::vector<std::byte> reply;
    for (int r = 0; r < size_; ++r) {
      if (r > 0) {
        const auto payload = data[static_cast<std::size_t>(r)].payload();
        all[static_cast<std::size_t>(r)].assign(payload.begin(), payload.end());
      }
      const std::uint64_t len = all[static_cast<std::size_t>(r)].size();
      const auto* l = reinterpret_cast<const std::byte*>(&len);
      reply.insert(reply.end(), l, l + 8);
      reply.insert(reply.end(), all[static_cast<std::size_t>(r)].begin(),
                   all[static_cast<std::size_t>(r)].end());
    }
    for (int r = 1; r < size_; ++r)
      if (status s = send_frame(peers_[static_cast<std::size_t>(r)].get(), frame_kind::data, reply,
                                answer_deadline, "rank " + std::to_string(r));
          !s)
        return s;
    return {};
  }

  status gather_at_leaf(std::span<const std::byte> mine, std::vector<std::vector<std::byte>>& all,
                        milliseconds timeout, const std::string& what) {
    const int fd = peers_[0].get();
    // Rank 0 waits up to `timeout` for the others and then says who is missing: wait longer
    // than that, so the message names the real culprit rather than rank 0.
    const auto grace = std::max(milliseconds(1000), timeout / 2);
    const auto deadline = steady::now() + timeout + grace;
    if (status s = send_frame(fd, frame_kind::data, mine, deadline, "rank 0 (the store)"); !s)
      return s;
    frame_reader r;
    if (status s = receive_frame(fd, r, deadline, "rank 0 (the store)", what); !s) {
      if (r.closed) return {errc::peer_lost, s.message(), 0};
      // Rank 0 decides: tell it this rank gives up, and take its answer if it comes in time
      // (it may have answered before it read this).
      const status why(errc::timeout,
                       "rank 0 (the store) did not answer " + what + " within " +
                           std::to_string((timeout + grace).count()) + " ms",
                       0);
      std::string bytes(8, '\0');
      std::memcpy(bytes.data(), &calls_, 8);
      bytes += error_bytes(why);
      const auto last = steady::now() + grace;
      if (!send_frame(fd, frame_kind::give_up, std::as_bytes(std::span(bytes)), last,
                      "rank 0 (the store)") ||
          !receive_frame(fd, r, last, "rank 0 (the store)", what))
        return why;
    }
    const auto payload = r.payload();
    if (r.kind() == frame_kind::error) return error_of(payload);
    all.assign(static_cast<std::size_t>(size_), {});
    std::size_t at = 0;
    for (int q = 0; q < size_; ++q) {
      std::uint64_t len = 0;
      if (at + 8 > payload.size()) return {errc::system_error, "a truncated answer to " + what};
      std::memcpy(&len, payload.data() + at, 8);
      at += 8;
      if (at + len > payload.size()) return {errc::system_error, "a truncated answer to " + what};
      all[static_cast<std::size_t>(q)].assign(
          payload.begin() + static_cast<std::ptrdiff_t>(at),
          payload.begin() + static_cast<std::ptrdiff_t>(at + len));
      at += len;
    }
    return {};
  }

  int rank_, size_;
  std::vector<unique_fd> peers_;  // rank 0: one per rank (peers_[0] unused); others: peers_[0]
  std::string address_;
  std::uint64_t calls_ = 0;
  status broken_;
};

// The store's address: a numeric one at once; a name through the resolver, which may wait on a
// DNS server, so on a thread of its own: an answer `timeout` after `start` is dropped with the
// thread.
inline status resolve(const environment& env, sockaddr_in& addr, steady::time_point start,
                      milliseconds timeout) {
  addr = {};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(env.store_port));
  if (::inet_pton(AF_INET, env.store_addr.c_str(), &addr.sin_addr) == 1) return {};
  struct lookup {
    std::mutex m;
    std::condition_variable done_cv;
    bool done = false;
    int rc = 0;
    in_addr found{};
  };
  auto l = std::make_shared<lookup>();
  try {
    std::thread([l, host = env.store_addr] {
      addrinfo hints{};
      hints.ai_family = AF_INET;
      addrinfo* found = nullptr;
      const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
      const std::lock_guard<std::mutex> hold(l->m);
      l->rc = rc != 0 ? rc : found == nullptr ? EAI_NONAME : 0;
      if (l->rc == 0) l->found = reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr;
      if (found != nullptr) ::freeaddrinfo(found);
      l->done = true;
      l->done_cv.notify_all();
    }).detach();
  } catch (const std::system_error& e) {
    return {errc::system_error, std::string("starting the store address's lookup: ") + e.what()};
  }
  std::unique_lock<std::mutex> hold(l->m);
  if (!l->done_cv.wait_until(hold, start + timeout, [&] { return l->done; }))
    return {errc::timeout, "the store address '" + env.store_addr + "' did not resolve within " +
                               std::to_string(timeout.count()) + " ms"};
  if (l->rc != 0)
    return {errc::invalid_argument,
            "cannot resolve the store address '" + env.store_addr + "': " + ::gai_strerror(l->rc)};
  addr.sin_addr = l->found;
  return {};
}

inline bool connected_to_itself(int fd) {
  sockaddr_in self{}, peer{};
  socklen_t a = sizeof self, b = sizeof peer;
  return ::getsockname(fd, reinterpret_cast<sockaddr*>(&self), &a) == 0 &&
         ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &b) == 0 &&
         self.sin_port == peer.sin_port && self.sin_addr.s_addr == peer.sin_addr.s_addr;
}

struct hello {
  std::uint32_t magic = 0x72656c79;  // "rely"
  std::int32_t rank = 0, size = 0;
};

// A rank other than 0 connects to the store before `deadline`, retrying while nobody listens
// there yet (rank 0 starting later) and after a connection to itself; a connect that is never
// answered (the store's accept queue full, a filtered port) ends at the deadline too.
inline status connect_to_store(const environment& env, const sockaddr_in& addr,
                               steady::time_point start, milliseconds timeout, unique_fd& out) {
  const auto deadline = start + timeout;
  std::string last;
  for (;;) {
    unique_fd c(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (c.get() < 0) return socket_error("socket");
    const int error =
        connect_before(c.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr, deadline);
    // A connect to a local port nobody listens on yet can connect the socket to itself (its
    // ephemeral port chosen equal to the target): that is no store; retry.
    if (error == 0 && !connected_to_itself(c.get())) {
      out = std::move(c);
      return {};
    }
    last = error == ETIMEDOUT ? "no answer (is its accept queue full?)"
           : error == 0       ? "connected to itself"
                              : std::strerror(error);
    if (remaining_ms(deadline) == 0)
      return {errc::timeout,
              "rank " + std::to_string(env.rank) + " could not connect to rank 0's store at " +
                  env.store_addr + ":" + std::to_string(env.store_port) + " within " +
                  std::to_string(timeout.count()) + " ms (waited " +
                  std::to_string(elapsed_ms(start)) + " ms; the last attempt: " + last + ")"};
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(20, remaining_ms(deadline))));
  }
}

// Rank 0 ends the set-up with `why`, told to every rank connected in `peers`.
inline status tell_connected(std::vector<unique_fd>& peers, const status& why) {
  const auto tell_by = steady::now() + std::chrono::seconds(1);
  for (std::size_t p = 1; p < peers.size(); ++p)
    if (peers[p].get() >= 0)
      (void)send_error(peers[p].get(), why, tell_by, "rank " + std::to_string(p));
  return why;
}

// Rank 0 takes the others' connections and hellos `timeout` after `start` into
// peers[1..size-1]. A connection that is no relay rank's is dropped; a rank's of another job, or
// a rank claimed twice, ends the set-up on every connected rank.
inline status accept_ranks(const environment& env, int listener, steady::time_point start,
                           milliseconds timeout, std::vector<unique_fd>& peers) {
  const auto deadline = start + timeout;
  const std::string store = env.store_addr + ":" + std::to_string(env.store_port);
  int joined = 1;
  while (joined < env.size && wait_ready(listener, POLLIN, deadline)) {
    unique_fd c(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (c.get() < 0) continue;  // gone again before it was accepted
    frame_reader r;
    if (!receive_frame(c.get(), r, deadline, "a connecting rank", "the hello")) continue;
    hello h;
    if (r.kind() != frame_kind::data || r.payload().size() != sizeof h) continue;
    std::memcpy(&h, r.payload().data(), sizeof h);
    if (h.magic != hello{}.magic) continue;
    std::string refusal;
    if (h.size != env.size)
      refusal = "a process joined the store at " + store + " as rank " + std::to_string(h.rank) +
                " of " + std::to_string(h.size) + "; this job has " + std::to_string(env.size) +
                " ranks (another job on this port, or another world size?)";
    else if (h.rank <= 0 || h.rank >= env.size)
      refusal = "a process joined the store at " + store + " as rank " + std::to_string(h.rank) +
                ", not one of 1.." + std::to_string(env.size - 1);
    else if (peers[static_cast<std::size_t>(h.rank)].get() >= 0)
      refusal = "rank " + std::to_string(h.rank) +
                " was claimed by two processes: both joined the store at " + store +
                " (RELAY_RANK or RANK set alike twice?)";
    if (!refusal.empty()) {
      // Every connected process learns why, the refused one too.
      const status refused(errc::invalid_argument, refusal);
      (void)send_error(c.get(), refused, steady::now() + std::chrono::seconds(1), "it");
      return tell_connected(peers, refused);
    }
    peers[static_cast<std::size_t>(h.rank)] = std::move(c);
    ++joined;
  }
  std::vector<int> missing;
  for (int r = 1; r < env.size; ++r)
    if (peers[static_cast<std::size_t>(r)].get() < 0) missing.push_back(r);
  if (missing.empty()) return {};
  return tell_connected(
      peers, {errc::timeout, "rank(s) " + rank_list(missing) + " did not connect to the store at " +
                                 store + " within " + std::to_string(timeout.count()) + " ms"});
}

}  // namespace detail

// A loopback port nobody listens on now, for a store that binds it moments later (how relay-run
// and the tests choose the store's port).
inline status free_loopback_port(int& port) {
  const detail::unique_fd fd(::socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (fd.get() < 0 || ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    return detail::socket_error("finding a free port");
  port = ntohs(addr.sin_port);
  return {};
}

namespace detail {

// A store's listening socket at `addr` (its port 0: one the kernel picks, read back into `port`),
// for `size` ranks. `who` and `where` name the listener and the place in an error.
inline status listen_at(sockaddr_in addr, int size, const std::string& who,
                        const std::string& where, unique_fd& out, int& port) {
  unique_fd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (listener.get() < 0) return socket_error("socket");
  const int one = 1;
  ::setsockopt(listener.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(listener.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
    return socket_error(who + " cannot listen at " + where);
  if (::listen(listener.get(), size) != 0) return socket_error("listen at " + where);
  socklen_t len = sizeof addr;
  if (::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    return socket_error("reading the port of " + where);
  port = ntohs(addr.sin_port);
  out = std::move(listener);
  return {};
}

// The numeric address of this end of a connected socket: where the store (and so, likely, the
// job's other hosts) reached this process.
inline std::string local_address(int fd) {
  sockaddr_in self{};
  socklen_t len = sizeof self;
  char text[INET_ADDRSTRLEN] = {};
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&self), &len) != 0 ||
      ::inet_ntop(AF_INET, &self.sin_addr, text, sizeof text) == nullptr)
    return "127.0.0.1";
  return text;
}

// Connects the job once rank 0 listens (`listener`, rank 0 only) or where the others reach it
// (`addr`): rank 0 takes every rank's hello, the others connect and say theirs, then a barrier.
// Every wait has the set-up timeout, counted from `start`.
inline status join_job(const environment& env, unique_fd listener, const sockaddr_in& addr,
                       steady::time_point start, std::unique_ptr<bootstrap>& out) {
  const milliseconds timeout = setup_timeout_of(env);
  const auto deadline = start + timeout;
  std::vector<unique_fd> peers(static_cast<std::size_t>(env.rank == 0 ? env.size : 1));
  if (env.rank == 0) {
    if (status s = accept_ranks(env, listener.get(), start, timeout, peers); !s) return s;
  } else {
    if (status s = connect_to_store(env, addr, start, timeout, peers[0]); !s) return s;
    const hello h{hello{}.magic, env.rank, env.size};
    if (status s = send_frame(peers[0].get(), frame_kind::data, std::as_bytes(std::span(&h, 1)),
                              deadline, "rank 0 (the store)");
        !s)
      return s;
  }
  for (auto& p : peers)
    if (p.get() >= 0) {
      const int one = 1;
      ::setsockopt(p.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
  std::string address = env.rank == 0 ? env.store_addr : local_address(peers[0].get());
  auto b =
      std::make_unique<tcp_bootstrap>(env.rank, env.size, std::move(peers), std::move(address));
  // Everyone is connected when this returns on every rank.
  if (status s = b->barrier(timeout); !s) return s;
  out = std::move(b);
  return {};
}

}  // namespace detail

// Connects the job (collective: every rank calls it). Fails, naming the ranks that did not
// arrive, when the job is not complete within its set-up timeout (setup_timeout_of(env)).
inline status make_tcp_bootstrap(const environment& env, std::unique_ptr<bootstrap>& out) {
  using namespace detail;
  if (env.size < 1 || env.rank < 0 || env.rank >= env.size)
    return {errc::invalid_argument, "rank " + std::to_string(env.rank) + " of " +
                                        std::to_string(env.size) + " is not a place in a job"};
  const auto start = steady::now();
  sockaddr_in addr{};
  if (status s = resolve(env, addr, start, setup_timeout_of(env)); !s) return s;
  unique_fd listener;
  if (env.rank == 0) {
    int port = 0;
    const std::string store = env.store_addr + ":" + std::to_string(env.store_port);
    if (status s =
            listen_at(addr, env.size, "rank 0",
                      store + " (another job's store there, or a second rank 0?)", listener, port);
        !s)
      return s;
  }
  return join_job(env, std::move(listener), addr, start, out);
}

}  // namespace relay
