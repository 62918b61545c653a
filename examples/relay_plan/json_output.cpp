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
  w.member("topology", r.topo.name);
  w.member("link_bandwidth", r.topo.link_bandwidth);
  w.member("step_latency", r.topo.step_latency);
  w.member("dtype", relay::name(r.opts.type));
  w.member("element_size", r.element_size());
  w.member("alignment", r.opts.alignment);
  w.member("op", relay::name(r.opts.op));
  w.member("in_place", r.opts.in_place);
  w.member("steps", r.sched.header.steps);
  w.key("quanta");
  w.begin_array();
  for (const quantum_info& q : r.quanta) {
    w.begin_object();
    w.member("symbol", q.symbol);
    w.member("name", q.name);
    w.member("rule", q.rule);
    exact_pair(w, "share", q.share);
    w.end_object();
  }
  w.end_array();
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
  w.key("scratch");
  w.begin_object();
  w.member("active", r.scratch.active_formula);
  w.member("helper", r.scratch.helper_formula);
  w.member("active_partial", r.scratch.active_partial_formula);
  w.member("helper_partial", r.scratch.helper_partial_formula);
  exact_pair(w, "active_share", r.scratch.active_share);
  exact_pair(w, "helper_share", r.scratch.helper_share);
  exact_pair(w, "active_rank_total", r.scratch.active_rank_total);
  exact_pair(w, "helper_rank_total", r.scratch.helper_rank_total);
  w.end_object();

  const operation_counts& c = r.operations;
  w.key("operations");
  w.begin_object();
  w.member("total", c.total);
  w.member("link_transfers", c.link_transfers);
  w.member("local_copies", c.local_copies);
  w.member("reductions", c.reductions);
  w.inline_array("max_per_rank_per_step", c.max_per_rank);
  w.end_object();
}

void timings(json_writer& w, const plan_report& r) {
  w.key("times");
  w.begin_array();
  for (const timing& t : r.timings) {
    w.begin_object();
    w.member("bytes", t.bytes);
    w.member("count", t.count);
    w.member("seconds", t.relay_seconds);
    w.member("direct_seconds", t.direct_seconds);
    std::optional<double> speedup;
    if (t.relay_seconds && t.direct_seconds) speedup = *t.direct_seconds / *t.relay_seconds;
    w.member("speedup", speedup);
    w.member("router", relay::name(t.router.route));
    w.member("router_tiles", t.router.tiles);
    w.end_object();
  }
  w.end_array();
}

void concrete(json_writer& w, const plan_report& r) {
  const concrete_info& c = *r.concrete;
  w.inline_array("counts", c.counts);
  w.key("group_quanta");
  w.begin_array();
  for (const relay::symbol_values& v : c.symbol_values) {
    w.begin_object();
    for (std::size_t i = 0; i < r.quanta.size(); ++i)
      w.member(r.quanta[i].symbol, v[2 + i]);
    w.end_object();
  }
  w.end_array();
  w.inline_array("scratch_bytes", c.scratch_bytes);
  w.member("plan_operations", std::uint64_t{c.plan_operations});
  w.member("plan_phases", std::uint64_t{c.plan_phases});
  w.member("predicted_seconds", c.predicted_seconds);
  w.member("direct_predicted_seconds", c.direct_predicted_seconds);
}

void wire(json_writer& w, const plan_report& r) {
  const wire_info& x = *r.wire;
  w.key("wire");
  w.begin_object();
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
  w.key("times_seconds");
  w.begin_array(true);
  for (const std::optional<double>& s : x.seconds)
    w.value(s);
  w.end_array();
  if (x.choice) {
    w.member("taken", relay::name(x.choice->taken));
    w.member("choice", relay::describe(*x.choice));
    w.member("busiest_link_bytes", x.busiest_link_bytes);
    w.member("link_bytes", x.link_bytes);
    w.member("native_busiest_link_bytes", x.native_busiest_link_bytes);
    w.member("native_link_bytes", x.native_link_bytes);
  }
  w.end_object();
}

// `wrong` at the top level (what scripts check first), the details under `run`.
void run(json_writer& w, const run_result& run) {
  std::optional<std::int64_t> wrong;
  if (run.status.ok()) wrong = run.wrong;
  w.member("wrong", wrong);
  w.key("run");
  w.begin_object();
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
  w.end_object();
}

void verification(json_writer& w, const relay::check_failure& f) {
  w.key("verify");
  w.begin_object();
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
  w.end_object();
}

}  // namespace

std::string render_json(const plan_report& r) {
  json_writer w;
  w.begin_object();
  header(w, r);
  costs(w, r);
  links(w, r);
  resources(w, r);
  timings(w, r);
  if (r.concrete) concrete(w, r);
  if (r.wire) wire(w, r);
  if (r.verified) verification(w, *r.verified);
  if (r.run) run(w, *r.run);
  w.end_object();
  return w.str();
}

}  // namespace relay_plan
