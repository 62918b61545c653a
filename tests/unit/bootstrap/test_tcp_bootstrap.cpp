// The TCP bootstrap over loopback, one thread per rank: all-gathers of different lengths, set-up
// that waits for ranks past the calls' timeout, and the errors that name a rank that never
// connected, never joined, was claimed twice, or a store that never accepts.
#include "relay/bootstrap/tcp_bootstrap.hpp"

#include <catch2/catch.hpp>
#include <functional>
#include <future>
#include <thread>

#include "support/busy_margin.hpp"

using namespace relay;

namespace {

int free_port() {
  int port = 0;
  REQUIRE(free_loopback_port(port));
  CHECK(port > 0);
  return port;
}

// Rank `rank` of a job of `size` at `port`; set-up waits `setup` where given (tests of a set-up
// that fails), else its default (setup_timeout_of).
environment place(int rank, int size, int port, std::chrono::milliseconds timeout,
                  std::chrono::milliseconds setup = {}) {
  environment e;
  e.rank = rank;
  e.size = size;
  e.store_port = port;
  e.timeout = timeout;
  e.setup_timeout = setup;
  return e;
}

// Runs body(rank) on `ranks` threads at once and collects what each returns.
std::vector<status> on_threads(int ranks, const std::function<status(int)>& body) {
  std::vector<status> result(static_cast<std::size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] { result[static_cast<std::size_t>(r)] = body(r); });
  for (auto& t : threads)
    t.join();
  return result;
}

// R bootstraps of one job, set up on threads at once.
std::vector<std::unique_ptr<bootstrap>> connected(int R) {
  const int port = free_port();
  std::vector<std::unique_ptr<bootstrap>> boots(static_cast<std::size_t>(R));
  const auto made = on_threads(R, [&](int r) {
    return make_tcp_bootstrap(place(r, R, port, std::chrono::seconds(10)),
                              boots[static_cast<std::size_t>(r)]);
  });
  for (const status& s : made)
    REQUIRE(s.ok());
  return boots;
}

}  // namespace

TEST_CASE("the TCP bootstrap all-gathers every rank's bytes to every rank", "[bootstrap]") {
  const int port = free_port(), R = 4;
  std::vector<std::vector<std::vector<std::byte>>> seen(R);
  const auto results = on_threads(R, [&](int r) {
    std::unique_ptr<bootstrap> b;
    if (status s = make_tcp_bootstrap(place(r, R, port, std::chrono::seconds(10)), b); !s) return s;
    if (b->rank() != r || b->size() != R) return status(errc::invalid_argument, "rank or size");
    // Rank r contributes r copies of the letter 'a' + r (rank 0: nothing).
    const std::string mine(static_cast<std::size_t>(r), static_cast<char>('a' + r));
    if (status s = b->all_gather(std::as_bytes(std::span(mine)), seen[static_cast<std::size_t>(r)],
                                 std::chrono::seconds(10));
        !s)
      return s;
    return b->barrier(std::chrono::seconds(10));
  });
  for (int r = 0; r < R; ++r) {
    INFO("rank " << r);
    REQUIRE(results[static_cast<std::size_t>(r)].ok());
    const auto& all = seen[static_cast<std::size_t>(r)];
    REQUIRE(all.size() == 4);
    CHECK(all[0].empty());
    CHECK(std::string(reinterpret_cast<const char*>(all[1].data()), all[1].size()) == "b");
    CHECK(std::string(reinterpret_cast<const char*>(all[2].data()), all[2].size()) == "cc");
    CHECK(std::string(reinterpret_cast<const char*>(all[3].data()), all[3].size()) == "ddd");
  }
}

TEST_CASE("set-up waits for a rank that starts after the calls' timeout", "[bootstrap]") {
  // Rank 0 starts 1 s after rank 1, a set-up longer than the 50 ms a call would wait: set-up
  // waits its own timeout (10.2 s for 2 ranks), so the job connects.
  const int port = free_port();
  const auto results = on_threads(2, [&](int r) {
    if (r == 0) std::this_thread::sleep_for(std::chrono::seconds(1));
    std::unique_ptr<bootstrap> b;
    return make_tcp_bootstrap(place(r, 2, port, std::chrono::milliseconds(50)), b);
  });
  for (const status& s : results) {
    INFO(s.to_string());
    CHECK(s.ok());
  }
}

