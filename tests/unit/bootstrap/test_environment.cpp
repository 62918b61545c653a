// Reading a rank's place from the environment: relay's variables over torchrun's, defaults,
// and errors that name the variable.
#include "relay/bootstrap/environment.hpp"

#include <catch2/catch.hpp>
#include <cstddef>
#include <string>
#include <utility>

#include "relay/bootstrap/callback_bootstrap.hpp"

using namespace relay;

namespace {

// Sets the given variables (nullptr: unset) for one test and restores nothing: every test sets
// every variable it reads.
void set(std::initializer_list<std::pair<const char*, const char*>> vars) {
  for (const char* name : {"RELAY_RANK", "RANK", "RELAY_WORLD_SIZE", "WORLD_SIZE",
                           "RELAY_LOCAL_RANK", "LOCAL_RANK", "RELAY_STORE_ADDR", "MASTER_ADDR",
                           "RELAY_STORE_PORT", "MASTER_PORT", "RELAY_DEVICE", "RELAY_TIMEOUT"})
    ::unsetenv(name);
  for (const auto& [name, value] : vars)
    ::setenv(name, value, 1);
}

}  // namespace

TEST_CASE("torchrun's variables configure a rank", "[bootstrap][environment]") {
  set({{"RANK", "3"},
       {"WORLD_SIZE", "8"},
       {"LOCAL_RANK", "1"},
       {"MASTER_ADDR", "10.0.0.2"},
       {"MASTER_PORT", "29500"}});
  environment e;
  REQUIRE(environment_from_process(e));
  CHECK(e.rank == 3);
  CHECK(e.size == 8);
  CHECK(e.local_rank == 1);
  CHECK(e.device == 1);  // the local rank, without RELAY_DEVICE
  CHECK(e.store_addr == "10.0.0.2");
  CHECK(e.store_port == 29500);
  CHECK(e.timeout == std::chrono::milliseconds(30'000));
}

TEST_CASE("relay's own variables win over torchrun's", "[bootstrap][environment]") {
  set({{"RANK", "3"},
       {"RELAY_RANK", "5"},
       {"WORLD_SIZE", "8"},
       {"MASTER_PORT", "29500"},
       {"RELAY_STORE_PORT", "4000"},
       {"RELAY_DEVICE", "2"},
       {"RELAY_TIMEOUT", "0.5"}});
  environment e;
  REQUIRE(environment_from_process(e));
  CHECK(e.rank == 5);
  CHECK(e.local_rank == 5);  // no local rank given: the rank
  CHECK(e.store_addr == "127.0.0.1");
  CHECK(e.store_port == 4000);
  CHECK(e.device == 2);
  CHECK(e.timeout == std::chrono::milliseconds(500));
}

TEST_CASE("missing or malformed variables are named", "[bootstrap][environment]") {
  environment e;
  e.rank = 42;  // a failure leaves it as it was
  set({{"RANK", "0"}, {"WORLD_SIZE", "2"}});
  status s = environment_from_process(e);
  CHECK(s.code() == errc::invalid_argument);
  CHECK(s.message().find("RELAY_STORE_PORT (or MASTER_PORT) is not set") != std::string::npos);
  set({{"RANK", "two"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "1"}});
  s = environment_from_process(e);
  CHECK(s.message().find("RELAY_RANK/RANK = 'two'") != std::string::npos);
  set({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "1"}});
  CHECK(environment_from_process(e).message() == "rank 2 is outside the world size 2");
  set({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "1"}, {"RELAY_TIMEOUT", "-3"}});
  CHECK(environment_from_process(e).message().find("RELAY_TIMEOUT") != std::string::npos);
  CHECK(e.rank == 42);
  set({});
}

TEST_CASE("RELAY_TIMEOUT outside 1 ms..1e6 s is refused, naming the value and the limits",
          "[bootstrap][environment]") {
  // The limits themselves are accepted, to the millisecond.
  for (const auto& [text, want] : {std::pair<const char*, long long>{"0.001", 1},
                                   {"0.0015", 2},
                                   {"2", 2000},
                                   {"1000000", 1'000'000'000}}) {
    set({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "1"}, {"RELAY_TIMEOUT", text}});
    environment e;
    INFO("RELAY_TIMEOUT=" << text);
    REQUIRE(environment_from_process(e));
    CHECK(e.timeout == std::chrono::milliseconds(want));
  }
  // Below a millisecond it would round to 0 ms and every job would fail to start.
  for (const char* bad : {"0.0009", "0.0004", "1e-7", "0", "-0.5", "1000001", "inf", "nan", "1s"}) {
    set({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "1"}, {"RELAY_TIMEOUT", bad}});
    environment e;
    e.timeout = std::chrono::milliseconds(1234);  // a refusal leaves it as it was
    const status s = environment_from_process(e);
    INFO("RELAY_TIMEOUT=" << bad);
    CHECK(s.code() == errc::invalid_argument);
    CHECK(s.message() == "RELAY_TIMEOUT = '" + std::string(bad) +
                             "' is not a number of seconds in 0.001..1000000");
    CHECK(e.timeout == std::chrono::milliseconds(1234));
  }
  set({});
}

