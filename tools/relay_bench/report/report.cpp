#include "report/report.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>
#include <chrono>
#include <cmath>
#include <ctime>

#include "relay/core/names.hpp"
#include "report/conventions.hpp"
#include "support/cli.hpp"

namespace relay::bench {

std::string_view name(base_source b) {
  constexpr name_table<base_source, 3> names{{"none", "direct", "nccl"}};
  return names(b);
}

void print_wrong_form(std::string_view who, const row& r, bool in_place, const form_result& f) {
  fmt::print(stderr, "relay-bench: WRONG: {}{} A={} {} {} B {}: {} elements, first {}\n", who,
             name(r.shape.coll), r.shape.active, name(r.shape.mode), r.bytes,
             in_place ? "in-place" : "out-of-place", f.wrong, f.first_wrong);
}

void print_wrong_total(std::FILE* f, bool checked, std::int64_t wrong) {
  fmt::print(f, "#\n# wrong elements (all ranks): {}{}\n#\n",
             checked ? std::to_string(wrong) : "not checked",
             checked ? (wrong == 0 ? " OK" : " FAILED") : "");
}

void print_run_header(std::FILE* f, const run_info& info, std::string_view last) {
  fmt::print(f, "# relay-bench {}: {}\n# {} on {}\n# {}\n", cli::version, info.command, info.date,
             info.host, last);
}

run_info describe_run(const options& o, std::string executor, std::string baseline) {
  run_info info;
  info.command = o.command_line;
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &utc);
  info.date = date;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) info.host = host;
  info.executor = std::move(executor);
  info.baseline = std::move(baseline);
  return info;
}

namespace {

// One form's derived numbers, shared by the three writers.
struct form_numbers {
  bool ran = false;
  double time_us = NAN, algbw = NAN, busbw = NAN, over_predicted = NAN;
  std::int64_t wrong = -1;
  bool base_ran = false;
  double base_us = NAN, base_busbw = NAN, speedup = NAN;
  std::int64_t base_wrong = -1;
  wire_format wire = wire_format::native;
  double max_relative_error = NAN;
};

form_numbers numbers(const row& r, const form_pair& f) {
  form_numbers x;
  x.ran = f.relay.ran;
  if (!x.ran) return x;
  const double t = f.relay.seconds;
  x.time_us = t * 1e6;
  x.algbw = algbw_gbps(r.bytes, t);
  x.busbw = busbw_gbps(r.shape.coll, r.shape.active, r.bytes, t);
  x.over_predicted = r.predicted > 0 ? t / r.predicted : NAN;
  x.wrong = f.relay.wrong;
  x.wire = f.relay.wire;
  x.max_relative_error = f.relay.max_relative_error;
  x.base_ran = f.base.ran;
  if (x.base_ran) {
    x.base_us = f.base.seconds * 1e6;
    x.base_busbw = busbw_gbps(r.shape.coll, r.shape.active, r.bytes, f.base.seconds);
    x.speedup = t > 0 ? f.base.seconds / t : NAN;
    x.base_wrong = f.base.wrong;
  }
  return x;
}

std::string fixed(double v, int decimals) {
  return std::isnan(v) ? std::string("n/a") : fmt::format("{:.{}f}", v, decimals);
}

// Microseconds with as many decimals as fit, as nccl-tests prints times.
std::string micros(double us) {
  return fixed(us, us < 1000 ? 2 : us < 100000 ? 1 : 0);
}

// A ratio in 3 significant figures or so: 0.95, 12.4, 140.
std::string ratio_text(double v) {
  return fixed(v, v < 10 ? 2 : v < 100 ? 1 : 0);
}

std::string wrong_text(std::int64_t wrong) {
  return wrong < 0 ? std::string("n/a") : std::to_string(wrong);
}

std::string_view redop(const options& o, collective c) {
  return reduces(c) ? name(o.op) : std::string_view("none");
}

std::string topology_text(const topology& t) {
  const char* kind = t.kind == fabric::mesh       ? "one link per pair"
                     : t.kind == fabric::switched ? "one switch port per GPU"
                                                  : "a link matrix";
  return fmt::format("{} ({}, {:g} GB/s each way, {:g} us a step)", t.name, kind,
                     t.link_bandwidth / 1e9, t.step_latency * 1e6);
}

std::string csv_number(double v) {
  return std::isnan(v) ? std::string() : fmt::format("{:.6g}", v);
}
std::string csv_count(std::int64_t v) {
  return v < 0 ? std::string() : std::to_string(v);
}
std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += fmt::format("\\{}", c);
    else if (static_cast<unsigned char>(c) < 0x20)
      out += fmt::format("\\u{:04x}", static_cast<int>(c));
    else
      out += c;
  }
  return out + "\"";
}

