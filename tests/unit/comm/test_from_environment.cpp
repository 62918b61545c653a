// communicator_from_environment as a job of one process over a loopback TCP bootstrap: the
// communicator's device is the one its transport drives where the transport drives one (the ipc
// transport takes RELAY_DEVICE modulo the devices it sees), else the environment's; the transport
// is made with the set-up timeout, the communicator's calls keep RELAY_TIMEOUT.
#include "relay/comm/from_environment.hpp"

#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "support/scoped_env.hpp"

using namespace relay;

namespace {

// A transport that runs nothing and drives `device` (-1: none, as the shm transport).
class device_transport final : public transport {
 public:
  explicit device_transport(int device) : device_(device) {}
  std::string_view name() const override { return "device"; }
  bool broken() const override { return false; }
  void abort(const status&) override {}
  status run(const call_context& c) override { return c.local; }
  int device() const override { return device_; }

 private:
  int device_;
};

// A communicator of one rank (RELAY_DEVICE 5, RELAY_TIMEOUT 0.25) over a transport driving
// `drives`; `seen` gets the environment its factory was given.
std::unique_ptr<communicator> one_rank(int drives, environment& seen) {
  int port = 0;
  REQUIRE(free_loopback_port(port));
  const testing::scoped_env env{{"RELAY_RANK", "0"},
                                {"RELAY_WORLD_SIZE", "1"},
                                {"RELAY_STORE_ADDR", "127.0.0.1"},
                                {"RELAY_STORE_PORT", std::to_string(port)},
                                {"RELAY_DEVICE", "5"},
                                {"RELAY_TIMEOUT", "0.25"}};
  const transport_factory make = [&](bootstrap&, const environment& e,
                                     std::unique_ptr<transport>& out) {
    seen = e;
    out = std::make_unique<device_transport>(drives);
    return status{};
  };
  std::unique_ptr<communicator> comm;
  const status s = communicator_from_environment(make, comm);
  REQUIRE(s.ok());
  REQUIRE(comm != nullptr);
  return comm;
}

}  // namespace

TEST_CASE("the communicator's device is the one its transport drives", "[comm]") {
  environment seen;
  // RELAY_DEVICE 5 on a machine of 2 GPUs: the ipc transport drives 5 % 2 = 1.
  CHECK(one_rank(1, seen)->device() == 1);
  CHECK(seen.device == 5);  // the transport is told the environment's device
  // A transport of no device (shm): the environment's.
  CHECK(one_rank(-1, seen)->device() == 5);
}

TEST_CASE("the transport is made with the set-up timeout, the calls keep RELAY_TIMEOUT", "[comm]") {
  environment seen;
  const auto comm = one_rank(-1, seen);
  CHECK(seen.timeout == std::chrono::milliseconds(10'100));  // 10 s + 100 ms for its one rank
  CHECK(comm->config().timeout == std::chrono::milliseconds(250));
}
