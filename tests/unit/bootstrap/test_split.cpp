// Splitting a TCP bootstrap, one thread per rank over loopback: who lands in which sub-job at
// which rank (worked out by hand below), that sub-jobs exchange among their own members only and
// never wait for each other, and that a bad color or a failed member fails the split on every
// rank, leaving the parent usable.
#include "relay/bootstrap/split.hpp"

#include <catch2/catch.hpp>
#include <functional>
#include <thread>

#include "support/thread_job.hpp"

using namespace relay;
using namespace std::chrono_literals;
using relay::testing::on_job;

namespace {

std::string text(const std::vector<std::byte>& b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

// What a child's all-gather shows: each member says its parent rank, in the child's rank order.
status gather_parent_ranks(bootstrap& child, int parent_rank, std::string& seen) {
  const std::string mine = std::to_string(parent_rank);
  std::vector<std::vector<std::byte>> all;
  if (status s = child.all_gather(std::as_bytes(std::span(mine)), all, 10s); !s) return s;
  seen.clear();
  for (const auto& b : all)
    seen += text(b) + ",";
  return {};
}

}  // namespace

TEST_CASE("a split ranks each color's members by key, then parent rank", "[bootstrap][split]") {
  // 7 ranks. Colors: 0 1 0 1 no 0 1 (rank 4 joins none). Keys: 5 0 5 -3 9 1 0.
  // Color 0 = parent ranks {0, 2, 5} with keys {5, 5, 1}: rank 5 first (key 1), then 0 and 2
  // (key 5, by parent rank) -> child order 5,0,2.
  // Color 1 = parent ranks {1, 3, 6} with keys {0, -3, 0}: 3 first, then 1 and 6 -> 3,1,6.
  const int colors[7] = {0, 1, 0, 1, no_color, 0, 1};
  const int keys[7] = {5, 0, 5, -3, 9, 1, 0};
  const int child_rank[7] = {1, 1, 2, 0, -1, 0, 2};
  std::vector<std::string> seen(7);
  std::vector<int> ranks(7, -2), sizes(7, -2);
  const auto results = on_job(7, [&](int r, bootstrap& parent) {
    const auto i = static_cast<std::size_t>(r);
    std::unique_ptr<bootstrap> child;
    if (status s = split_bootstrap(parent, colors[i], keys[i], 10s, child); !s) return s;
    if (!child) {
      ranks[i] = sizes[i] = -1;
      return parent.barrier(10s);  // the parent still works with the split's ranks
    }
    ranks[i] = child->rank();
    sizes[i] = child->size();
    if (status s = gather_parent_ranks(*child, r, seen[i]); !s) return s;
    return parent.barrier(10s);
  });
  for (int r = 0; r < 7; ++r) {
    const auto i = static_cast<std::size_t>(r);
    INFO("parent rank " << r << ": " << results[i].to_string());
    REQUIRE(results[i].ok());
    CHECK(ranks[i] == child_rank[i]);
    CHECK(sizes[i] == (r == 4 ? -1 : 3));
  }
  for (int r : {0, 2, 5})
    CHECK(seen[static_cast<std::size_t>(r)] == "5,0,2,");
  for (int r : {1, 3, 6})
    CHECK(seen[static_cast<std::size_t>(r)] == "3,1,6,");
  CHECK(seen[4].empty());
}

TEST_CASE("split sub-jobs never wait for each other", "[bootstrap][split]") {
  // Pairs {0,1} and {2,3}. Pair {2,3} makes its first exchange only after pair {0,1} has made
  // 50; had the sub-jobs shared an exchange, {0,1} would wait for {2,3} on its first.
  std::atomic<int> first_pair_done{0};
  const auto results = on_job(4, [&](int r, bootstrap& parent) {
    std::unique_ptr<bootstrap> child;
    if (status s = split_bootstrap(parent, r / 2, r, 10s, child); !s) return s;
    if (r >= 2)
      while (first_pair_done.load() < 2)
        std::this_thread::sleep_for(1ms);
    std::string seen;
    for (int k = 0; k < (r < 2 ? 50 : 1); ++k)
      if (status s = gather_parent_ranks(*child, r, seen); !s) return s;
    if (seen != (r < 2 ? "0,1," : "2,3,")) return status(errc::system_error, "saw " + seen);
    if (r < 2) ++first_pair_done;
    return status{};
  });
  for (std::size_t r = 0; r < 4; ++r) {
    INFO("rank " << r << ": " << results[r].to_string());
    CHECK(results[r].ok());
  }
}

TEST_CASE("a split with a bad color fails on every rank, naming it", "[bootstrap][split]") {
  const auto results = on_job(3, [&](int r, bootstrap& parent) -> status {
    std::unique_ptr<bootstrap> child;
    const status s = split_bootstrap(parent, r == 1 ? -7 : 0, 0, 10s, child);
    if (child) return {errc::system_error, "a sub-job was made"};
    // The parent stays in step: one more exchange on it works.
    if (status b = parent.barrier(10s); !b) return b;
    return s;
  });
  CHECK(results[1].code() == errc::invalid_argument);
  CHECK(results[1].message() == "color -7 is neither >= 0 nor relay::no_color (-1)");
  for (std::size_t r : {0u, 2u}) {
    CHECK(results[r].code() == errc::peer_error);
    CHECK(results[r].message() ==
          "rank 1 refused the split: color -7 is neither >= 0 nor relay::no_color (-1)");
  }
}

TEST_CASE("a member that cannot offer its store fails the split on every rank",
          "[bootstrap][split]") {
  // Rank 2's parent bootstrap names an address this host does not have, so its store cannot
  // listen: every rank gets an error naming rank 2 and why, at once.
  struct unreachable final : bootstrap {
    bootstrap& parent;
    explicit unreachable(bootstrap& p) : parent(p) {}
    int rank() const override { return parent.rank(); }
    int size() const override { return parent.size(); }
    status all_gather(std::span<const std::byte> mine, std::vector<std::vector<std::byte>>& all,
                      milliseconds t) override {
      return parent.all_gather(mine, all, t);
    }
    status barrier(milliseconds t) override { return parent.barrier(t); }
    // A documentation address (TEST-NET-1), no interface's: a bind there fails.
    std::string address() const override { return "192.0.2.1"; }
  };
  const auto started = std::chrono::steady_clock::now();
  const auto results = on_job(3, [&](int r, bootstrap& parent) -> status {
    unreachable odd(parent);
    std::unique_ptr<bootstrap> child;
    // Rank 2 is first of color 1 (key 0); rank 1 joins it. Rank 0 is alone in color 0.
    const status s = split_bootstrap(r == 2 ? static_cast<bootstrap&>(odd) : parent, r == 0 ? 0 : 1,
                                     r == 2 ? 0 : 1, 2s, child);
    if (child) return {errc::system_error, "a sub-job was made"};
    return s;
  });
  CHECK(std::chrono::steady_clock::now() - started < 5s);
  CHECK(results[2].code() == errc::invalid_argument);
  CHECK_THAT(results[2].message(), Catch::Contains("the split's store cannot listen at 192.0.2.1"));
  for (std::size_t r : {0u, 1u}) {
    CHECK(results[r].code() == errc::peer_error);
    CHECK_THAT(results[r].message(), Catch::StartsWith("rank 2 refused the split: the split's "
                                                       "store cannot listen at 192.0.2.1"));
  }
}