// Table columns, nccl-tests' first and in its order (a parser written for nccl-tests output reads
// them): size count type redop root, then time algbw busbw #wrong out of place and in place.
// relay's own columns follow: route predicted, then m/p base speedup out of place and in place.
constexpr int lead_widths[] = {12, 14, 10, 8, 6};
constexpr int nccl_widths[] = {9, 8, 8, 6};
constexpr int relay_lead_widths[] = {6, 9};
constexpr int relay_widths[] = {6, 9, 7};

template <std::size_t K>
std::string columns(const int (&widths)[K], const std::vector<std::string>& cells) {
  std::string out;
  for (std::size_t i = 0; i < K; ++i)
    out += fmt::format(" {:>{}}", cells[i], widths[i]);
  return out;
}

std::string nccl_cells(const row& r, const form_pair& fp) {
  const form_numbers x = numbers(r, fp);
  if (!x.ran) return columns(nccl_widths, {"n/a", "n/a", "n/a", "n/a"});
  return columns(nccl_widths,
                 {micros(x.time_us), fixed(x.algbw, 2), fixed(x.busbw, 2), wrong_text(x.wrong)});
}

// With --wire fp8, two more per form: the wire relay's plans took at that size, and the checked
// run's largest relative error against the exact result.
constexpr int wire_widths[] = {13, 9};

std::string wire_cells(const row& r, const form_pair& fp) {
  const form_numbers x = numbers(r, fp);
  if (!x.ran) return columns(wire_widths, {"n/a", "n/a"});
  return columns(wire_widths,
                 {std::string(name(x.wire)), std::isnan(x.max_relative_error)
                                                 ? std::string("-")
                                                 : fmt::format("{:.2e}", x.max_relative_error)});
}

std::string relay_cells(const row& r, const form_pair& fp) {
  const form_numbers x = numbers(r, fp);
  if (!x.ran) return columns(relay_widths, {"n/a", "n/a", "n/a"});
  return columns(relay_widths,
                 {ratio_text(x.over_predicted), micros(x.base_us), fixed(x.speedup, 2)});
}

}  // namespace

