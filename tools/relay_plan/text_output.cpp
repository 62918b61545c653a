#include "text_output.hpp"

#include "support/cli.hpp"

#include <algorithm>
#include <iterator>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "relay/core/collective.hpp"
#include "relay/cost/wire.hpp"
#include "support/cli.hpp"

namespace relay_plan {
namespace {

// Operations listed per phase before the rest are only counted (--full lists all).
constexpr int listed_per_phase = 40;
// Matrices wider than this are summarized: 64 columns of fractions do not fit a terminal.
constexpr int widest_matrix = 16;

using out_it = std::back_insert_iterator<std::string>;

const char* buffer_name(relay::buffer b) {
  switch (b) {
    case relay::buffer::input: return "input";
    case relay::buffer::output: return "output";
    case relay::buffer::scratch: return "scratch";
    case relay::buffer::partial: return "partial";
  }
  return "?";
}

std::string n_units(const plan_report& r) {
  const char* per = r.topo.kind == relay::fabric::switched ? "port" : "link";
  return fmt::format("n * element size / ({:g} GB/s per {} per direction)",
                     r.topo.link_bandwidth / 1e9, per);
}

std::string topology_line(const relay::topology& t) {
  std::string shape = t.kind == relay::fabric::mesh ? "mesh, one link per pair"
                                                    : "switched, one port per GPU into a switch";
  if (t.kind == relay::fabric::matrix) {
    int fewest = 255, most = 0;
    for (int a = 0; a < t.ranks; ++a)
      for (int b = 0; b < t.ranks; ++b)
        if (a != b)
          fewest = std::min(fewest, t.link_count(a, b)), most = std::max(most, t.link_count(a, b));
    shape = fmt::format("link matrix, {} to {} links per pair", fewest, most);
  }
  const std::string call =
      t.call_latency > 0 ? fmt::format(", {:g} us a call", t.call_latency * 1e6) : std::string();
  return fmt::format("{} ({}, {:g} GB/s per {} per direction, {:g} us per step{})", t.name, shape,
                     t.link_bandwidth / 1e9, t.kind == relay::fabric::switched ? "port" : "link",
                     t.step_latency * 1e6, call);
}

void header(out_it out, const plan_report& r) {
  const relay::schedule_spec& s = r.sched.header.spec;
  fmt::format_to(out, "relay-plan: {}, A={} active, N={} ranks, H={} helpers, {}", name(s.coll),
                 s.active, s.ranks, s.helpers(), name(s.mode));
  if (s.mode == relay::mode::fused)
    fmt::format_to(out, " ({} groups at once)\n", s.groups());
  else
    fmt::format_to(out, " (one group; {} idle helpers)\n", s.helpers());
  fmt::format_to(out, "schedule:   {}, {} steps{}\n            {}\n", name(s.route),
                 r.sched.header.steps,
                 s.permille > 0 ? fmt::format(", offload {} permille", s.permille)
                 : s.tiles > 0  ? fmt::format(", T={} tiles", s.tiles)
                                : "",
                 r.sched.header.description);
  fmt::format_to(out, "topology:   {}\n", topology_line(r.topo));
  if (!r.opts.helper_devices.empty()) {
    // Who runs the hosted helpers (--helper-devices), a line per process that hosts any.
    const relay::hosting h = hosting_of(r.opts);
    const char* lead = "hosted:     ";
    for (int p = 0; p < h.processes; ++p) {
      std::vector<int> ranks = h.ranks_of(p), devices;
      ranks.erase(ranks.begin());
      for (int q : ranks)
        devices.push_back(h.device_of(q));
      if (ranks.empty()) continue;
      fmt::format_to(out, "{}process {} runs rank{} {} (device{} {})\n", lead, p,
                     ranks.size() == 1 ? "" : "s", fmt::join(ranks, ", "),
                     devices.size() == 1 ? "" : "s", fmt::join(devices, ", "));
      lead = "            ";
    }
    fmt::format_to(out, "{}priced as helpers: the links are the same\n", lead);
  }
  fmt::format_to(out, "n:          {} of each group\n",
                 s.coll == relay::collective::allreduce        ? "the count"
                 : s.coll == relay::collective::reduce_scatter ? "recvCount (input A*n)"
                 : s.coll == relay::collective::all_gather     ? "sendCount (output A*n)"
                                                           : "segmentCount (input, output A*n)");
}

void quanta(out_it out, const plan_report& r) {
  if (r.quanta.empty()) {
    fmt::format_to(out, "\nquanta: none (every size is a multiple of n)\n");
    return;
  }
  fmt::format_to(out, "\nquanta (from each group's count n; alignment {} elements)\n",
                 r.opts.alignment);
  std::size_t width = 0;
  for (const quantum_info& q : r.quanta)
    width = std::max(width, q.name.size() + q.rule.size());
  for (const quantum_info& q : r.quanta)
    fmt::format_to(out, "  {} = {}{:{}}  ~ {}\n", q.name, q.rule, "",
                   width - q.name.size() - q.rule.size(), format_share(q.share));
}

std::string place(const relay::operand& o, const plan_report& r) {
  return fmt::format("{}[{}]", buffer_name(o.buf), format_affine(o.offset, r.symbols));
}

// One operation of the pattern as group L runs it (its roles named by L's canonical ranks).
std::string describe_operation(const relay::operation& op, const plan_report& r,
                               const relay::group_layout& L) {
  const auto sources = r.sched.view().sources_of(op);
  const std::string count = format_factor(op.count, r.symbols);
  const std::string dst = fmt::format("{}[{} .. +{}]", buffer_name(op.dst.buf),
                                      format_affine(op.dst.offset, r.symbols), count);
  const int dst_rank = L.rank_of(op.dst.rank);
  if (op.phase == relay::phase::transfer) {
    const relay::operand& src = sources[0];
    return fmt::format("rank {} {}[{} .. +{}] -> rank {} {}{}", L.rank_of(src.rank),
                       buffer_name(src.buf), format_affine(src.offset, r.symbols), count, dst_rank,
                       dst, src.rank == op.dst.rank ? "  (local)" : "");
  }
  std::string sum;
  for (const relay::operand& src : sources) {
    if (!sum.empty()) sum += " + ";
    if (src.rank != op.dst.rank) sum += fmt::format("rank {} ", L.rank_of(src.rank));
    sum += place(src, r);
  }
  return fmt::format("rank {} {} = {}{}", dst_rank, dst, sum, op.finalize ? "  (final)" : "");
}

void steps(out_it out, const plan_report& r) {
  const relay::schedule_spec& s = r.sched.header.spec;
  const int groups = s.groups();
  const bool every_group = r.opts.full || groups == 1;
  fmt::format_to(out, "\nsteps (canonical ranks: group g's actives are g*A .. g*A+A-1)\n");
  if (!every_group)
    fmt::format_to(out, "  group 0 in full; {} (--full lists {})\n",
                   groups == 2 ? "group 1 runs the same pattern on its own ranks"
                               : fmt::format("groups 1-{} run the same pattern on their own ranks",
                                             groups - 1),
                   groups == 2 ? "it" : "them");
  const auto& ops = r.sched.ops;  // the pattern: every group runs it on its own ranks
  for (std::size_t first = 0; first < ops.size();) {
    std::size_t last = first;
    while (last < ops.size() && ops[last].step == ops[first].step &&
           ops[last].phase == ops[first].phase)
      ++last;
    const std::size_t per_group = last - first;
    const bool transfer = ops[first].phase == relay::phase::transfer;
    fmt::format_to(out, "  step {} {}: {} in group 0, {} in all\n", ops[first].step,
                   transfer ? "transfers" : "reductions", per_group,
                   per_group * static_cast<std::size_t>(groups));
    int listed = 0, skipped = 0;
    for (int g = 0; g < (every_group ? groups : 1); ++g) {
      const relay::group_layout L{g, s.active, s.ranks};
      bool named = false;
      for (std::size_t i = first; i < last; ++i) {
        if (!r.opts.full && listed == listed_per_phase) {
          ++skipped;
          continue;
        }
        if (groups > 1 && every_group && !named)
          fmt::format_to(out, "    group {}\n", g), named = true;
        fmt::format_to(out, "    {}\n", describe_operation(ops[i], r, L));
        ++listed;
      }
    }
    if (skipped > 0) fmt::format_to(out, "    ... {} more (--full lists them)\n", skipped);
    first = last;
  }
}

void matrix(out_it out, const std::string& title, const std::vector<relay::ratio>& loads,
            int ranks) {
  auto cell = [&](int from, int to) {
    if (from == to) return std::string("-");
    const relay::ratio x = loads[static_cast<std::size_t>(from * ranks + to)];
    return x == relay::ratio{} ? std::string(".") : format_ratio(x);
  };
  if (ranks > widest_matrix) {
    relay::ratio busiest{};
    int used = 0, from_at = 0, to_at = 0;
    for (int from = 0; from < ranks; ++from)
      for (int to = 0; to < ranks; ++to) {
        const relay::ratio x = loads[static_cast<std::size_t>(from * ranks + to)];
        used += x == relay::ratio{} ? 0 : 1;
        if (busiest < x) busiest = x, from_at = from, to_at = to;
      }
    fmt::format_to(out, "  {}: {} of {} link-directions carry traffic; busiest {} -> {}: {}\n",
                   title, used, ranks * (ranks - 1), from_at, to_at, format_share(busiest));
    return;
  }
  std::size_t width = 1;
  for (int from = 0; from < ranks; ++from)
    for (int to = 0; to < ranks; ++to)
      width = std::max(width, cell(from, to).size());
  fmt::format_to(out, "  {}\n    {:>9}", title, "from\\to");
  for (int to = 0; to < ranks; ++to)
    fmt::format_to(out, " {:>{}}", to, width);
  fmt::format_to(out, "\n");
  for (int from = 0; from < ranks; ++from) {
    fmt::format_to(out, "    {:>9}", from);
    for (int to = 0; to < ranks; ++to)
      fmt::format_to(out, " {:>{}}", cell(from, to), width);
    fmt::format_to(out, "\n");
  }
}

void links(out_it out, const plan_report& r) {
  const int ranks = r.sched.header.spec.ranks;
  fmt::format_to(out, "\nlink load (shares of n per link direction; '.' carries nothing)\n");
  matrix(out, "all steps", r.loads, ranks);
  if (r.step_loads.size() > 1)
    for (std::size_t i = 0; i < r.step_loads.size(); ++i)
      matrix(out, fmt::format("step {}", i + 1), r.step_loads[i], ranks);
}

std::string figure(const beta_figure& b) {
  return b.value ? fmt::format("{} = {:.4g}", format_share(*b.value), b.value->to_double())
                 : "unroutable (a step needs a pair with no link)";
}

void costs(out_it out, const plan_report& r) {
  fmt::format_to(out, "\ncost on {} (units of {})\n", r.topo.name, n_units(r));
  std::string per_step;
  for (std::size_t i = 0; i < r.step_beta.size(); ++i) {
    const beta_figure& b = r.step_beta[i];
    per_step += fmt::format("{}step {}: {}", i ? ", " : "", i + 1,
                            b.value ? format_share(*b.value) : "unroutable");
  }
  fmt::format_to(out, "  beta per step: {}\n", per_step);
  if (r.widths.partial != relay::ratio{1} && r.scratch.has_partials)
    fmt::format_to(out, "  (a partial sum is {} element widths: {}-byte accumulators)\n",
                   format_ratio(r.widths.partial), relay::accumulator_size(r.opts.type));
  fmt::format_to(out, "  beta cost:     {}\n", figure(r.beta));
  fmt::format_to(out, "  direct:        {} (the pure-direct baseline)\n", figure(r.direct_beta));
  if (r.ceiling)
    fmt::format_to(out, "  ceiling:       {} (direct / {})\n",
                   r.ceiling->den == 1 ? fmt::format("{}x", r.ceiling->num)
                                       : fmt::format("{} = {:.4g}x", format_ratio(*r.ceiling),
                                                     r.ceiling->to_double()),
                   name(r.sched.header.spec.route));
  else
    fmt::format_to(out, "  ceiling:       none (unroutable on {})\n", r.topo.name);
  if (!r.bound) {
    fmt::format_to(out, "  lower bound:   not known on this topology\n");
    return;
  }
  std::string where;
  if (r.beta.value)
    where = *r.beta.value == r.bound->value
                ? "; the schedule is at the bound"
                : fmt::format("; the schedule is {:.3g}x the bound",
                              (*r.beta.value / r.bound->value).to_double());
  fmt::format_to(out, "  lower bound:   {} = {:.4g}{}{}\n", format_share(r.bound->value),
                 r.bound->value.to_double(), where,
                 r.bound->note.empty() ? "" : fmt::format(" ({})", r.bound->note));
}

void resources(out_it out, const plan_report& r) {
  const scratch_info& s = r.scratch;
  const relay::schedule_spec& spec = r.sched.header.spec;
  fmt::format_to(out, "\nscratch (elements, per group, by the rank's role in it)\n");
  fmt::format_to(out, "  active rank: {}  ~ {}\n", s.active_formula, format_share(s.active_share));
  fmt::format_to(out, "  helper rank: {}  ~ {}\n", s.helper_formula, format_share(s.helper_share));
  if (s.has_partials)
    fmt::format_to(out, "  partial sums ({}-byte elements): active {}, helper {}\n",
                   relay::partial_size(r.opts.type), s.active_partial_formula,
                   s.helper_partial_formula);
  if (spec.mode == relay::mode::fused)
    fmt::format_to(out, "  every rank, over all groups (active in 1, helper in {}): ~ {}\n",
                   spec.groups() - 1, format_share(s.active_rank_total));

  const operation_counts& c = r.operations;
  fmt::format_to(out, "\noperations: {} ({} link transfers, {} local copies, {} reductions)\n",
                 c.total, c.link_transfers, c.local_copies, c.reductions);
  std::string per_step;
  for (std::size_t i = 0; i < c.max_per_rank.size(); ++i)
    per_step += fmt::format("{}step {}: {}", i ? ", " : "", i + 1, c.max_per_rank[i]);
  fmt::format_to(out, "  most issued by one rank: {}\n", per_step);
}

void timings(out_it out, const plan_report& r) {
  fmt::format_to(out, "\nalpha-beta time ({}, one group's message; {:g} us per step)\n",
                 name(r.opts.type), r.topo.step_latency * 1e6);
  fmt::format_to(out, "  {:>10} {:>12} {:>11} {:>11} {:>8}  {}\n", "message", "count n",
                 name(r.sched.header.spec.route), "direct", "speedup", "router's pick");
  for (const timing& t : r.timings) {
    const std::string relay_time = t.relay_seconds ? format_seconds(*t.relay_seconds) : "-";
    const std::string direct_time = t.direct_seconds ? format_seconds(*t.direct_seconds) : "-";
    const std::string speedup = t.relay_seconds && t.direct_seconds
                                    ? fmt::format("{:.2f}x", *t.direct_seconds / *t.relay_seconds)
                                    : "-";
    fmt::format_to(out, "  {:>10} {:>12} {:>11} {:>11} {:>8}  {}{}\n",
                   relay::cli::format_bytes(t.bytes), t.count, relay_time, direct_time, speedup,
                   name(t.router.route),
                   t.router.tiles > 0 ? fmt::format(" T={}", t.router.tiles) : "");
  }
}

void concrete(out_it out, const plan_report& r) {
  if (!r.concrete) return;
  const concrete_info& c = *r.concrete;
  const bool uniform =
      std::adjacent_find(c.counts.begin(), c.counts.end(), std::not_equal_to<>()) == c.counts.end();
  const relay::collective coll = r.sched.header.spec.coll;
  fmt::format_to(out, "\nthis call ({}, {} byte{} per element, alignment {}{}, {})\n",
                 name(r.opts.type), r.element_size(), r.element_size() == 1 ? "" : "s",
                 r.opts.alignment, relay::reduces(coll) ? fmt::format(", {}", name(r.opts.op)) : "",
                 r.opts.in_place ? "in place" : "out of place");
  for (std::size_t g = 0; g < c.counts.size(); ++g) {
    std::string sizes;
    for (std::size_t i = 0; i < r.quanta.size(); ++i)
      sizes +=
          fmt::format("{}{} = {}", i ? ", " : ": ", r.quanta[i].symbol, c.symbol_values[g][2 + i]);
    if (uniform)
      fmt::format_to(out, "  every group n = {}{}\n", c.counts[g], sizes);
    else
      fmt::format_to(out, "  group {} n = {}{}\n", g, c.counts[g], sizes);
    if (uniform) break;
  }
  fmt::format_to(out, "  plan: {} operations in {} phases\n", c.plan_operations, c.plan_phases);
  const auto& scratch = c.scratch_bytes;
  if (std::adjacent_find(scratch.begin(), scratch.end(), std::not_equal_to<>()) == scratch.end()) {
    fmt::format_to(out, "  scratch bytes, every rank: {} ({})\n", scratch.front(),
                   relay::cli::format_bytes(static_cast<std::int64_t>(scratch.front())));
  } else {
    fmt::format_to(out, "  scratch bytes per rank:");
    for (std::size_t rank = 0; rank < scratch.size(); ++rank)
      fmt::format_to(out, "{} {}", rank ? "," : "", scratch[rank]);
    fmt::format_to(out, "\n");
  }
  if (c.predicted_seconds && c.direct_predicted_seconds)
    fmt::format_to(out, "  predicted time: {} (direct {}, {:.2f}x)\n",
                   format_seconds(*c.predicted_seconds),
                   format_seconds(*c.direct_predicted_seconds),
                   *c.direct_predicted_seconds / *c.predicted_seconds);
  else
    fmt::format_to(out, "  predicted time: none (unroutable on {})\n", r.topo.name);
}

void wire(out_it out, const plan_report& r) {
  if (!r.wire) return;
  const wire_info& w = *r.wire;
  fmt::format_to(out,
                 "\nwire: {} (a code per element and a 4-byte scale per 128 on every link: "
                 "{} of an element's bytes)\n",
                 name(w.format), format_ratio(w.widths.element));
  fmt::format_to(out, "  beta cost:     {} ({} natively)\n", figure(w.beta), figure(r.beta));
  if (w.threshold_bytes == relay::fp8_never)
    fmt::format_to(out, "  threshold:     never (the passes cost more than the link bytes save)\n");
  else
    fmt::format_to(out,
                   "  threshold:     {} bytes ({}) of the largest group's count; below it a call "
                   "runs natively\n",
                   w.threshold_bytes,
                   relay::cli::format_bytes(static_cast<std::int64_t>(w.threshold_bytes)));
  fmt::format_to(out, "  {:>10} {:>11} {:>11} {:>8}   (passes: {:g} us each, {:g} GB/s)\n",
                 "message", "native", "fp8", "speedup", r.topo.pass_latency * 1e6,
                 r.topo.memory_bandwidth / 1e9);
  for (std::size_t i = 0; i < r.timings.size(); ++i) {
    const timing& t = r.timings[i];
    const std::optional<double>& f = w.seconds[i];
    fmt::format_to(out, "  {:>10} {:>11} {:>11} {:>8}\n", relay::cli::format_bytes(t.bytes),
                   t.relay_seconds ? format_seconds(*t.relay_seconds) : "-",
                   f ? format_seconds(*f) : "-",
                   f && t.relay_seconds ? fmt::format("{:.2f}x", *t.relay_seconds / *f) : "-");
  }
  if (!w.choice) return;
  fmt::format_to(out, "  this call:     {}\n", relay::describe(*w.choice));
  fmt::format_to(out, "  link bytes:    busiest link {}, all links {} (native {}, {})\n",
                 w.traffic.busiest, w.traffic.total, w.native_traffic.busiest,
                 w.native_traffic.total);
}

void verification(out_it out, const plan_report& r) {
  if (!r.verified) return;
  fmt::format_to(out, "\nverify: {}\n",
                 r.verified->ok() ? "ok (dataflow and structure at the representative counts, "
                                    "in place and out of place)"
                                  : fmt::format("FAILED: {}", describe_check(*r.verified)));
}

void run(out_it out, const plan_report& r) {
  if (!r.run) return;
  const run_result& run = *r.run;
  fmt::format_to(out, "\nrun on the host executor: ");
  if (!run.status.ok())
    fmt::format_to(out, "the call failed: {}\n", run.status.to_string());
  else if (run.wrong > 0)
    fmt::format_to(out, "{} wrong of {} output elements (first: {}); {} per call\n", run.wrong,
                   run.checked, run.first_wrong, format_seconds(run.seconds));
  else if (run.max_relative_error)
    fmt::format_to(out,
                   "ok, {} output elements within the fp8 bound of the reference (largest "
                   "relative error {:.3g}); {} per call\n",
                   run.checked, *run.max_relative_error, format_seconds(run.seconds));
  else
    fmt::format_to(out, "ok, {} output elements match the reference; {} per call\n", run.checked,
                   format_seconds(run.seconds));
}

}  // namespace

std::string format_seconds(double s) {
  if (s < 1e-3) return fmt::format("{:.1f} us", s * 1e6);
  if (s < 1) return fmt::format("{:.2f} ms", s * 1e3);
  return fmt::format("{:.2f} s", s);
}

std::string render_text(const plan_report& r) {
  std::string text;
  const out_it out(text);
  // The report's parts in order; a part the report lacks (concrete, wire, verify, run) prints
  // nothing.
  for (auto* part :
       {header, quanta, steps, links, costs, resources, timings, concrete, wire, verification, run})
    part(out, r);
  return text;
}

}  // namespace relay_plan