TEST_CASE("a rank that never connects is named by rank 0", "[bootstrap]") {
  const int port = free_port();
  // Ranks 0 and 1 of 3 start; rank 2 never does. Set-up waits 2 s (rank 1 connects well within).
  const auto results = on_threads(2, [&](int r) {
    std::unique_ptr<bootstrap> b;
    return make_tcp_bootstrap(
        place(r, 3, port, std::chrono::milliseconds(300), std::chrono::milliseconds(2000)), b);
  });
  CHECK(results[0].code() == errc::timeout);
  CHECK(results[0].message().find("rank(s) 2 did not connect") != std::string::npos);
  CHECK(results[1].code() == errc::timeout);  // rank 0 gave up and closed
}

TEST_CASE("a rank that never joins an all-gather is named on every rank", "[bootstrap]") {
  const auto boots = connected(3);
  // Ranks 0 and 1 all-gather; rank 2 stays away.
  const auto results = on_threads(2, [&](int r) {
    std::vector<std::vector<std::byte>> all;
    return boots[static_cast<std::size_t>(r)]->all_gather({}, all, std::chrono::milliseconds(300));
  });
  for (const status& s : results) {
    CHECK(s.code() == errc::timeout);
    CHECK(s.message().find("rank(s) 2 did not join all-gather #2 within 300 ms") !=
          std::string::npos);
  }
  // The streams are out of step now: the bootstrap refuses further use rather than mix them up.
  std::vector<std::vector<std::byte>> all;
  CHECK(boots[0]->barrier(std::chrono::milliseconds(100)).code() == errc::timeout);
}

TEST_CASE("a rank claimed by two processes is named on every rank", "[bootstrap]") {
  const int port = free_port();
  // Three threads of a job of 3: rank 0, and rank 1 twice (rank 2 never comes).
  const auto results = on_threads(3, [&](int t) {
    std::unique_ptr<bootstrap> b;
    return make_tcp_bootstrap(place(t == 0 ? 0 : 1, 3, port, std::chrono::seconds(5)), b);
  });
  for (const status& s : results) {
    CHECK(s.code() == errc::invalid_argument);
    CHECK_THAT(s.message(), Catch::Contains("rank 1 was claimed by two processes") &&
                                Catch::Contains("127.0.0.1:" + std::to_string(port)));
  }
}