void print_table_header(std::FILE* f, const options& o, const call_shape& s,
                        std::string_view baseline, const run_info& info) {
  fmt::print(f, "#\n# relay-bench: {}  A={}  N={}  mode={}  route={}{}  dtype={}  op={}\n",
             name(s.coll), s.active, s.ranks, name(s.mode), name(o.route),
             s.permille != 0                      ? fmt::format(" ({} permille)", s.permille)
             : o.route == route_choice::pipelined ? fmt::format(" (T={} tiles)", s.tiles)
                                                  : std::string(),
             name(o.type), redop(o, s.coll));
  fmt::print(f, "#   executor: {}\n", info.executor);
  fmt::print(f, "#   predicted: the alpha-beta cost model on {}\n", topology_text(o.topo));
  fmt::print(f, "#   baseline: {}; speedup = baseline time / relay time\n", baseline);
  const bool wire = o.wire != wire_format::native;
  if (wire)
    fmt::print(f,
               "#   wire: {} asked for relay's plans (the baseline runs natively), taken from {} "
               "of a group's count; maxrelerr: the checked run's largest |r - S| / |S|\n",
               name(o.wire),
               o.wire_threshold >= 0 ? fmt::format("{} bytes", o.wire_threshold)
                                     : std::string("the cost model's threshold"));
  fmt::print(f,
             "#   timing: median of {} iterations after {} warm-up runs (and one per rotated "
             "buffer set); check: {}; "
             "busbw = algbw * {:.3f}; m/p = measured / predicted\n#\n",
             o.iterations, o.warmup, o.check ? "every element" : "off",
             bus_factor(s.coll, s.active));
  const int lead = static_cast<int>(columns(lead_widths, {"", "", "", "", ""}).size());
  const int block = static_cast<int>(columns(nccl_widths, {"", "", "", ""}).size());
  const int relay_lead = static_cast<int>(columns(relay_lead_widths, {"", ""}).size());
  const int relay_block = static_cast<int>(columns(relay_widths, {"", "", ""}).size());
  fmt::print(f, "#{:>{}}{:^{}}{:^{}}{:>{}}{:^{}}{:^{}}\n", "", lead - 1, "out-of-place", block,
             "in-place", block, "", relay_lead, "out-of-place", relay_block, "in-place",
             relay_block);
  fmt::print(f, "#{}{}{}{}{}{}{}\n",
             columns(lead_widths, {"size", "count", "type", "redop", "root"}).substr(1),
             columns(nccl_widths, {"time", "algbw", "busbw", "#wrong"}),
             columns(nccl_widths, {"time", "algbw", "busbw", "#wrong"}),
             columns(relay_lead_widths, {"route", "predicted"}),
             columns(relay_widths, {"m/p", "base", "speedup"}),
             columns(relay_widths, {"m/p", "base", "speedup"}),
             wire ? columns(wire_widths, {"wire", "maxrelerr"}) +
                        columns(wire_widths, {"wire", "maxrelerr"})
                  : std::string());
  fmt::print(f, "#{}{}{}{}{}{}\n",
             columns(lead_widths, {"(B)", "(elements)", "", "", ""}).substr(1),
             columns(nccl_widths, {"(us)", "(GB/s)", "(GB/s)", ""}),
             columns(nccl_widths, {"(us)", "(GB/s)", "(GB/s)", ""}),
             columns(relay_lead_widths, {"", "(us)"}), columns(relay_widths, {"", "(us)", ""}),
             columns(relay_widths, {"", "(us)", ""}));
}

