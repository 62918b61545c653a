// relay-plan's pieces, called directly: the parser, the symbolic formatting, the JSON writer and
// the failure report (which no correct schedule can trigger through the binary).
#include <string>
#include <string_view>
#include <vector>

#include <catch2/catch.hpp>

#include "json_output.hpp"
#include "json_writer.hpp"
#include "options.hpp"
#include "report.hpp"
#include "symbolic.hpp"
#include "text_output.hpp"

using namespace relay_plan;

namespace {

parse_result parse(std::vector<std::string_view> args) {
  return parse_arguments(args);
}

}  // namespace

TEST_CASE("the parser fills the options and applies the defaults", "[relay_plan]") {
  const parse_result r = parse(
      {"--collective", "all-to-all", "--active", "4", "--ranks=8", "--mode", "single", "--json"});
  REQUIRE(r.error.empty());
  CHECK(r.opts.spec == relay::schedule_spec{relay::collective::all_to_all, 4, 8,
                                            relay::mode::single, relay::route::relay, 0});
  CHECK(r.opts.json);
  CHECK_FALSE(r.opts.verify);
  CHECK(r.opts.topology == "mi300x");
  CHECK(r.opts.type == relay::dtype::float32);
  CHECK(r.opts.alignment == 128);
  CHECK(group_counts(r.opts).empty());
}

TEST_CASE("a count repeats over the groups, counts give one per group", "[relay_plan]") {
  const std::vector<std::string_view> base{"--collective", "allreduce", "--active", "2",
                                           "--ranks",      "8",         "--mode",   "fused"};
  std::vector<std::string_view> one = base, each = base;
  one.insert(one.end(), {"--count", "77"});
  each.insert(each.end(), {"--counts", "1,2,3,4"});
  CHECK(group_counts(parse(one).opts) == std::vector<std::int64_t>{77, 77, 77, 77});
  CHECK(group_counts(parse(each).opts) == std::vector<std::int64_t>{1, 2, 3, 4});
}

TEST_CASE("the parser names what is wrong", "[relay_plan]") {
  CHECK(parse({"--ranks", "8", "--ranks", "8"}).error == "--ranks is given twice");
  CHECK(parse({"--active", "99999999999"}).error ==
        "--active: '99999999999' is out of range (2..16)");
  CHECK(parse({"--ranks", "2"}).error == "--ranks: '2' is out of range (3..64)");
  CHECK(parse({"--permille", "0"}).error == "--permille: '0' is out of range (1..999)");
  CHECK(parse({"--tiles", "65"}).error == "--tiles: '65' is out of range (2..64)");
  CHECK(parse({"--counts", "1,x"}).error == "--counts: entry 2 of 2: 'x' is not a whole number");
  CHECK(parse({"--counts", "1, 2,3,4"}).error ==
        "--counts: entry 2 of 4: ' 2' is not a whole number");
  CHECK(parse({"--alignment", "0"}).error == "--alignment: '0' is out of range (1..1048576)");
  CHECK(parse({"--dtype", "float8"}).error.starts_with("--dtype: 'float8' is not one of int8"));
  CHECK(parse({"-x"}).error == "unknown flag '-x'");
  CHECK(parse({}).error == "missing required flag --collective");
  CHECK(parse({"--help", "--bogus"}).opts.help);
}

TEST_CASE("the topology flag takes a measured machine's text form", "[relay_plan]") {
  const std::vector<std::string_view> base{"--collective", "all-gather", "--active", "2",
                                           "--ranks",      "4",          "--mode",   "fused"};
  std::vector<std::string_view> measured = base, fixed = base, bad = base;
  measured.insert(measured.end(), {"--topology", "switched:362.5:14"});
  fixed.insert(fixed.end(), {"--topology", "mi250x"});  // a matrix of 8 GPUs, not 4
  bad.insert(bad.end(), {"--topology", "mesh:fast"});
  const parse_result r = parse(measured);
  REQUIRE(r.error.empty());
  CHECK(r.opts.topology == "switched:362.5:14");
  CHECK(parse(fixed).error == "--topology: 'mi250x' is a fixed machine of 8 ranks, not 4");
  CHECK(parse(bad).error.starts_with("--topology: 'mesh:fast' is not one of mi300x"));
}

TEST_CASE("the usage text lists every flag within 100 columns", "[relay_plan]") {
  const std::string text = usage();
  for (const char* flag :
       {"--collective", "--active", "--ranks", "--mode", "--schedule", "--topology", "--permille",
        "--tiles", "--dtype", "--count", "--counts", "--alignment", "--op", "--in-place", "--run",
        "--json", "--verify", "--full", "--help"})
    CHECK(text.find(flag) != std::string::npos);
  std::size_t start = 0;
  for (std::size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1)
    CHECK(end - start <= 100);
}

TEST_CASE("affine forms print like the spec writes them", "[relay_plan]") {
  const symbol_names s{"", "n", "o", "r", "d1", "q3"};
  using relay::affine;
  CHECK(format_affine(affine{}, s) == "0");
  CHECK(format_affine(affine::n() - affine::q(0, 6) - affine::q(1), s) == "n - 6o - r");
  CHECK(format_affine(affine::q(0, -1) + affine::constant(3), s) == "-o + 3");
  CHECK(format_affine(affine::n(2) + affine::q(2), s) == "2n + d1");
  CHECK(format_factor(affine::q(0, 2), s) == "2o");
  CHECK(format_factor(affine::n() - affine::q(0), s) == "(n - o)");
}

