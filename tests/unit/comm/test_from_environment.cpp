// communicator_from_environment as a job of one process over a loopback TCP bootstrap: the
// communicator's device is the one its transport drives where the transport drives one (the ipc
// transport takes RELAY_DEVICE modulo the devices it sees), else the environment's.
#include "relay/comm/from_environment.hpp"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <optional>
#include <string>

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

// Sets the variables for the test's duration, and puts back what was there.
class scoped_environment {
 public:
  void set(const char* name, const std::string& value) {
    const char* old = std::getenv(name);
    saved_.push_back({name, old ? std::optional<std::string>(old) : std::nullopt});
    REQUIRE(::setenv(name, value.c_str(), 1) == 0);
  }
  ~scoped_environment() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second)
        (void)::setenv(it->first, it->second->c_str(), 1);
      else
        (void)::unsetenv(it->first);
    }
  }

 private:
  std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
};

// A communicator of one rank whose RELAY_DEVICE is 5, over a transport driving `drives`.
int device_of_communicator(int drives) {
  int port = 0;
  REQUIRE(free_loopback_port(port));
  scoped_environment env;
  env.set("RELAY_RANK", "0");
  env.set("RELAY_WORLD_SIZE", "1");
  env.set("RELAY_STORE_ADDR", "127.0.0.1");
  env.set("RELAY_STORE_PORT", std::to_string(port));
  env.set("RELAY_DEVICE", "5");
  int factory_saw = -1;
  const transport_factory make = [&](bootstrap&, const environment& e,
                                     std::unique_ptr<transport>& out) {
    factory_saw = e.device;
    out = std::make_unique<device_transport>(drives);
    return status{};
  };
  std::unique_ptr<communicator> comm;
  const status s = communicator_from_environment(make, comm);
  REQUIRE(s.ok());
  REQUIRE(comm != nullptr);
  CHECK(factory_saw == 5);  // the transport is told the environment's device
  return comm->device();
}

}  // namespace

TEST_CASE("the communicator's device is the one its transport drives", "[comm]") {
  // RELAY_DEVICE 5 on a machine of 2 GPUs: the ipc transport drives 5 % 2 = 1.
  CHECK(device_of_communicator(1) == 1);
  // A transport of no device (shm): the environment's.
  CHECK(device_of_communicator(-1) == 5);
}
