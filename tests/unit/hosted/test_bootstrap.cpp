// A process's ranks as views of one bootstrap (hosted/bootstrap.hpp): 2 processes on threads over
// TCP, hosting 4 helpers, so 6 ranks: process 0 runs ranks 0, 2, 3 and process 1 ranks 1, 4, 5.
#include "relay/hosted/bootstrap.hpp"

#include <catch2/catch.hpp>
#include <functional>
#include <string>
#include <thread>

#include "support/thread_job.hpp"

using namespace relay;

namespace {

constexpr int processes = 2;

std::vector<std::byte> bytes_of(const std::string& s) {
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  return {p, p + s.size()};
}
std::string text_of(const std::vector<std::byte>& b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

// Each process's views, made on threads over TCP; then `body(process, views)` on each.
void with_views(const std::function<void(int, hosted::views&)>& body) {
  hosting h;
  h.processes = processes;
  h.devices = {9, 9, 9, 9};
  const auto made = testing::on_job(processes, [&](int p, bootstrap& boot) {
    // The job's bootstrap outlives the views: they borrow it.
    auto group =
        std::make_shared<hosted::views>(std::shared_ptr<bootstrap>(&boot, [](bootstrap*) {}), h);
    body(p, *group);
    return status{};
  });
  for (const status& s : made)
    REQUIRE(s.ok());
}

// Every local rank of `group` at once, each on its own thread: `each(k, its view)`.
void on_every_rank(hosted::views& group, const std::function<void(int, bootstrap&)>& each) {
  std::vector<std::unique_ptr<bootstrap>> boots;
  for (int k = 0; k < group.local_count(); ++k)
    boots.push_back(group.view(k));
  group.begin_together();
  std::vector<std::thread> threads;
  for (int k = 0; k < group.local_count(); ++k)
    threads.emplace_back([&, k] { each(k, *boots[static_cast<std::size_t>(k)]); });
  for (auto& t : threads)
    t.join();
  group.end_together();
}

}  // namespace

TEST_CASE("the ranks of a process exchange together, each its own bytes", "[hosted]") {
  std::vector<std::vector<std::string>> seen(6);  // [rank] what it received, twice over
  std::vector<status> results(6);
  std::vector<std::vector<int>> local(processes);  // [process] its ranks
  std::vector<int> sizes(6, 0);                    // [rank] the size its view says
  // The threads only record: Catch's assertions are not thread-safe; they run after the join.
  with_views([&](int p, hosted::views& group) {
    local[static_cast<std::size_t>(p)] = group.local_ranks();
    on_every_rank(group, [&](int, bootstrap& b) {
      const auto r = static_cast<std::size_t>(b.rank());
      sizes[r] = b.size();
      for (int round = 0; round < 2; ++round) {
        std::vector<std::vector<std::byte>> all;
        const std::string mine = "rank " + std::to_string(r) + " round " + std::to_string(round);
        if (results[r] = b.all_gather(bytes_of(mine), all, std::chrono::seconds(10)); !results[r])
          return;
        for (const auto& x : all)
          seen[r].push_back(text_of(x));
      }
    });
  });
  CHECK(local[0] == std::vector{0, 2, 3});
  CHECK(local[1] == std::vector{1, 4, 5});
  for (std::size_t r = 0; r < 6; ++r) {
    INFO("rank " << r);
    REQUIRE(results[r].ok());
    CHECK(sizes[r] == 6);
    REQUIRE(seen[r].size() == 12);
    for (std::size_t q = 0; q < 6; ++q) {
      CHECK(seen[r][q] == "rank " + std::to_string(q) + " round 0");
      CHECK(seen[r][6 + q] == "rank " + std::to_string(q) + " round 1");
    }
  }
}

TEST_CASE("outside a step together a process speaks for its hosted ranks, as its host",
          "[hosted]") {
  std::vector<std::vector<std::string>> seen(processes);
  std::vector<status> results(processes), hosted_alone(processes);
  with_views([&](int p, hosted::views& group) {
    const auto i = static_cast<std::size_t>(p);
    auto own = group.view(0);
    std::vector<std::vector<std::byte>> all;
    if (results[i] = own->all_gather(bytes_of("process " + std::to_string(p)), all,
                                     std::chrono::seconds(10));
        results[i])
      for (const auto& x : all)
        seen[i].push_back(text_of(x));
    // A hosted rank has nothing to say of its own there.
    hosted_alone[i] = group.view(1)->all_gather({}, all, std::chrono::seconds(10));
  });
  const std::vector<std::string> want{"process 0", "process 1", "process 0",
                                      "process 0", "process 1", "process 1"};
  for (int p = 0; p < processes; ++p) {
    const auto i = static_cast<std::size_t>(p);
    REQUIRE(results[i].ok());
    CHECK(seen[i] == want);
    CHECK(hosted_alone[i].code() == errc::invalid_argument);
    CHECK(hosted_alone[i].message().find(p == 0
                                             ? "rank 2 (hosted by rank 0) exchanged outside"
                                             : "rank 4 (hosted by rank 1) exchanged outside") == 0);
  }
}

TEST_CASE("a rank that leaves a step fails every rank's exchange of it, naming that rank",
          "[hosted]") {
  std::vector<status> results(6);
  with_views([&](int, hosted::views& group) {
    on_every_rank(group, [&](int k, bootstrap& b) {
      const auto r = static_cast<std::size_t>(b.rank());
      if (b.rank() == 5) {  // its set-up failed before it could exchange
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        group.leave(k, {errc::gpu_error, "device 9 is not a device of this process"});
        return;
      }
      std::vector<std::vector<std::byte>> all;
      results[r] = b.all_gather(bytes_of("x"), all, std::chrono::seconds(10));
    });
  });
  for (int r = 0; r < 5; ++r) {
    INFO("rank " << r);
    const status& s = results[static_cast<std::size_t>(r)];
    CHECK(s.code() == errc::peer_error);
    CHECK(s.peer() == 5);
    CHECK(s.message() ==
          "rank 5 (hosted by rank 1) failed: gpu error: device 9 is not a device of this process");
  }
}