TEST_CASE("ratios print exactly, as fractions or shares of n", "[relay_plan]") {
  CHECK(format_ratio(relay::ratio{1, 4}) == "1/4");
  CHECK(format_ratio(relay::ratio{4}) == "4");
  CHECK(format_ratio(relay::ratio{-2, 6}) == "-1/3");
  CHECK(format_share(relay::ratio{3, 7}) == "3n/7");
  CHECK(format_share(relay::ratio{1, 4}) == "n/4");
  CHECK(format_share(relay::ratio{1}) == "n");
  CHECK(format_share(relay::ratio{0}) == "0");
}

TEST_CASE("JSON strings are escaped and numbers read back exactly", "[relay_plan]") {
  CHECK(json_quote("a\"b\\c\n\t\x01") == R"("a\"b\\c\n\t\u0001")");
  CHECK(json_number(0.25) == "0.25");
  CHECK(json_number(4.0) == "4");
  CHECK(json_number(3.0 / 7.0) == "0.42857142857142855");
  CHECK(json_number(1.0 / 0.0) == "null");

  json_writer w;
  w.begin_object();
  w.key("a");
  w.begin_array(true);
  w.value(1);
  w.value("x");
  w.null();
  w.end_array();
  w.key("b");
  w.begin_object();
  w.end_object();
  w.key("c");
  w.value(false);
  w.end_object();
  CHECK(w.str() == "{\n  \"a\": [1, \"x\", null],\n  \"b\": {},\n  \"c\": false\n}\n");
}

TEST_CASE("a verify failure says what, where and at which count", "[relay_plan]") {
  relay::check_failure f;
  CHECK(describe_check(f) == "ok");
  f.what = "an output element is never written";
  f.group = 1;
  f.rank = 3;
  f.count = 1025;
  f.position = 7;
  f.in_place = true;
  CHECK(describe_check(f) ==
        "an output element is never written (group 1, rank 3, count 1025, position 7, in place)");
}

TEST_CASE("the report prices the spec's schedules", "[relay_plan]") {
  options o;
  o.spec = {relay::collective::allreduce, 2, 8, relay::mode::fused, relay::route::legacy, 0};
  o.verify = true;
  const plan_report r = make_report(o);
  REQUIRE(r.beta.value);
  CHECK(*r.beta.value == relay::ratio{3, 7});
  CHECK(*r.ceiling == relay::ratio{7, 3});
  CHECK(r.bound->value == relay::ratio{1, 4});
  CHECK(r.quanta.size() == 1);
  CHECK(r.quanta[0].rule == "align_down(n/7, 128)");
  CHECK_FALSE(r.failed());
}

TEST_CASE("hosted helpers are priced as helpers and the report says who runs them",
          "[relay_plan]") {
  const std::vector<std::string_view> base{"--collective", "allreduce", "--active", "2",
                                           "--ranks",      "8",         "--mode",   "single"};
  std::vector<std::string_view> hosted = base;
  hosted.insert(hosted.end(), {"--helper-devices", "2,3,4,5,6,7"});
  const parse_result plain = parse(base), with = parse(hosted);
  REQUIRE(plain.error.empty());
  REQUIRE(with.error.empty());
  CHECK(with.opts.helper_devices == std::vector{2, 3, 4, 5, 6, 7});
  const plan_report a = make_report(plain.opts), b = make_report(with.opts);
  // The same links: the same beta cost, n/4 for the A=2 single relay (docs/cost-model.md).
  REQUIRE(b.beta.value.has_value());
  CHECK(*b.beta.value == relay::ratio{1, 4});
  CHECK(b.beta.value == a.beta.value);
  CHECK(b.loads == a.loads);
  CHECK(render_text(b).find("hosted:     process 0 runs ranks 2, 3, 4 (devices 2, 3, 4)\n"
                            "            process 1 runs ranks 5, 6, 7 (devices 5, 6, 7)\n"
                            "            priced as helpers: the links are the same\n") !=
        std::string::npos);
  CHECK(render_text(a).find("hosted:") == std::string::npos);
  const std::string json = render_json(b);
  CHECK(json.find("\"helper_devices\": [2, 3, 4, 5, 6, 7]") != std::string::npos);
  CHECK(json.find("\"helper_hosts\": [0, 0, 0, 1, 1, 1]") != std::string::npos);
  // What the processes cannot host: a fused call, a list that does not fill the ranks.
  std::vector<std::string_view> fused = hosted;
  fused[7] = "fused";
  CHECK(parse(fused).error ==
        "--helper-devices: hosted helpers hold no buffers, so the processes run one group "
        "(--mode single)");
  std::vector<std::string_view> short_list = base;
  short_list.insert(short_list.end(), {"--helper-devices", "2,3,4"});
  CHECK(parse(short_list).error ==
        "--helper-devices names 3 helpers; --active 2 of --ranks 8 leaves 6");
  std::vector<std::string_view> bad = base;
  bad.insert(bad.end(), {"--helper-devices", "2,x"});
  CHECK(parse(bad).error ==
        "--helper-devices: '2,x': 'x' is not a device number (a comma-separated list of device "
        "numbers)");
}
