// Which process runs which rank (hosted/hosting.hpp), the helper devices' text, and the processes'
// agreement on it, against maps worked out by hand.
#include "relay/hosted/hosting.hpp"

#include <catch2/catch.hpp>
#include <thread>

#include "support/scoped_env.hpp"
#include "support/thread_job.hpp"

using namespace relay;

namespace {

hosting rule(int process_count, std::vector<int> devices) {
  hosting h;
  h.processes = process_count;
  h.devices = std::move(devices);
  return h;
}

}  // namespace

TEST_CASE("helpers are dealt to the processes in blocks, the first ones taking one more",
          "[hosted]") {
  // 2 processes, devices 2..7: ranks 2-4 in process 0, 5-7 in process 1 (docs/hosted-helpers.md).
  const hosting a2 = rule(2, {2, 3, 4, 5, 6, 7});
  CHECK(a2.ranks() == 8);
  CHECK(a2.ranks_of(0) == std::vector{0, 2, 3, 4});
  CHECK(a2.ranks_of(1) == std::vector{1, 5, 6, 7});
  CHECK(a2.device_of(2) == 2);
  CHECK(a2.device_of(7) == 7);
  // 4 processes of 8 ranks: one each.
  const hosting a4 = rule(4, {4, 5, 6, 7});
  CHECK(a4.ranks_of(0) == std::vector{0, 4});
  CHECK(a4.ranks_of(3) == std::vector{3, 7});
  // 6 helpers over 4 processes: 2, 2, 1, 1.
  const hosting uneven = rule(4, {0, 0, 0, 0, 0, 0});
  CHECK(uneven.ranks_of(0) == std::vector{0, 4, 5});
  CHECK(uneven.ranks_of(1) == std::vector{1, 6, 7});
  CHECK(uneven.ranks_of(2) == std::vector{2, 8});
  CHECK(uneven.ranks_of(3) == std::vector{3, 9});
  // Fewer helpers than processes: the first ones host one each, the last none.
  const hosting few = rule(3, {5, 6});
  CHECK(few.ranks_of(0) == std::vector{0, 3});
  CHECK(few.ranks_of(1) == std::vector{1, 4});
  CHECK(few.ranks_of(2) == std::vector{2});
  // A process runs itself.
  for (int p = 0; p < 3; ++p)
    CHECK(few.host_of(p) == p);
  CHECK(rank_name(a2, 5) == "rank 5 (hosted by rank 1)");
  CHECK(rank_name(a2, 1) == "rank 1");
}

TEST_CASE("helper devices parse from their text, and a bad one is refused naming it", "[hosted]") {
  std::vector<int> d;
  REQUIRE(parse_helper_devices("2,3,4,5,6,7", d).ok());
  CHECK(d == std::vector{2, 3, 4, 5, 6, 7});
  REQUIRE(parse_helper_devices("0,0,0", d).ok());  // one GPU: every helper on device 0
  CHECK(d == std::vector{0, 0, 0});
  REQUIRE(parse_helper_devices("", d).ok());
  CHECK(d.empty());
  CHECK(devices_text(std::vector{2, 3}) == "2,3");
  CHECK(devices_text({}) == "none");
  for (const char* bad : {"2,x", "2,,3", "-1", "2,", " 2", "1e3", "70000"}) {
    INFO(bad);
    const status s = parse_helper_devices(bad, d);
    CHECK(s.code() == errc::invalid_argument);
    CHECK(s.message().find(std::string("RELAY_HELPER_DEVICES = '") + bad + "'") == 0);
    CHECK(d.empty());
  }
  {
    const testing::scoped_env set({{"RELAY_HELPER_DEVICES", "1,2"}});
    REQUIRE(helper_devices_from_environment(d).ok());
    CHECK(d == std::vector{1, 2});
  }
  {
    const testing::scoped_env unset({{"RELAY_HELPER_DEVICES", std::nullopt}});
    REQUIRE(helper_devices_from_environment(d).ok());
    CHECK(d.empty());
  }
}

TEST_CASE("processes agree on the helper devices, or every one fails naming the one that differs",
          "[hosted]") {
  struct outcome {
    status s;
    hosting h;
  };
  // 3 processes on threads; process 2 passes `third` (or refuses with its reason).
  auto agree = [](std::vector<int> third, status refusal) {
    std::vector<outcome> out(3);
    const auto made = testing::on_job(3, [&](int r, bootstrap& boot) {
      outcome& o = out[static_cast<std::size_t>(r)];
      const std::vector<int> mine = r == 2 ? third : std::vector{3, 4, 5};
      o.s =
          agree_on_hosting(boot, mine, r == 2 ? refusal : status{}, std::chrono::seconds(10), o.h);
      return status{};
    });
    for (const status& s : made)
      REQUIRE(s.ok());
    return out;
  };
  SECTION("alike") {
    for (const outcome& o : agree({3, 4, 5}, {})) {
      REQUIRE(o.s.ok());
      CHECK(o.h == rule(3, {3, 4, 5}));
    }
  }
  SECTION("one differs") {
    for (const outcome& o : agree({3, 4}, {})) {
      CHECK(o.s.code() == errc::mismatch);
      CHECK(o.s.peer() == 2);
      CHECK(o.s.message().find("rank 2 asked for helper devices 3,4 but rank 0 for 3,4,5") == 0);
    }
  }
  SECTION("one could not read its list") {
    const auto out = agree({}, {errc::invalid_argument, "RELAY_HELPER_DEVICES = 'x': bad"});
    for (int r = 0; r < 3; ++r) {
      const status& s = out[static_cast<std::size_t>(r)].s;
      CHECK(s.code() == (r == 2 ? errc::invalid_argument : errc::peer_error));
      CHECK(s.peer() == 2);
      CHECK(s.message().find("RELAY_HELPER_DEVICES = 'x': bad") != std::string::npos);
    }
  }
}
