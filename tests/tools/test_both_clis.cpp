// relay-plan and relay-bench side by side: the same mistake gets the same message from both
// (tools/support/cli.hpp holds the ranges, defaults and wording they share).
#include <string>
#include <string_view>
#include <vector>

#include <catch2/catch.hpp>

#include "options.hpp"
#include "relay_bench/sweep/options.hpp"

namespace {

// relay-plan's error for a valid allreduce A=2 N=8 fused command line plus `extra`.
std::string plan_error(std::vector<std::string_view> extra,
                       std::vector<std::string_view> base = {"--collective", "allreduce",
                                                             "--active", "2", "--ranks", "8",
                                                             "--mode", "fused"}) {
  base.insert(base.end(), extra.begin(), extra.end());
  return relay_plan::parse_arguments(base).error;
}

relay::bench::parse_outcome bench(const std::vector<const char*>& args) {
  std::vector<const char*> argv{"relay-bench"};
  argv.insert(argv.end(), args.begin(), args.end());
  return relay::bench::parse_options(static_cast<int>(argv.size()), argv.data());
}
std::string bench_error(const std::vector<const char*>& args) {
  return bench(args).error;
}

}  // namespace

TEST_CASE("both tools: one range and one message per option", "[cli]") {
  CHECK(plan_error({"--permille", "0"}) == "--permille: '0' is out of range (1..999)");
  CHECK(bench_error({"--permille", "0"}) == "--permille: '0' is out of range (1..999)");
  CHECK(plan_error({"--tiles", "1"}) == "--tiles: '1' is out of range (2..64)");
  CHECK(bench_error({"--tiles", "1"}) == "--tiles: '1' is out of range (2..64)");
  CHECK(plan_error({"--alignment", "0"}) == "--alignment: '0' is out of range (1..1048576)");
  CHECK(bench_error({"--alignment", "0"}) == "--alignment: '0' is out of range (1..1048576)");
  // The valid values, not int's range.
  CHECK(plan_error({}, {"--active", "999999999999"}) ==
        "--active: '999999999999' is out of range (2..16)");
  CHECK(bench_error({"--active", "999999999999"}) ==
        "--active: '999999999999' is out of range (2..16)");
  CHECK(plan_error({}, {"--ranks", "2"}) == "--ranks: '2' is out of range (3..64)");
  // relay-bench also runs A = N = 2 on the direct route.
  CHECK(bench_error({"-N", "1"}) == "--ranks: '1' is out of range (2..64)");
}

TEST_CASE("both tools: a repeated option is an error", "[cli]") {
  CHECK(plan_error({"--dtype", "bf16", "--dtype", "bf16"}) == "--dtype is given twice");
  CHECK(bench_error({"-d", "bf16", "--datatype", "bf16"}) == "--datatype is given twice");
}

TEST_CASE("both tools: pipelined without --tiles runs 4 tiles", "[cli]") {
  const auto plan = relay_plan::parse_arguments(
      std::vector<std::string_view>{"--collective", "all-gather", "--active", "2", "--ranks", "8",
                                    "--mode", "single", "--schedule", "pipelined"});
  REQUIRE(plan.error.empty());
  CHECK(plan.opts.spec.tiles == 4);
  const auto b = bench({"-C", "all-gather", "-m", "single", "-r", "pipelined"});
  REQUIRE(b.error.empty());
  CHECK(b.opts.tiles == 4);
}

TEST_CASE("both tools: --op with a collective that does not reduce", "[cli]") {
  const std::string expected =
      "--op avg: all-gather does not reduce (only allreduce and reduce-scatter do)";
  CHECK(plan_error({"--op", "avg"}, {"--collective", "all-gather", "--active", "2", "--ranks", "8",
                                     "--mode", "fused"}) == expected);
  CHECK(bench_error({"-C", "all-gather", "-o", "avg"}) == expected);
}

TEST_CASE("both tools: topology numbers are finite and in range", "[cli]") {
  for (const char* text :
       {"mesh:inf", "mesh:nan", "mesh:1e-300", "switched:48:inf", "mesh:48:-1"}) {
    INFO(text);
    const std::string prefix = std::string("--topology: '") + text + "' is not one of mi300x";
    CHECK_THAT(plan_error({"--topology", text}), Catch::StartsWith(prefix));
    CHECK_THAT(bench_error({"-t", text}), Catch::StartsWith(prefix));
  }
  CHECK(plan_error({"--topology", "mi250x"}, {"--collective", "all-gather", "--active", "2",
                                              "--ranks", "16", "--mode", "fused"}) ==
        "--topology: 'mi250x' is a fixed machine of 8 ranks, not 16");
  CHECK(bench_error({"-t", "mi250x", "-N", "16"}) ==
        "--topology: 'mi250x' is a fixed machine of 8 ranks, not 16");
}

TEST_CASE("both tools: a huge argument is cut in the message", "[cli]") {
  const std::string huge(100 * 1024, 'x');
  const std::string shown = "'" + std::string(40, 'x') + "...' (102400 characters)";
  CHECK(plan_error({"--dtype", huge}).starts_with("--dtype: " + shown + " is not one of"));
  CHECK(bench_error({"-d", huge.c_str()}).starts_with("--datatype: " + shown + " is not one of"));
  CHECK(plan_error({huge}) == "unexpected argument " + shown);
  CHECK(bench_error({huge.c_str()}) ==
        "unknown option " + shown + " (relay-bench --help lists them)");
}
