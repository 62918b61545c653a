#include "options.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "host_run.hpp"
#include "relay/schedule/generate.hpp"
#include "relay/topology/parse.hpp"
#include "relay/topology/topology.hpp"
#include "support/cli.hpp"
#include "support/host_memory.hpp"

namespace relay_plan {
namespace {

// Largest accepted count and alignment: far beyond any real message, small enough that no byte
// offset of a plan (coefficients up to about A*N, times the element size) overflows 64 bits.
constexpr std::int64_t max_count = std::int64_t{1} << 40;
// --run allocates every active rank's buffers (and copies of them) in this process.
constexpr std::int64_t max_run_bytes = std::int64_t{4} << 30;
// The usage text's right column.
constexpr std::size_t help_width = 72;

template <class Range, class Name>
std::string join_names(const Range& values, Name name_of) {
  std::string out;
  for (const auto& v : values)
    fmt::format_to(std::back_inserter(out), "{}{}", out.empty() ? "" : ", ", name_of(v));
  return out;
}

std::string collective_names() {
  return join_names(relay::all_collectives, [](relay::collective c) { return relay::name(c); });
}
std::string mode_names() {
  return join_names(std::array{relay::mode::fused, relay::mode::single},
                    [](relay::mode m) { return relay::name(m); });
}
std::string route_names() {
  return join_names(std::array{relay::route::relay, relay::route::direct, relay::route::legacy,
                               relay::route::pipelined},
                    [](relay::route r) { return relay::name(r); });
}
std::string topology_names() {
  return join_names(relay::topology_presets, [](const relay::topology* t) { return t->name; });
}
std::string dtype_names() {
  return join_names(relay::all_dtypes, [](relay::dtype t) { return relay::name(t); });
}

// Sets an int field of the spec from a whole number in the range both tools use for it; the
// schedule rules (spec_error) judge the combination later.
template <int relay::schedule_spec::*Field, const relay::cli::int_range& Range>
std::string set_spec_int(options& o, std::string_view v) {
  std::string error;
  if (auto x = relay::cli::parse_int(v, Range, error)) o.spec.*Field = static_cast<int>(*x);
  return error;
}

template <class Parse>
std::string set_enum(std::string_view v, Parse parse, auto assign, const std::string& choices) {
  if (auto x = parse(v)) {
    assign(*x);
    return {};
  }
  return fmt::format("{} is not one of {}", relay::cli::quoted(v), choices);
}

std::string set_collective(options& o, std::string_view v) {
  return set_enum(
      v, relay::parse_collective, [&](auto x) { o.spec.coll = x; }, collective_names());
}
std::string set_mode(options& o, std::string_view v) {
  return set_enum(
      v, relay::parse_mode, [&](auto x) { o.spec.mode = x; }, mode_names());
}
std::string set_route(options& o, std::string_view v) {
  return set_enum(
      v, relay::parse_route, [&](auto x) { o.spec.route = x; }, route_names());
}
std::string set_dtype(options& o, std::string_view v) {
  return set_enum(
      v, relay::parse_dtype, [&](auto x) { o.type = x; }, dtype_names());
}
std::string set_op(options& o, std::string_view v) {
  return set_enum(
      v, relay::parse_reduce_op, [&](auto x) { o.op = x; }, "sum, avg");
}
std::string set_wire(options& o, std::string_view v) {
  return set_enum(
      v, relay::parse_wire, [&](auto x) { o.wire = x; }, "native, fp8, fp8_e4m3, fp8_e4m3_fnuz");
}
std::string set_wire_threshold(options& o, std::string_view v) {
  std::string error;
  if (auto x = relay::cli::parse_int(v, {-1, max_count}, error)) o.wire_threshold = *x;
  return error;
}
std::string set_topology(options& o, std::string_view v) {
  // The rank count is not known yet (flags come in any order): check the text's form at 8 ranks,
  // which every preset has; validate() checks it against --ranks.
  std::string error;
  if (!relay::cli::parse_topology_option(v, 8, error)) return error;
  o.topology = std::string(v);
  return {};
}

std::string set_alignment(options& o, std::string_view v) {
  std::string error;
  if (auto x = relay::cli::parse_int(v, relay::cli::alignment_range, error)) o.alignment = *x;
  return error;
}
std::string set_count(options& o, std::string_view v) {
  std::string error;
  if (auto x = relay::cli::parse_int(v, {0, max_count}, error)) o.counts = {*x};
  return error;
}
// Entries are numbered from 1, as "--counts gives 3 counts" counts them.
std::string set_counts(options& o, std::string_view v) {
  o.counts.clear();
  o.counts_per_group = true;
  const auto entries = 1 + static_cast<std::size_t>(std::count(v.begin(), v.end(), ','));
  for (std::size_t at = 0; at <= v.size();) {
    const std::size_t comma = std::min(v.find(',', at), v.size());
    std::string error;
    const auto x = relay::cli::parse_int(v.substr(at, comma - at), {0, max_count}, error);
    if (!x)
      return entries == 1 ? error
                          : fmt::format("entry {} of {}: {}", o.counts.size() + 1, entries, error);
    o.counts.push_back(*x);
    at = comma + 1;
  }
  return {};
}

std::string set_helper_devices(options& o, std::string_view v) {
  if (relay::status s = relay::parse_helper_devices(v, o.helper_devices, ""); !s)
    return s.message();
  if (o.helper_devices.empty()) return "name one device per helper";
  return {};
}

// A switch: present means true.
template <bool options::*Field>
std::string set_switch(options& o, std::string_view) {
  o.*Field = true;
  return {};
}

struct flag {
  std::string_view name;
  std::string_view value_name;  // empty: a switch, which takes no value
  bool required;
  std::string (*set)(options&, std::string_view);
  std::string help;
};

// The one table of flags: the parser and the usage text both read it.
const std::vector<flag>& flags() {
  static const std::vector<flag> table{
      {"--collective", "C", true, set_collective, collective_names() + " (required)"},
      {"--active", "A", true, set_spec_int<&relay::schedule_spec::active, relay::cli::active_range>,
       "active ranks per group: 2, 4, 8 or 16, below N (required)"},
      {"--ranks", "N", true, set_spec_int<&relay::schedule_spec::ranks, relay::cli::ranks_range>,
       "GPUs in the node, 3..64; H = N - A are helpers (required)"},
      {"--mode", "M", true, set_mode,
       mode_names() + " (required; fused: N/A groups at once, single: one)"},
      {"--schedule", "S", false, set_route, route_names() + " (default relay)"},
      {"--topology", "T", false, set_topology,
       topology_names() + ", mesh:GBPS[:US[:OPUS[:MEM[:CALLUS]]]] or "
                          "switched:GBPS[:US[:OPUS[:MEM[:CALLUS]]]] (default mi300x)"},
      {"--permille", "P", false,
       set_spec_int<&relay::schedule_spec::permille, relay::cli::permille_range>,
       "allreduce relay offload fraction, 1..999 (default: balanced, 1000*H/N)"},
      {"--tiles", "T", false, set_spec_int<&relay::schedule_spec::tiles, relay::cli::tiles_range>,
       "pipeline depth of --schedule pipelined (single groups only), 2..64 (default 4)"},
      {"--dtype", "D", false, set_dtype,
       fmt::format("element type (default float32): {}", dtype_names())},
      {"--count", "n", false, set_count, "every group's count: show concrete sizes and time"},
      {"--counts", "c0,c1,...", false, set_counts, "one count per group (heterogeneous groups)"},
      {"--alignment", "E", false, set_alignment, "chunk alignment in elements (default 128)"},
      {"--op", "O", false, set_op,
       "sum, avg (default sum): allreduce and reduce-scatter only (the others do not reduce)"},
      {"--wire", "W", false, set_wire,
       "native (default), fp8 (the topology's encoding), fp8_e4m3, fp8_e4m3_fnuz: data crosses "
       "links as fp8 blocks (float32, float16, bfloat16); shows wire bytes and the choice"},
      {"--wire-threshold", "B", false, set_wire_threshold,
       "with --wire fp8: bytes of the largest group count from which fp8 is taken (default -1: "
       "the cost model's threshold; 0: always)"},
      {"--helper-devices", "D0,D1,...", false, set_helper_devices,
       "helpers hosted by the --active processes, one device each (with --mode single)"},
      {"--in-place", "", false, set_switch<&options::in_place>,
       "the call runs in place, in NCCL's layout (not for all-to-all)"},
      {"--run", "", false, set_switch<&options::run>,
       "execute the plan on the CPU executor with random data and check it against a naive "
       "reference (needs --count or --counts); exit 1 on any wrong element"},
      {"--json", "", false, set_switch<&options::json>, "print one JSON object instead of text"},
      {"--verify", "", false, set_switch<&options::verify>,
       "check dataflow and structure at representative counts; exit 1 on failure"},
      {"--full", "", false, set_switch<&options::full>, "list every operation of every group"},
  };
  return table;
}

const flag* find_flag(std::string_view name) {
  for (const flag& f : flags())
    if (f.name == name) return &f;
  return nullptr;
}

std::string describe(const relay::schedule_spec& s) {
  return fmt::format("{} A={} N={} {} {}{}", relay::name(s.coll), s.active, s.ranks,
                     relay::name(s.mode), relay::name(s.route),
                     s.tiles != 0 ? fmt::format(" T={}", s.tiles) : "");
}

// The checks that need every flag: required flags, a schedule for the spec, a topology that
// fits, one count per group.
std::string validate(const options& o, const std::vector<std::string_view>& seen) {
  for (const flag& f : flags())
    if (f.required && std::find(seen.begin(), seen.end(), f.name) == seen.end())
      return fmt::format("missing required flag {}", f.name);
  if (const char* why = relay::spec_error(o.spec))
    return fmt::format("no schedule for {}: {}", describe(o.spec), why);
  if (std::string error; !relay::cli::parse_topology_option(o.topology, o.spec.ranks, error))
    return "--topology: " + error;
  if (std::find(seen.begin(), seen.end(), "--op") != seen.end() && !relay::reduces(o.spec.coll))
    return fmt::format("--op {}: {} does not reduce (only allreduce and reduce-scatter do)",
                       relay::name(o.op), relay::name(o.spec.coll));
  const auto groups = static_cast<std::size_t>(o.spec.groups());
  if (o.counts_per_group && o.counts.size() != groups)
    return fmt::format("--counts gives {} counts; {} has {} group{}", o.counts.size(),
                       describe(o.spec), groups, groups == 1 ? "" : "s");
  if (!o.helper_devices.empty()) {
    const auto helpers = static_cast<int>(o.helper_devices.size());
    if (o.spec.mode != relay::mode::single)
      return "--helper-devices: hosted helpers hold no buffers, so the processes run one group "
             "(--mode single)";
    if (o.spec.active + helpers != o.spec.ranks)
      return fmt::format("--helper-devices names {} helper{}; --active {} of --ranks {} leaves {}",
                         helpers, helpers == 1 ? "" : "s", o.spec.active, o.spec.ranks,
                         o.spec.ranks - o.spec.active);
  }
  if (o.in_place && !relay::has_in_place(o.spec.coll))
    return fmt::format("--in-place: {} has no in-place form", relay::name(o.spec.coll));
  if (relay::is_fp8(o.wire) && !relay::fp8_wire_dtype(o.type))
    return fmt::format("--wire {}: takes float32, float16 or bfloat16, not {}", relay::name(o.wire),
                       relay::name(o.type));
  if (std::find(seen.begin(), seen.end(), "--wire-threshold") != seen.end() &&
      !relay::is_fp8(o.wire))
    return "--wire-threshold needs --wire fp8 (or fp8_e4m3, fp8_e4m3_fnuz)";
  if (o.run && o.counts.empty()) return "--run needs --count or --counts";
  if (o.run) {
    // The estimate bounds the measured peak (tests/tools/relay_plan/run_memory.py checks it).
    const std::int64_t bytes = run_memory_bytes(o);
    const relay::cli::available_memory available = relay::cli::host_memory_available();
    if (bytes > max_run_bytes)
      return fmt::format("--run would need about {} ({} bytes) of host memory; the limit is {}",
                         relay::cli::format_bytes(bytes), bytes,
                         relay::cli::format_bytes(max_run_bytes));
    if (bytes > available.bytes)
      return fmt::format("--run would need about {} ({} bytes) of host memory; {} available ({})",
                         relay::cli::format_bytes(bytes), bytes,
                         relay::cli::format_bytes(available.bytes), available.source);
  }
  return {};
}

}  // namespace

relay::hosting hosting_of(const options& o) {
  relay::hosting h;
  h.processes = o.spec.active;
  h.devices = o.helper_devices;
  return h;
}

std::vector<std::int64_t> group_counts(const options& o) {
  if (o.counts.empty() || o.counts_per_group) return o.counts;
  return std::vector<std::int64_t>(static_cast<std::size_t>(o.spec.groups()), o.counts.front());
}

parse_result parse_arguments(std::span<const std::string_view> args) {
  parse_result r;
  if (std::any_of(args.begin(), args.end(),
                  [](std::string_view a) { return a == "--help" || a == "-h"; })) {
    r.opts.help = true;
    return r;
  }
  if (std::any_of(args.begin(), args.end(), [](std::string_view a) { return a == "--version"; })) {
    r.opts.version = true;
    return r;
  }
  std::vector<std::string_view> seen;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i], value;
    const std::size_t eq = arg.find('=');
    const bool inline_value = arg.starts_with("--") && eq != std::string_view::npos;
    if (inline_value) value = arg.substr(eq + 1), arg = arg.substr(0, eq);
    const flag* f = find_flag(arg);
    if (f == nullptr) {
      r.error = fmt::format("{} {}", arg.starts_with("-") ? "unknown flag" : "unexpected argument",
                            relay::cli::quoted(arg));
      return r;
    }
    if (std::find(seen.begin(), seen.end(), f->name) != seen.end()) {
      r.error = fmt::format("{} is given twice", f->name);
      return r;
    }
    seen.push_back(f->name);
    if (f->value_name.empty()) {
      if (inline_value) {
        r.error = fmt::format("{} takes no value", f->name);
        return r;
      }
    } else if (!inline_value) {
      if (i + 1 == args.size() || args[i + 1].starts_with("--")) {
        r.error = fmt::format("{} needs a value ({})", f->name, f->value_name);
        return r;
      }
      value = args[++i];
    }
    if (std::string error = f->set(r.opts, value); !error.empty()) {
      r.error = fmt::format("{}: {}", f->name, error);
      return r;
    }
  }
  if (std::find(seen.begin(), seen.end(), "--count") != seen.end() &&
      std::find(seen.begin(), seen.end(), "--counts") != seen.end()) {
    r.error = "--count and --counts exclude each other";
    return r;
  }
  // Pipelined without --tiles: the default depth both tools use (printed with the schedule).
  if (r.opts.spec.route == relay::route::pipelined && r.opts.spec.tiles == 0)
    r.opts.spec.tiles = relay::cli::default_tiles;
  r.error = validate(r.opts, seen);
  return r;
}

