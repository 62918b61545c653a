// hosted/streams.hpp's launch_in_order: a process's ranks launch a call's kernels together, by
// order (ipc/kernel_launch.hpp says why), against stand-in stream transports that record where
// each launch went.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "relay/hosted/streams.hpp"

namespace {

using relay::errc;
using relay::status;

// A rank's kept launches, by their orders; launching one appends "rank:index" to a shared log,
// and the launch at `fails_at` fails instead.
class recording_side final : public relay::hosted::stream_side {
 public:
  recording_side(int rank, std::vector<std::uint32_t> orders, std::vector<std::string>& log,
                 std::size_t fails_at = static_cast<std::size_t>(-1))
      : rank_(rank), orders_(std::move(orders)), log_(&log), fails_at_(fails_at) {}

  void* own_stream() const override { return nullptr; }
  void prepare(const relay::call_context&) override {}
  status fork(void*, void*&) override { return {}; }
  status follow(void*) override { return {}; }
  status rejoin(void*) override { return {}; }
  void keep_launches(bool) override {}
  std::size_t kept_launches() const override { return orders_.size(); }
  std::uint32_t kept_order(std::size_t i) const override { return orders_[i]; }
  status launch_kept(std::size_t i) override {
    if (i == fails_at_) return {errc::system_error, "rank " + std::to_string(rank_) + " failed"};
    log_->push_back(std::to_string(rank_) + ":" + std::to_string(i));
    return {};
  }

 private:
  int rank_;
  std::vector<std::uint32_t> orders_;
  std::vector<std::string>* log_;
  std::size_t fails_at_;
};

constexpr std::uint32_t exit_order = 0xffffffffu;

}  // namespace

TEST_CASE("a process's ranks launch a call's stages by order, every rank's entry first",
          "[hosted]") {
  std::vector<std::string> log;
  // Rank 0 (one kernel: a one-shot or pull call has order 0), rank 1 with phases that publish
  // marks 1 and 3, rank 2 with marks 2 and 3; each ends with its exit.
  recording_side r0(0, {0}, log), r1(1, {0, 1, 3, exit_order}, log),
      r2(2, {0, 2, 3, exit_order}, log);
  std::vector<relay::hosted::stream_side*> sides{&r0, &r1, &r2};
  std::vector<status> results(3);
  std::vector<std::size_t> next;
  relay::hosted::launch_in_order(sides, results, next);
  // Worked by hand: orders 0 (ranks 0, 1, 2), 1 (rank 1), 2 (rank 2), 3 (ranks 1, 2), exits.
  const std::vector<std::string> expected{"0:0", "1:0", "2:0", "1:1", "2:1",
                                          "1:2", "2:2", "1:3", "2:3"};
  CHECK(log == expected);
  for (const status& s : results)
    CHECK(s.ok());
}

TEST_CASE("a rank whose launch fails launches no more, the others go on, its failure is kept",
          "[hosted]") {
  std::vector<std::string> log;
  recording_side r0(0, {0, 1, exit_order}, log), r1(1, {0, 1, exit_order}, log, 1);
  std::vector<relay::hosted::stream_side*> sides{&r0, &r1};
  std::vector<status> results(2);
  std::vector<std::size_t> next;
  relay::hosted::launch_in_order(sides, results, next);
  const std::vector<std::string> expected{"0:0", "1:0", "0:1", "0:2"};
  CHECK(log == expected);
  CHECK(results[0].ok());
  CHECK(results[1].code() == errc::system_error);
  CHECK(results[1].message() == "rank 1 failed");
}

TEST_CASE("a failed launch does not replace the rank's earlier failure", "[hosted]") {
  std::vector<std::string> log;
  recording_side r0(0, {0, exit_order}, log, 0);
  std::vector<relay::hosted::stream_side*> sides{&r0};
  std::vector<status> results{status{errc::invalid_argument, "refused"}};
  std::vector<std::size_t> next;
  relay::hosted::launch_in_order(sides, results, next);
  CHECK(log.empty());
  CHECK(results[0].code() == errc::invalid_argument);
  CHECK(results[0].message() == "refused");
}
