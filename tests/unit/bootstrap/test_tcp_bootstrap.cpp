// The TCP bootstrap over loopback, one thread per rank: all-gathers of different lengths, and the
// errors that name a rank that never connected or never joined.
#include "relay/bootstrap/tcp_bootstrap.hpp"

#include <catch2/catch.hpp>
#include <functional>
#include <thread>

using namespace relay;

namespace {

int free_port() {
  int port = 0;
  REQUIRE(free_loopback_port(port));
  CHECK(port > 0);
  return port;
}

environment place(int rank, int size, int port, std::chrono::milliseconds timeout) {
  environment e;
  e.rank = rank;
  e.size = size;
  e.store_port = port;
  e.timeout = timeout;
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

TEST_CASE("a rank that never connects is named by rank 0", "[bootstrap]") {
  const int port = free_port();
  // Ranks 0 and 1 of 3 start; rank 2 never does.
  const auto results = on_threads(2, [&](int r) {
    std::unique_ptr<bootstrap> b;
    return make_tcp_bootstrap(place(r, 3, port, std::chrono::milliseconds(300)), b);
  });
  CHECK(results[0].code() == errc::timeout);
  CHECK(results[0].message().find("rank(s) 2 did not connect") != std::string::npos);
  CHECK(results[1].code() == errc::timeout);  // rank 0 gave up and closed
}

TEST_CASE("a rank that never joins an all-gather is named on every rank", "[bootstrap]") {
  const int port = free_port(), R = 3;
  std::vector<std::unique_ptr<bootstrap>> boots(R);
  const auto made = on_threads(R, [&](int r) {
    return make_tcp_bootstrap(place(r, R, port, std::chrono::seconds(10)),
                              boots[static_cast<std::size_t>(r)]);
  });
  for (const status& s : made)
    REQUIRE(s.ok());
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