TEST_CASE("set-up waits at least 10 s and 100 ms a rank, whatever the calls' timeout",
          "[bootstrap][environment]") {
  using std::chrono::milliseconds;
  // 10,000 ms + 100 ms per rank, worked out by hand; a longer call timeout wins.
  CHECK(setup_timeout_for(1, milliseconds(1)) == milliseconds(10'100));
  CHECK(setup_timeout_for(8, milliseconds(1000)) == milliseconds(10'800));
  CHECK(setup_timeout_for(8, milliseconds(30'000)) == milliseconds(30'000));
  CHECK(setup_timeout_for(1024, milliseconds(30'000)) == milliseconds(112'400));
  environment e;
  e.size = 4;
  e.timeout = milliseconds(600);
  CHECK(setup_timeout_of(e) == milliseconds(10'400));
  e.setup_timeout = milliseconds(250);  // a caller's own: taken as it is
  CHECK(setup_timeout_of(e) == milliseconds(250));
  // RELAY_TIMEOUT sets the calls' timeout only.
  set({{"RANK", "0"}, {"WORLD_SIZE", "8"}, {"MASTER_PORT", "1"}, {"RELAY_TIMEOUT", "0.5"}});
  environment from;
  REQUIRE(environment_from_process(from));
  CHECK(from.timeout == milliseconds(500));
  CHECK(setup_timeout_of(from) == milliseconds(10'800));
  set({});
}

TEST_CASE("the callback bootstrap forwards to the caller's store", "[bootstrap]") {
  int gathers = 0;
  callback_bootstrap b(1, 2,
                       [&](std::span<const std::byte> mine,
                           std::vector<std::vector<std::byte>>& all, std::chrono::milliseconds) {
                         ++gathers;
                         all = {{std::byte{7}}, {mine.begin(), mine.end()}};
                         return status{};
                       });
  CHECK(b.rank() == 1);
  CHECK(b.size() == 2);
  const std::byte mine[] = {std::byte{9}, std::byte{8}};
  std::vector<std::vector<std::byte>> all;
  REQUIRE(b.all_gather(mine, all, std::chrono::seconds(1)));
  CHECK(all == std::vector<std::vector<std::byte>>{{std::byte{7}}, {std::byte{9}, std::byte{8}}});
  REQUIRE(b.barrier(std::chrono::seconds(1)));  // no barrier given: an empty all-gather
  CHECK(gathers == 2);
  // A store that returns the wrong number of contributions is an error, not a short vector.
  callback_bootstrap wrong(0, 3, [](auto, auto& out, auto) {
    out.assign(2, {});
    return status{};
  });
  CHECK(wrong.all_gather({}, all, std::chrono::seconds(1)).code() == errc::invalid_argument);
}

TEST_CASE("sizes from the environment: K, M, G suffixes, unset keeps the default",
          "[bootstrap][environment]") {
  std::size_t bytes = 123;
  ::unsetenv("RELAY_TEST_BYTES");
  REQUIRE(size_from_environment("RELAY_TEST_BYTES", bytes));
  CHECK(bytes == 123);
  for (const auto& [text, want] : {std::pair<const char*, std::size_t>{"4096", 4096},
                                   {"64K", std::size_t{64} << 10},
                                   {"64M", std::size_t{64} << 20},
                                   {"2g", std::size_t{2} << 30}}) {
    ::setenv("RELAY_TEST_BYTES", text, 1);
    REQUIRE(size_from_environment("RELAY_TEST_BYTES", bytes));
    CHECK(bytes == want);
  }
  for (const char* bad : {"0", "-1", "12Q", "M", "1.5M"}) {
    ::setenv("RELAY_TEST_BYTES", bad, 1);
    const status s = size_from_environment("RELAY_TEST_BYTES", bytes);
    CHECK(s.code() == errc::invalid_argument);
    CHECK_THAT(s.message(), Catch::Contains("RELAY_TEST_BYTES must be a positive size"));
  }
  ::unsetenv("RELAY_TEST_BYTES");
}
