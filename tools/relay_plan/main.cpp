// relay-plan: prints a relay schedule, its link loads and costs (see options.cpp for the flags).
// Exit status: 0 success, 1 --verify or --run found a failure, 2 a usage error.
#include <cstdio>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "json_output.hpp"
#include "options.hpp"
#include "report.hpp"
#include "support/cli.hpp"
#include "text_output.hpp"

int main(int argc, char** argv) {
  using namespace relay_plan;
  const std::vector<std::string_view> args(argv + 1, argv + argc);
  const parse_result parsed = parse_arguments(args);
  if (parsed.opts.help) {
    fmt::print("{}", usage());
    return exit_ok;
  }
  if (parsed.opts.version) {
    fmt::print("relay-plan {}\n", relay::cli::version);
    return exit_ok;
  }
  if (!parsed.error.empty()) {
    fmt::print(stderr, "relay-plan: {} (see relay-plan --help)\n", parsed.error);
    return exit_usage;
  }
  const plan_report report = make_report(parsed.opts);
  if (!report.plan_error.empty()) {
    fmt::print(stderr, "relay-plan: {}\n", report.plan_error);
    return exit_usage;
  }
  fmt::print("{}", parsed.opts.json ? render_json(report) : render_text(report));
  if (report.verified && !report.verified->ok())
    fmt::print(stderr, "relay-plan: verify failed: {}\n", describe_check(*report.verified));
  if (report.run && !report.run->status.ok())
    fmt::print(stderr, "relay-plan: run failed: {}\n", report.run->status.to_string());
  else if (report.run && report.run->wrong > 0)
    fmt::print(stderr, "relay-plan: run found {} wrong elements (first: {})\n", report.run->wrong,
               report.run->first_wrong);
  return report.failed() ? exit_check_failed : exit_ok;
}
