#include "json_output.hpp"

#include <optional>
#include <string>
#include <vector>

#include "json_writer.hpp"
#include "relay/core/collective.hpp"
#include "relay/cost/wire.hpp"

namespace relay_plan {
namespace {

std::optional<std::string> exact(std::optional<relay::ratio> r) {
  if (!r) return std::nullopt;
  return format_ratio(*r);
}
std::optional<double> decimal(std::optional<relay::ratio> r) {
  if (!r) return std::nullopt;
  return r->to_double();
}

// A ratio as two members: `name` the exact fraction, `name_n` its decimal value.
void exact_pair(json_writer& w, const std::string& name, std::optional<relay::ratio> r) {
  w.member(name, exact(r));
  w.member(name + "_n", decimal(r));
}

void header(json_writer& w, const plan_report& r) {
  const relay::schedule_spec& s = r.sched.header.spec;
  w.member("collective", relay::name(s.coll));
  w.member("active", s.active);
  w.member("ranks", s.ranks);
  w.member("helpers", s.helpers());
  w.member("mode", relay::name(s.mode));
  w.member("groups", s.groups());
  w.member("schedule", relay::name(s.route));
  w.member("permille", s.permille);
  w.member("tiles", s.tiles);
  w.member("description", r.sched.header.description);
  if (!r.opts.helper_devices.empty()) {
    // Which process runs each hosted helper (--helper-devices): priced as any helper.
    const relay::hosting h = hosting_of(r.opts);
    std::vector<int> hosted(static_cast<std::size_t>(h.ranks() - h.processes));
    for (std::size_t i = 0; i < hosted.size(); ++i)
      hosted[i] = h.host_of(h.processes + static_cast<int>(i));
    w.inline_array("helper_devices", h.devices);
    w.inline_array("helper_hosts", hosted);
  }
  w.member("topology", r.topo.name);
  w.member("link_bandwidth", r.topo.link_bandwidth);
  w.member("step_latency", r.topo.step_latency);
  w.member("call_latency", r.topo.call_latency);
  w.member("dtype", relay::name(r.opts.type));
  w.member("element_size", r.element_size());
  w.member("alignment", r.opts.alignment);
  w.member("op", relay::name(r.opts.op));
  w.member("in_place", r.opts.in_place);
  w.member("steps", r.sched.header.steps);
  w.object_array("quanta", r.quanta, [&](const quantum_info& q) {
    w.member("symbol", q.symbol);
    w.member("name", q.name);
    w.member("rule", q.rule);
    exact_pair(w, "share", q.share);
  });
}

void costs(json_writer& w, const plan_report& r) {
  w.member("routable", r.beta.routable());
  exact_pair(w, "beta_cost", r.beta.value);
  std::vector<std::optional<std::string>> step_exact;
  std::vector<std::optional<double>> step_decimal;
  for (const beta_figure& b : r.step_beta)
    step_exact.push_back(exact(b.value)), step_decimal.push_back(decimal(b.value));
  w.inline_array("step_beta", step_exact);
  w.inline_array("step_beta_n", step_decimal);
  exact_pair(w, "direct_cost", r.direct_beta.value);
  w.member("ceiling", decimal(r.ceiling));
  w.member("ceiling_exact", exact(r.ceiling));
  exact_pair(w, "lower_bound", r.bound ? std::optional{r.bound->value} : std::nullopt);
  std::optional<std::string> note;
  if (r.bound && !r.bound->note.empty()) note = r.bound->note;
  w.member("lower_bound_note", note);
}

void matrix(json_writer& w, const std::vector<relay::ratio>& loads, int ranks, bool exact) {
  w.begin_array();
  for (int from = 0; from < ranks; ++from) {
    w.begin_array(true);
    for (int to = 0; to < ranks; ++to) {
      const relay::ratio x = loads[static_cast<std::size_t>(from * ranks + to)];
      exact ? w.value(format_ratio(x)) : w.value(x.to_double());
    }
    w.end_array();
  }
  w.end_array();
}

void links(json_writer& w, const plan_report& r) {
  const int ranks = r.sched.header.spec.ranks;
  w.key("link_matrix");
  matrix(w, r.loads, ranks, true);
  w.key("link_matrix_n");
  matrix(w, r.loads, ranks, false);
  w.key("step_link_matrix_n");
  w.begin_array();
  for (const auto& step : r.step_loads)
    matrix(w, step, ranks, false);
  w.end_array();
}

void resources(json_writer& w, const plan_report& r) {
  w.object("scratch", [&] {
    w.member("active", r.scratch.active_formula);
    w.member("helper", r.scratch.helper_formula);
    w.member("active_partial", r.scratch.active_partial_formula);
    w.member("helper_partial", r.scratch.helper_partial_formula);
    exact_pair(w, "active_share", r.scratch.active_share);
    exact_pair(w, "helper_share", r.scratch.helper_share);
    exact_pair(w, "active_rank_total", r.scratch.active_rank_total);
    exact_pair(w, "helper_rank_total", r.scratch.helper_rank_total);
  });
  const operation_counts& c = r.operations;
  w.object("operations", [&] {
    w.member("total", c.total);
    w.member("link_transfers", c.link_transfers);
    w.member("local_copies", c.local_copies);
    w.member("reductions", c.reductions);
    w.inline_array("max_per_rank_per_step", c.max_per_rank);
  });
}

void timings(json_writer& w, const plan_report& r) {
  w.object_array("times", r.timings, [&](const timing& t) {
    w.member("bytes", t.bytes);
    w.member("count", t.count);
    w.member("seconds", t.relay_seconds);
    w.member("direct_seconds", t.direct_seconds);
    std::optional<double> speedup;
    if (t.relay_seconds && t.direct_seconds) speedup = *t.direct_seconds / *t.relay_seconds;
    w.member("speedup", speedup);
    w.member("router", relay::name(t.router.route));
    w.member("router_tiles", t.router.tiles);
  });
}

void concrete(json_writer& w, const plan_report& r) {
  if (!r.concrete) return;
  const concrete_info& c = *r.concrete;
  w.inline_array("counts", c.counts);
  w.object_array("group_quanta", c.symbol_values, [&](const relay::symbol_values& v) {
    for (std::size_t i = 0; i < r.quanta.size(); ++i)
      w.member(r.quanta[i].symbol, v[2 + i]);
  });
  w.inline_array("scratch_bytes", c.scratch_bytes);
  w.member("plan_operations", std::uint64_t{c.plan_operations});
  w.member("plan_phases", std::uint64_t{c.plan_phases});
  w.member("predicted_seconds", c.predicted_seconds);
  w.member("direct_predicted_seconds", c.direct_predicted_seconds);
}

// One call's link bytes as two members: `prefix`busiest_link_bytes and `prefix`link_bytes.
void traffic(json_writer& w, const std::string& prefix, const link_traffic& t) {
  w.member(prefix + "busiest_link_bytes", t.busiest);
  w.member(prefix + "link_bytes", t.total);
}

void wire(json_writer& w, const plan_report& r) {
  if (!r.wire) return;
  const wire_info& x = *r.wire;
  w.object("wire", [&] {
    w.member("format", relay::name(x.format));
    w.member("element_width", x.widths.element.to_double());
    std::optional<double> beta;
    std::optional<std::string> exact;
    if (x.beta.routable()) beta = x.beta.value->to_double(), exact = format_ratio(*x.beta.value);
    w.member("beta_cost_n", beta);
    w.member("beta_cost", exact);
    std::optional<std::uint64_t> threshold;
    if (x.threshold_bytes != relay::fp8_never) threshold = x.threshold_bytes;
    w.member("threshold_bytes", threshold);
    w.inline_array("times_seconds", x.seconds);
    if (x.choice) {
      w.member("taken", relay::name(x.choice->taken));
      w.member("choice", relay::describe(*x.choice));
      traffic(w, "", x.traffic);
      traffic(w, "native_", x.native_traffic);
    }
  });
}

// `wrong` at the top level (what scripts check first), the details under `run`.
void run(json_writer& w, const plan_report& r) {
  if (!r.run) return;
  const run_result& run = *r.run;
  std::optional<std::int64_t> wrong;
  if (run.status.ok()) wrong = run.wrong;
  w.member("wrong", wrong);
  w.object("run", [&] {
    w.member("ok", run.ok());
    w.member("status", run.status.to_string());
    w.member("checked", run.checked);
    w.member("wrong", wrong);
    std::optional<std::string> first;
    if (run.wrong > 0) first = run.first_wrong;
    w.member("first_wrong", first);
    w.member("seconds", run.seconds);
    w.member("memory_estimate_bytes", run.memory_estimate);
    w.member("max_relative_error", run.max_relative_error);
  });
}

void verification(json_writer& w, const plan_report& r) {
  if (!r.verified) return;
  const relay::check_failure& f = *r.verified;
  w.object("verify", [&] {
    w.member("ok", f.ok());
    if (!f.ok()) {
      w.member("what", f.what);
      w.member("group", f.group);
      w.member("rank", f.rank);
      w.member("step", f.step);
      w.member("count", f.count);
      w.member("position", f.position);
      w.member("in_place", f.in_place);
    }
    w.member("message", describe_check(f));
  });
}

}  // namespace

std::string render_json(const plan_report& r) {
  json_writer w;
  w.begin_object();
  // The report's parts in order; a part the report lacks (concrete, wire, verify, run) writes
  // nothing.
  for (auto* part : {header, costs, links, resources, timings, concrete, wire, verification, run})
    part(w, r);
  w.end_object();
  return w.str();
}

}  // namespace relay_plan
