#include "report.hpp"

#include <algorithm>
#include <array>
#include <iterator>

#include <fmt/format.h>

#include "call.hpp"
#include "relay/cost/choose.hpp"
#include "relay/cost/link_cost.hpp"
#include "relay/cost/route.hpp"
#include "relay/cost/wire.hpp"
#include "relay/schedule/evaluate.hpp"
#include "relay/schedule/generate.hpp"
#include "relay/topology/parse.hpp"

namespace relay_plan {
namespace {

// Message sizes for the alpha-beta table: one group's bytes, from latency-bound to bandwidth-bound
// (the spec's crossovers lie between 2 MB and 48 MB).
constexpr std::array<std::int64_t, 5> timing_bytes{std::int64_t{64} << 10, std::int64_t{1} << 20,
                                                   std::int64_t{16} << 20, std::int64_t{256} << 20,
                                                   std::int64_t{1} << 30};

beta_figure priced(relay::ratio cost) {
  if (cost == relay::unroutable_cost) return {};
  return {cost};
}

std::vector<quantum_info> describe_quanta(const relay::schedule_header& h,
                                          const symbol_names& symbols, std::int64_t alignment) {
  const relay::symbol_shares shares = relay::ideal_shares(h);
  std::vector<quantum_info> out;
  for (int i = 0; i < h.quantum_count; ++i) {
    const char* name = h.quantum_names[static_cast<std::size_t>(i)];
    out.push_back({symbols[static_cast<std::size_t>(2 + i)], name != nullptr ? name : "",
                   format_rule(h, i, symbols, alignment), shares[static_cast<std::size_t>(2 + i)]});
  }
  return out;
}

operation_counts count_operations(const relay::schedule& s) {
  operation_counts c;
  for (const relay::operation& op : s.ops) {  // the pattern, which every group runs
    int& kind = op.phase == relay::phase::reduce                 ? c.reductions
                : s.view().sources_of(op)[0].rank == op.dst.rank ? c.local_copies
                                                                 : c.link_transfers;
    kind += s.header.spec.groups();
    c.total += s.header.spec.groups();
  }
  for (int step = 1; step <= s.header.steps; ++step)
    c.max_per_rank.push_back(relay::max_ops_per_rank(s, step));
  return c;
}

scratch_info describe_scratch(const relay::schedule_header& h, const symbol_names& symbols,
                              const relay::element_widths& w) {
  const relay::symbol_shares shares = relay::ideal_shares(h);
  scratch_info s;
  s.active_formula = format_affine(h.active_scratch, symbols);
  s.helper_formula = format_affine(h.helper_scratch, symbols);
  s.active_share = h.active_scratch.share(shares);
  s.helper_share = h.helper_scratch.share(shares);
  s.has_partials = h.active_partial != relay::affine{} || h.helper_partial != relay::affine{};
  s.active_partial_formula = format_affine(h.active_partial, symbols);
  s.helper_partial_formula = format_affine(h.helper_partial, symbols);
  // Per rank in element widths: its scratch and its partial sums at their width.
  const relay::ratio active = s.active_share + w.partial * h.active_partial.share(shares);
  const relay::ratio helper = s.helper_share + w.partial * h.helper_partial.share(shares);
  if (h.spec.mode == relay::mode::fused) {
    s.active_rank_total = active + relay::ratio{h.spec.groups() - 1} * helper;
    s.helper_rank_total = s.active_rank_total;
  } else {
    s.active_rank_total = active;
    s.helper_rank_total = helper;
  }
  return s;
}

std::optional<double> seconds(const relay::schedule& s, const beta_figure& beta,
                              const relay::topology& t, std::int64_t count, int element_size,
                              const relay::element_widths& w) {
  if (!beta.routable()) return std::nullopt;
  return relay::alpha_beta_seconds(s, t, count, element_size, w);
}

concrete_info make_concrete(const plan_report& r, const std::vector<std::int64_t>& counts,
                            const relay::plan& p) {
  concrete_info c;
  c.counts = counts;
  for (std::int64_t n : counts)
    c.symbol_values.push_back(relay::evaluate_symbols(r.sched.header, n, r.opts.alignment));
  c.scratch_bytes = p.scratch_bytes;
  c.plan_operations = p.ops.size();
  c.plan_phases = p.phases.size();
  // The cost model prices one count for every group: the largest, since the slowest group
  // finishes last.
  const std::int64_t largest = *std::max_element(counts.begin(), counts.end());
  c.predicted_seconds = seconds(r.sched, r.beta, r.topo, largest, r.element_size(), r.widths);
  c.direct_predicted_seconds =
      seconds(r.direct, r.direct_beta, r.topo, largest, r.element_size(), r.widths);
  return c;
}

link_traffic traffic_of(const relay::plan& p) {
  link_traffic t;
  for (const std::uint64_t b : relay::link_bytes(p))
    t.busiest = std::max(t.busiest, b), t.total += b;
  return t;
}

wire_info make_wire(const plan_report& r, const std::vector<std::int64_t>& counts) {
  const options& o = r.opts;
  wire_info w;
  w.format = o.wire == relay::wire_format::fp8 ? relay::wire_of(r.topo.fp8) : o.wire;
  w.widths = relay::fp8_wire_widths(o.type);
  w.beta = priced(relay::beta_cost(r.sched, r.topo, w.widths));
  w.threshold_bytes = relay::fp8_threshold_bytes(o.spec, r.topo, o.type);
  for (const timing& t : r.timings)
    w.seconds.push_back(w.beta.routable() ? std::optional<double>(relay::fp8_predicted_seconds(
                                                r.sched, r.topo, t.count, o.type))
                                          : std::nullopt);
  if (counts.empty()) return w;
  relay::plan p, native;
  relay::plan_request q = make_request(o, counts, &r.topo);
  if (!relay::make_plan(q, p)) return w;
  q.wire = relay::wire_format::native;
  if (!relay::make_plan(q, native)) return w;
  w.choice = p.wire;
  w.traffic = traffic_of(p);
  w.native_traffic = traffic_of(native);
  return w;
}

}  // namespace

plan_report make_report(const options& o) {
  plan_report r;
  r.opts = o;
  r.topo = *relay::parse_topology(o.topology, o.spec.ranks);
  r.widths = relay::widths_of(o.type);
  r.sched = *relay::build_schedule(o.spec);
  // The baseline of the same collective, A, N and mode (no offload, no tiles: direct has none).
  relay::schedule_spec direct = o.spec;
  direct.route = relay::route::direct;
  direct.permille = 0;
  direct.tiles = 0;
  r.direct = *relay::build_schedule(direct);
  const relay::schedule_header& h = r.sched.header;
  r.symbols = symbols_of(h);
  r.quanta = describe_quanta(h, r.symbols, o.alignment);

  for (int step = 1; step <= h.steps; ++step) {
    r.step_beta.push_back(priced(relay::step_beta(r.sched, r.topo, step, r.widths)));
    r.step_loads.push_back(relay::link_loads(r.sched, step, r.widths));
  }
  r.loads = relay::link_loads(r.sched, 0, r.widths);
  r.beta = priced(relay::beta_cost(r.sched, r.topo, r.widths));
  r.direct_beta = priced(relay::beta_cost(r.direct, r.topo, r.widths));
  if (r.beta.routable() && r.direct_beta.routable())
    r.ceiling = *r.direct_beta.value / *r.beta.value;
  r.bound = lower_bound(o.spec, r.topo);

  r.operations = count_operations(r.sched);
  r.scratch = describe_scratch(h, r.symbols, r.widths);
  for (std::int64_t bytes : timing_bytes) {
    const std::int64_t count = bytes / r.element_size();
    r.timings.push_back(
        {bytes, count, seconds(r.sched, r.beta, r.topo, count, r.element_size(), r.widths),
         seconds(r.direct, r.direct_beta, r.topo, count, r.element_size(), r.widths),
         relay::choose_schedule(o.spec, r.topo, count, r.element_size(), r.widths)});
  }
  if (const std::vector<std::int64_t> counts = group_counts(o); !counts.empty()) {
    relay::plan p;
    if (const relay::status s = relay::make_plan(make_request(o, counts, &r.topo), p); !s.ok()) {
      r.plan_error = s.to_string();
      return r;
    }
    r.concrete = make_concrete(r, counts, p);
  }
  if (relay::is_fp8(o.wire)) r.wire = make_wire(r, group_counts(o));
  if (o.verify) r.verified = relay::verify(r.sched, o.alignment);
  if (o.run) r.run = run_on_host(o);
  return r;
}

std::string describe_check(const relay::check_failure& f) {
  if (f.ok()) return "ok";
  std::string out = fmt::format("{} (", f.what);
  auto field = [&](const char* label, std::int64_t v) {
    if (v >= 0) fmt::format_to(std::back_inserter(out), "{} {}, ", label, v);
  };
  field("group", f.group);
  field("rank", f.rank);
  field("step", f.step);
  field("count", f.count);
  field("position", f.position);
  return out + (f.in_place ? "in place)" : "out of place)");
}

}  // namespace relay_plan
