// The ipc transport's options from the environment (transport/ipc/options.hpp).
#include "relay/transport/ipc/options.hpp"

#include <catch2/catch.hpp>

#include "support/scoped_env.hpp"

using namespace relay;
using namespace relay::ipc;
using relay::testing::scoped_env;

TEST_CASE("ipc options: defaults, and each variable read", "[transport][ipc]") {
  {
    ipc::options o;
    REQUIRE(options_from_environment(o));
    CHECK(o.bytes_per_rank == std::size_t{64} << 20);
    CHECK(o.form == call_form::automatic);
    CHECK(o.one_shot_tiles == 4096);
    CHECK(o.costs.launch == 3.7e-6);
    CHECK(o.costs.signal == 1.5e-6);
    CHECK(o.costs.tile == 0.3e-6);
    CHECK(o.device_share == 1);
  }
  const scoped_env env{{"RELAY_IPC_BYTES", "8M"},         {"RELAY_IPC_FORM", "stepped"},
                       {"RELAY_IPC_ONE_SHOT_TILES", "0"}, {"RELAY_IPC_LAUNCH_US", "2.5"},
                       {"RELAY_IPC_SIGNAL_US", "0.75"},   {"RELAY_IPC_TILE_US", "1"},
                       {"RELAY_IPC_DEVICE_SHARE", "8"}};
  ipc::options o;
  REQUIRE(options_from_environment(o));
  CHECK(o.bytes_per_rank == std::size_t{8} << 20);
  CHECK(o.form == call_form::stepped);
  CHECK(o.one_shot_tiles == 0);
  CHECK(o.costs.launch == Approx(2.5e-6));
  CHECK(o.costs.signal == Approx(0.75e-6));
  CHECK(o.costs.tile == Approx(1e-6));
  CHECK(o.device_share == 8);
  const scoped_env pull{{"RELAY_IPC_FORM", "pull"}};
  ipc::options forced;
  REQUIRE(options_from_environment(forced));
  CHECK(forced.form == call_form::pull);
  const scoped_env ll{{"RELAY_IPC_FORM", "ll"}};
  ipc::options words;
  REQUIRE(options_from_environment(words));
  CHECK(words.form == call_form::ll);
}

TEST_CASE("ipc options: a malformed variable is named", "[transport][ipc]") {
  auto refused = [](const char* name, const char* value) {
    const scoped_env env{{name, value}};
    ipc::options o;
    return options_from_environment(o);
  };
  status s = refused("RELAY_IPC_FORM", "fast");
  CHECK(s.code() == errc::invalid_argument);
  CHECK(s.message() == "RELAY_IPC_FORM must be auto, one_shot, stepped, pull or ll, not 'fast'");
  s = refused("RELAY_IPC_ONE_SHOT_TILES", "5000");
  CHECK(s.message().find("RELAY_IPC_ONE_SHOT_TILES must be a number from 0") == 0);
  s = refused("RELAY_IPC_ONE_SHOT_TILES", "2.5");
  CHECK(s.message() == "RELAY_IPC_ONE_SHOT_TILES must be a whole tile count");
  s = refused("RELAY_IPC_LAUNCH_US", "-1");
  CHECK(s.message().find("RELAY_IPC_LAUNCH_US must be a number") == 0);
  s = refused("RELAY_IPC_DEVICE_SHARE", "0");
  CHECK(s.message().find("RELAY_IPC_DEVICE_SHARE must be a number from 1") == 0);
  s = refused("RELAY_IPC_DEVICE_SHARE", "1.5");
  CHECK(s.message() == "RELAY_IPC_DEVICE_SHARE must be a whole number of ranks");
  s = refused("RELAY_IPC_SIGNAL_US", "1us");
  CHECK(s.message().find("not '1us'") != std::string::npos);
}
