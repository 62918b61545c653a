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

TEST_CASE("ipc options: mesh emulation's link rate, in GB/s", "[transport][ipc][pacing]") {
  {
    ipc::options o;
    REQUIRE(options_from_environment(o));
    CHECK(o.emulate_mesh == 0);  // off unless asked for
  }
  auto read = [](const char* value) {
    const scoped_env env{{"RELAY_IPC_EMULATE_MESH", value}};
    ipc::options o;
    REQUIRE(options_from_environment(o));
    return o.emulate_mesh;
  };
  CHECK(read("12") == 12'000'000'000ull);
  CHECK(read("12.5") == 12'500'000'000ull);
  CHECK(read("0.25") == 250'000'000ull);
  CHECK(read("12.3456789") == 12'346'000'000ull);  // to the MB/s, as the kernels count it
  CHECK(read("0") == 0);
  auto refused = [](const char* value) {
    const scoped_env env{{"RELAY_IPC_EMULATE_MESH", value}};
    ipc::options o;
    return options_from_environment(o);
  };
  status s = refused("fast");
  CHECK(s.code() == errc::invalid_argument);
  CHECK_THAT(s.message(), Catch::StartsWith("RELAY_IPC_EMULATE_MESH must be a number from 0") &&
                              Catch::Contains("not 'fast'"));
  s = refused("-12");
  CHECK(s.code() == errc::invalid_argument);
  CHECK_THAT(s.message(), Catch::StartsWith("RELAY_IPC_EMULATE_MESH must be a number"));
  s = refused("12e9");  // GB/s, not bytes per second
  CHECK(s.code() == errc::invalid_argument);
  s = refused("0.0005");
  CHECK(s.code() == errc::invalid_argument);
  CHECK_THAT(s.message(), Catch::Contains("below 1 MB/s"));
}

TEST_CASE("ipc options: mesh emulation's walkers, for diagnosis", "[transport][ipc][pacing]") {
  {
    ipc::options o;
    REQUIRE(options_from_environment(o));
    CHECK(o.paced_blocks == 0);     // the rate's (ipc::paced_walkers)
    CHECK(o.paced_move_kib == 64);  // a paced tile at once
  }
  {
    const scoped_env env{{"RELAY_IPC_PACED_BLOCKS", "4"}, {"RELAY_IPC_PACED_MOVE_KIB", "16"}};
    ipc::options o;
    REQUIRE(options_from_environment(o));
    CHECK(o.paced_blocks == 4);
    CHECK(o.paced_move_kib == 16);
  }
  {
    ipc::options o;
    CHECK(o.early_launch == 1);  // launched early unless asked not to
    const scoped_env env{{"RELAY_IPC_EARLY_LAUNCH", "0"}};
    REQUIRE(options_from_environment(o));
    CHECK(o.early_launch == 0);
  }
  auto refused = [](const char* var, const char* value) {
    const scoped_env env{{var, value}};
    ipc::options o;
    return options_from_environment(o);
  };
  status s = refused("RELAY_IPC_PACED_BLOCKS", "17");
  CHECK(s.code() == errc::invalid_argument);
  CHECK_THAT(s.message(), Catch::StartsWith("RELAY_IPC_PACED_BLOCKS must be a number from 0"));
  s = refused("RELAY_IPC_PACED_BLOCKS", "2.5");
  CHECK(s.message() == "RELAY_IPC_PACED_BLOCKS must be a whole number of blocks");
  s = refused("RELAY_IPC_PACED_MOVE_KIB", "32");
  CHECK(s.code() == errc::invalid_argument);
  CHECK(s.message() == "RELAY_IPC_PACED_MOVE_KIB must be 16 or 64, not 32");
  s = refused("RELAY_IPC_PACED_MOVE_KIB", "8");
  CHECK_THAT(s.message(), Catch::StartsWith("RELAY_IPC_PACED_MOVE_KIB must be a number from 16"));
  s = refused("RELAY_IPC_EARLY_LAUNCH", "2");
  CHECK_THAT(s.message(), Catch::StartsWith("RELAY_IPC_EARLY_LAUNCH must be a number from 0"));
  s = refused("RELAY_IPC_EARLY_LAUNCH", "0.5");
  CHECK(s.message() == "RELAY_IPC_EARLY_LAUNCH must be 0 or 1");
}

TEST_CASE("ipc options: mesh emulation refuses the pull form, and rates of parts of a MB/s",
          "[transport][ipc][pacing]") {
  ipc::options o;
  o.form = call_form::pull;
  CHECK(check_options(o));  // no emulation: the pull is fine
  o.emulate_mesh = 12'000'000'000;
  const status s = check_options(o);
  CHECK(s.code() == errc::invalid_argument);
  CHECK_THAT(s.message(),
             Catch::Contains("RELAY_IPC_FORM=pull") && Catch::Contains("RELAY_IPC_EMULATE_MESH"));
  o.form = call_form::ll;
  const status words = check_options(o);
  CHECK(words.code() == errc::invalid_argument);
  CHECK_THAT(words.message(),
             Catch::Contains("RELAY_IPC_FORM=ll") && Catch::Contains("RELAY_IPC_EMULATE_MESH"));
  for (call_form f : {call_form::automatic, call_form::one_shot, call_form::stepped}) {
    o.form = f;
    CHECK(check_options(o));
  }
  o.emulate_mesh = 12'345'678'900;  // not a whole number of MB/s
  const status part = check_options(o);
  CHECK(part.code() == errc::invalid_argument);
  CHECK_THAT(part.message(), Catch::Contains("whole MB/s") && Catch::Contains("12345678900"));
  o.emulate_mesh = 5'000'000'000'000'000'000ull;  // 5 EB/s: past what 32 bits of MB/s count
  CHECK(check_options(o).code() == errc::invalid_argument);
}