// root is -1 as nccl-tests prints it for collectives without a root (all of relay's).
void print_table_row(std::FILE* f, const options& o, const row& r) {
  const bool wire = o.wire != wire_format::native;
  fmt::print(
      f, "{}{}{}{}{}{}{}\n",
      columns(lead_widths, {std::to_string(r.bytes), std::to_string(r.count),
                            std::string(name(o.type)), std::string(redop(o, r.shape.coll)), "-1"}),
      nccl_cells(r, r.out_of_place), nccl_cells(r, r.in_place),
      columns(relay_lead_widths, {std::string(name(r.chosen)), micros(r.predicted * 1e6)}),
      relay_cells(r, r.out_of_place), relay_cells(r, r.in_place),
      wire ? wire_cells(r, r.out_of_place) + wire_cells(r, r.in_place) : std::string());
}
namespace {

constexpr const char* csv_fields[] = {"collective",
                                      "active",
                                      "ranks",
                                      "mode",
                                      "executor",
                                      "route",
                                      "topology",
                                      "dtype",
                                      "redop",
                                      "size_bytes",
                                      "count",
                                      "n",
                                      "form",
                                      "time_us",
                                      "algbw_gbps",
                                      "busbw_gbps",
                                      "wrong",
                                      "predicted_us",
                                      "measured_over_predicted",
                                      "baseline",
                                      "baseline_time_us",
                                      "baseline_busbw_gbps",
                                      "baseline_wrong",
                                      "speedup",
                                      "buffer_sets",
                                      "host_memory_estimate_bytes",
                                      "direct_predicted_us",
                                      "predicted_speedup_over_direct",
                                      "wire",
                                      "max_relative_error"};

// The fields of one row and form, in csv_fields' order, as text ("" where not measured).
std::vector<std::string> fields(const options& o, const row& r, bool in_place) {
  const form_numbers x = numbers(r, in_place ? r.in_place : r.out_of_place);
  return {std::string(name(r.shape.coll)),
          std::to_string(r.shape.active),
          std::to_string(r.shape.ranks),
          std::string(name(r.shape.mode)),
          std::string(name(o.executor)),
          std::string(name(r.chosen)),
          o.topo.name,
          std::string(name(o.type)),
          std::string(redop(o, r.shape.coll)),
          std::to_string(r.bytes),
          std::to_string(r.count),
          std::to_string(r.n),
          in_place ? "in-place" : "out-of-place",
          csv_number(x.time_us),
          csv_number(x.algbw),
          csv_number(x.busbw),
          csv_count(x.wrong),
          csv_number(r.predicted * 1e6),
          csv_number(x.over_predicted),
          x.base_ran ? std::string(name(r.base)) : std::string(),
          csv_number(x.base_us),
          csv_number(x.base_busbw),
          csv_count(x.base_wrong),
          csv_number(x.speedup),
          std::to_string(r.sets),
          r.host_memory > 0 ? std::to_string(r.host_memory) : std::string(),
          csv_number(r.direct_predicted * 1e6),
          csv_number(r.predicted > 0 ? r.direct_predicted / r.predicted : NAN),
          x.ran ? std::string(name(x.wire)) : std::string(),
          csv_number(x.max_relative_error)};
}

// Which fields are numbers (unquoted in JSON).
// By name, so that a column added anywhere keeps the others' kinds.
constexpr bool numeric_field(std::size_t i) {
  constexpr std::string_view text[] = {"collective", "mode",  "executor", "route",    "topology",
                                       "dtype",      "redop", "form",     "baseline", "wire"};
  for (std::string_view t : text)
    if (t == csv_fields[i]) return false;
  return true;
}

}  // namespace

void print_csv_header(std::FILE* f) {
  fmt::print(f, "{}\n", fmt::join(csv_fields, ","));
}

void print_csv_rows(std::FILE* f, const options& o, const row& r) {
  for (bool in_place : {false, true}) {
    if (in_place && !measures_in_place(o, r.shape.coll)) continue;
    fmt::print(f, "{}\n", fmt::join(fields(o, r, in_place), ","));
  }
}

void print_json(std::FILE* f, const options& o, const run_info& info,
                const std::vector<row>& rows) {
  fmt::print(f, "{{\n  \"tool\": \"relay-bench\",\n  \"relay_version\": {},\n",
             json_string(cli::version));
  fmt::print(f, "  \"command\": {},\n  \"date\": {},\n  \"host\": {},\n", json_string(info.command),
             json_string(info.date), json_string(info.host));
  fmt::print(f, "  \"executor\": {},\n  \"nccl\": {},\n  \"topology\": {},\n",
             json_string(info.executor), json_string(info.baseline),
             json_string(topology_text(o.topo)));
  fmt::print(f,
             "  \"settings\": {{\"iterations\": {}, \"warmup\": {}, \"check\": {}, \"seed\": {}, "
             "\"alignment\": {}, \"route\": {}}},\n",
             o.iterations, o.warmup, o.check ? "true" : "false", o.seed, o.alignment,
             json_string(name(o.route)));
  fmt::print(f, "  \"rows\": [");
  bool first = true;
  for (const row& r : rows)
    for (bool in_place : {false, true}) {
      if (in_place && !measures_in_place(o, r.shape.coll)) continue;
      const std::vector<std::string> v = fields(o, r, in_place);
      std::string object;
      for (std::size_t i = 0; i < v.size(); ++i) {
        const std::string value = v[i].empty()       ? std::string("null")
                                  : numeric_field(i) ? v[i]
                                                     : json_string(v[i]);
        object += fmt::format("{}\"{}\": {}", i == 0 ? "" : ", ", csv_fields[i], value);
      }
      fmt::print(f, "{}\n    {{{}}}", first ? "" : ",", object);
      first = false;
    }
  fmt::print(f, "\n  ]\n}}\n");
}

}  // namespace relay::bench
