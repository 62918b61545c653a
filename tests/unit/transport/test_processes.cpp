// How a transport names a peer's process (transport/processes.hpp): its pid, and the other ranks
// it ran (hosted helpers), which went with it; as the shm transport's waits and the ipc transport's
// reports say it.
#include "relay/transport/processes.hpp"

#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "relay/transport/ipc/report.hpp"

using namespace relay;

TEST_CASE("a process is named with its pid and the ranks it also ran", "[transport][hosted]") {
  // 2 processes of 8 ranks: pid 100 runs ranks 0, 2, 3, 4; pid 200 runs 1, 5, 6, 7.
  const std::vector<std::uint64_t> pids{100, 200, 100, 100, 100, 200, 200, 200};
  auto of = [&](int q) { return process_of(q, 8, [&](int r) { return pids[std::size_t(r)]; }); };
  CHECK(of(1) == " (pid 200, which also ran ranks 5, 6, 7)");
  CHECK(of(4) == " (pid 100, which also ran ranks 0, 2, 3)");
  // A process of one rank, and one that ran one more.
  const std::vector<std::uint64_t> own{10, 11, 12, 11};
  auto single = [&](int q) { return process_of(q, 4, [&](int r) { return own[std::size_t(r)]; }); };
  CHECK(single(0) == " (pid 10)");
  CHECK(single(1) == " (pid 11, which also ran rank 3)");
  // An unknown pid: nothing to say.
  CHECK(process_of(0, 1, [](int) { return 0; }).empty());
  // The ipc transport's report of a process gone names them too.
  ipc::alarm_record dead;
  dead.code = ipc::report_peer_exited;
  dead.by = 0;
  dead.peer = 1;
  dead.call = 3;
  ipc::report_context c;
  c.ranks = 8;
  c.pids = pids;
  const status s = ipc::alarm_status(dead, "", c);
  CHECK(s.code() == errc::peer_lost);
  CHECK(s.peer() == 1);
  CHECK(s.message() == "rank 1 (pid 200, which also ran ranks 5, 6, 7) exited during call #3");
}