std::string usage() {
  std::string out =
      "usage: relay-plan --collective C --active A --ranks N --mode M [options]\n"
      "\n"
      "Prints a relay schedule: its quanta, each step's transfers and reductions (symbolic in\n"
      "the per-group count n), the per-link load, the beta cost against the direct baseline and\n"
      "the lower bound, scratch per role and alpha-beta times. With --count or --counts it also\n"
      "shows one call's concrete chunk sizes, scratch bytes per rank and predicted time.\n"
      "\n";
  for (const flag& f : flags()) {
    const std::string left = fmt::format("{} {}", f.name, f.value_name);
    std::string_view help = f.help;
    // Word-wrapped into the right column so that no line passes 100 characters.
    for (bool first = true; !help.empty(); first = false) {
      std::size_t cut = help.size();
      if (cut > help_width) cut = help.rfind(' ', help_width);
      fmt::format_to(std::back_inserter(out), "  {:<25} {}\n", first ? left : "",
                     help.substr(0, cut));
      help.remove_prefix(std::min(help.size(), cut + 1));
    }
  }
  out +=
      "  --help, -h                print this and exit\n"
      "  --version                 print relay-plan's version and exit\n"
      "\n"
      "Exit status: 0 success, 1 --verify or --run found a failure, 2 a usage error (the reason\n"
      "is on stderr, one line).\n";
  return out;
}

}  // namespace relay_plan