TEST_CASE("a store that never accepts fails set-up within the timeout, naming where",
          "[bootstrap]") {
  // A listener with the smallest backlog, its accept queue filled and never accepted: the kernel
  // drops further SYNs, so a connect() without a deadline waits out the SYN retries (about
  // two minutes). Held by the connecting thread too, which may outlive a failed check.
  struct full_store {
    detail::unique_fd listener{::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
    std::vector<detail::unique_fd> queued;
    int port = 0;
  };
  auto store = std::make_shared<full_store>();
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  REQUIRE(::bind(store->listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(store->listener.get(), 0) == 0);
  REQUIRE(::getsockname(store->listener.get(), reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  store->port = ntohs(addr.sin_port);
  bool full = false;
  for (int i = 0; i < 64 && !full; ++i) {  // until a connection is no longer completed
    detail::unique_fd c(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    (void)::connect(c.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    pollfd p{c.get(), POLLOUT, 0};
    int error = 0;
    socklen_t el = sizeof error;
    full = ::poll(&p, 1, 300) != 1 ||
           ::getsockopt(c.get(), SOL_SOCKET, SO_ERROR, &error, &el) != 0 || error != 0;
    store->queued.push_back(std::move(c));
  }
  REQUIRE(full);

  const auto timeout = std::chrono::milliseconds(300);  // set-up's
  auto result = std::make_shared<std::promise<status>>();
  auto answer = result->get_future();
  const auto start = std::chrono::steady_clock::now();
  std::thread([store, result, timeout] {
    std::unique_ptr<bootstrap> b;
    result->set_value(make_tcp_bootstrap(place(1, 2, store->port, timeout, timeout), b));
  }).detach();
  // Without a deadline on connect this waits in vain (and the thread is left to the kernel).
  REQUIRE(answer.wait_for(timeout + testing::busy_margin) == std::future_status::ready);
  const auto took = std::chrono::steady_clock::now() - start;
  const status s = answer.get();
  CHECK(s.code() == errc::timeout);
  CHECK_THAT(s.message(), Catch::Contains("127.0.0.1:" + std::to_string(store->port)) &&
                              Catch::Contains("within 300 ms"));
  CHECK(took >= timeout);
}

TEST_CASE("a rank that starts before the store retries until it listens", "[bootstrap]") {
  const int port = free_port();
  // Rank 1 starts at once; rank 0 binds the port 200 ms later: refused connects are retried.
  const auto results = on_threads(2, [&](int r) {
    if (r == 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::unique_ptr<bootstrap> b;
    if (status s = make_tcp_bootstrap(place(r, 2, port, std::chrono::seconds(5)), b); !s) return s;
    return b->barrier(std::chrono::seconds(5));
  });
  for (const status& s : results)
    CHECK(s.ok());
}

TEST_CASE("the store's address may be a host name, one that does not resolve is named",
          "[bootstrap]") {
  const int port = free_port();
  const auto results = on_threads(2, [&](int r) {
    environment e = place(r, 2, port, std::chrono::seconds(5));
    e.store_addr = "localhost";
    std::unique_ptr<bootstrap> b;
    return make_tcp_bootstrap(e, b);
  });
  for (const status& s : results)
    CHECK(s.ok());
  // The resolver answers at once or waits on a DNS server: either way within set-up's timeout.
  const auto timeout = std::chrono::milliseconds(500);
  environment e = place(1, 2, port, timeout, timeout);
  e.store_addr = "relay-no-such-host.invalid";
  std::unique_ptr<bootstrap> b;
  const auto start = std::chrono::steady_clock::now();
  const status s = make_tcp_bootstrap(e, b);
  CHECK(std::chrono::steady_clock::now() - start < timeout + testing::busy_margin);
  CHECK((s.code() == errc::invalid_argument || s.code() == errc::timeout));
  CHECK_THAT(s.message(), Catch::Contains("the store address 'relay-no-such-host.invalid'"));
}

// Rank 1 all-gathers on time; ranks 0 and 2 arrive `late` later. Rank 1 waits for rank 0's
// answer for the timeout plus max(1 s, timeout / 2) (1.2 s here), then gives up and waits that
// long again for the answer. Every rank must end the exchange alike.
std::vector<status> late_root(std::chrono::milliseconds late) {
  const auto boots = connected(3);
  return on_threads(3, [&](int r) {
    if (r != 1) std::this_thread::sleep_for(late);
    std::vector<std::vector<std::byte>> all;
    const std::string mine(1, static_cast<char>('a' + r));
    status s = boots[static_cast<std::size_t>(r)]->all_gather(std::as_bytes(std::span(mine)), all,
                                                              std::chrono::milliseconds(200));
    if (s && (all.size() != 3 || all[2].size() != 1 || all[2][0] != std::byte{'c'}))
      return status(errc::system_error, "rank " + std::to_string(r) + " got the wrong bytes");
    return s;
  });
}

TEST_CASE("an all-gather ends alike on every rank when a rank gives up on rank 0", "[bootstrap]") {
  SECTION("rank 0 answers before rank 1's deadline: ok everywhere") {
    for (const status& s : late_root(std::chrono::milliseconds(600)))
      CHECK(s.ok());
  }
  SECTION("rank 0 arrives after rank 1 gave up, while it waits for the answer") {
    const auto results = late_root(std::chrono::milliseconds(1600));
    for (int r = 0; r < 3; ++r) {
      INFO("rank " << r << ": " << results[static_cast<std::size_t>(r)].to_string());
      CHECK(results[static_cast<std::size_t>(r)].code() == errc::timeout);
      CHECK(results[static_cast<std::size_t>(r)].peer() == 0);
      CHECK(results[static_cast<std::size_t>(r)].message().rfind(
                "rank 0 (the store) did not answer all-gather #2 within 1200 ms", 0) == 0);
    }
  }
  SECTION("rank 0 arrives after rank 1 stopped waiting altogether") {
    const auto results = late_root(std::chrono::milliseconds(2700));
    for (int r = 0; r < 3; ++r) {
      INFO("rank " << r << ": " << results[static_cast<std::size_t>(r)].to_string());
      CHECK(results[static_cast<std::size_t>(r)].code() == errc::timeout);
      CHECK(results[static_cast<std::size_t>(r)].peer() == 0);
    }
  }
}
