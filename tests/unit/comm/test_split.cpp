// split_communicator, one thread per rank over a loopback TCP bootstrap, on a transport that runs
// nothing: what the child's transport is told (its rank and size in the child, the parent's
// device, timeout and device share, worked out by hand), and that the child keeps it. Which
// ranks land where is bootstrap/test_split.cpp's; the calls are mp.split.*'s.
#include "relay/comm/split.hpp"

#include <catch2/catch.hpp>
#include <thread>

#include "relay/bootstrap/tcp_bootstrap.hpp"

using namespace relay;
using namespace std::chrono_literals;

namespace {

// A transport that divides its device among `share` ranks, as the ipc transport reports it.
class shared_device final : public transport {
 public:
  explicit shared_device(int share) : share_(share) {}
  std::string_view name() const override { return "shared-device"; }
  bool broken() const override { return false; }
  void abort(const status&) override {}
  status run(const call_context& c) override { return c.local; }
  int device_share() const override { return share_; }

 private:
  int share_;
};

// What one rank's factory was given.
struct seen_environment {
  int rank = -1, size = -1, device = -1, device_share = -1;
  std::chrono::milliseconds timeout{};
};

}  // namespace

TEST_CASE("a split's transport learns the parent's device share, device and set-up timeout",
          "[comm][split]") {
  // 3 ranks on device 4, the parent's transport dividing the device among 8 (the job's ranks
  // there). Colors 0 0 1, keys 1 0 0: color 0 = parent ranks {1, 0} (rank 1 first, key 0),
  // color 1 = {2}. The calls' timeout is 7 s; the transport is made in a set-up, whose timeout
  // for the parent's 3 ranks is 10 s + 3 x 100 ms; the child's calls keep 7 s.
  const int colors[3] = {0, 0, 1}, keys[3] = {1, 0, 0};
  const int want_rank[3] = {1, 0, 0}, want_size[3] = {2, 2, 1};
  int port = 0;
  REQUIRE(free_loopback_port(port));
  std::vector<seen_environment> seen(3);
  std::vector<int> child_share(3, -1);
  std::vector<std::chrono::milliseconds> child_timeout(3);
  std::vector<status> result(3);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r)
    threads.emplace_back([&, r] {
      const auto at = static_cast<std::size_t>(r);
      environment e;
      e.rank = r;
      e.size = 3;
      e.store_port = port;
      e.timeout = 10s;
      std::unique_ptr<bootstrap> boot;
      if (status s = make_tcp_bootstrap(e, boot); !s) {
        result[at] = s;
        return;
      }
      comm_config config;
      config.device = 4;
      config.timeout = 7s;
      communicator parent(std::shared_ptr<bootstrap>(std::move(boot)),
                          std::make_unique<shared_device>(8), config);
      const transport_factory make = [&](bootstrap&, const environment& env,
                                         std::unique_ptr<transport>& out) {
        seen[at] = {env.rank, env.size, env.device, env.device_share, env.timeout};
        out = std::make_unique<shared_device>(env.device_share);
        return status{};
      };
      std::unique_ptr<communicator> child;
      result[at] = split_communicator(parent, colors[r], keys[r], make, child);
      if (child) child_share[at] = child->transport().device_share();
      if (child) child_timeout[at] = child->config().timeout;
    });
  for (auto& t : threads)
    t.join();
  for (std::size_t r = 0; r < 3; ++r) {
    INFO("parent rank " << r << ": " << result[r].to_string());
    REQUIRE(result[r].ok());
    CHECK(seen[r].rank == want_rank[r]);
    CHECK(seen[r].size == want_size[r]);
    CHECK(seen[r].device == 4);
    CHECK(seen[r].timeout == 10'300ms);
    CHECK(child_timeout[r] == 7s);
    CHECK(seen[r].device_share == 8);
    CHECK(child_share[r] == 8);
  }
}
