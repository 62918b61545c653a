// The shm transport's segment across ranks on threads (one mapping per rank, over the TCP
// bootstrap): every rank sees every other rank's writes, rank 0's size wins, and the segment has
// no name anywhere, so nothing can be left behind in /dev/shm.
#include "relay/transport/shm_segment.hpp"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <functional>
#include <string>
#include <thread>

#include "relay/bootstrap/tcp_bootstrap.hpp"
#include "support/dev_shm.hpp"

using namespace relay;

namespace {

environment place(int rank, int size, int port) {
  environment e;
  e.rank = rank;
  e.size = size;
  e.store_port = port;
  e.timeout = std::chrono::seconds(10);
  return e;
}

}  // namespace

TEST_CASE("the shm segment is shared by every rank and named nowhere", "[transport][shm]") {
  int port = 0;
  REQUIRE(free_loopback_port(port));
  constexpr int R = 3;
  std::vector<shm::segment> segments(R);
  std::vector<std::unique_ptr<bootstrap>> boots(R);
  std::vector<status> opened(R);
  std::vector<std::thread> threads;
  for (int r = 0; r < R; ++r)
    threads.emplace_back([&, r] {
      const auto i = static_cast<std::size_t>(r);
      opened[i] = make_tcp_bootstrap(place(r, R, port), boots[i]);
      // Rank 0 asks for 8 KiB per rank, the others for less: rank 0's size is the segment's.
      if (opened[i])
        opened[i] = segments[i].open(*boots[i], r == 0 ? 8192 : 100, std::chrono::seconds(10));
    });
  for (auto& t : threads)
    t.join();
  for (int r = 0; r < R; ++r) {
    INFO("rank " << r);
    REQUIRE(opened[static_cast<std::size_t>(r)].ok());
  }
  CHECK(testing::dev_shm_mappings().empty());
  // Each rank writes its own data area through its own mapping, a byte per offset that no other
  // rank writes.
  for (int r = 0; r < R; ++r) {
    const shm::segment& s = segments[static_cast<std::size_t>(r)];
    REQUIRE(s.ranks() == R);
    REQUIRE(s.bytes_per_rank() == 8192);
    for (std::size_t b = 0; b < 8192; ++b)
      s.data_of(r)[b] =
          static_cast<std::byte>((b * 7 + static_cast<std::size_t>(r) * 31 + 1) & 255);
  }
  // Every rank reads every rank's area, and every rank's pid, through its own mapping.
  for (int viewer = 0; viewer < R; ++viewer)
    for (int r = 0; r < R; ++r) {
      INFO("rank " << viewer << " reading rank " << r << "'s area");
      const shm::segment& s = segments[static_cast<std::size_t>(viewer)];
      CHECK(s.control_of(r).pid == ::getpid());
      std::size_t wrong = 0;
      for (std::size_t b = 0; b < 8192; ++b)
        wrong += s.data_of(r)[b] !=
                 static_cast<std::byte>((b * 7 + static_cast<std::size_t>(r) * 31 + 1) & 255);
      CHECK(wrong == 0);
    }
}
