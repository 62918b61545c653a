// Everything relay-plan prints, computed once from the options. The text and JSON renderers only
// format these facts, so the two outputs cannot disagree.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "host_run.hpp"
#include "lower_bound.hpp"
#include "options.hpp"
#include "relay/check/verify.hpp"
#include "relay/core/ratio.hpp"
#include "relay/cost/link_cost.hpp"
#include "relay/plan/plan.hpp"
#include "relay/schedule/schedule.hpp"
#include "relay/topology/topology.hpp"
#include "symbolic.hpp"

namespace relay_plan {

struct quantum_info {
  std::string symbol;  // "o"
  std::string name;    // "offload piece o"
  std::string rule;    // "align_down(n/8, 128)"
  relay::ratio share;  // its large-n share of n
};

// A beta cost in units of n * element_size / link bandwidth, or none where a step needs a link
// the topology does not have.
struct beta_figure {
  std::optional<relay::ratio> value;
  bool routable() const { return value.has_value(); }
};

struct operation_counts {
  int total = 0, link_transfers = 0, local_copies = 0, reductions = 0;
  std::vector<int> max_per_rank;  // per step: the most operations one rank issues
};

struct scratch_info {
  std::string active_formula, helper_formula;  // per group, by the rank's role in it
  relay::ratio active_share, helper_share;
  // Scratch one rank holds over all groups: fused ranks are active in one group and helpers in
  // the others (all alike); single-mode actives and helpers differ.
  relay::ratio active_rank_total, helper_rank_total;
  // Partial sums (buffer::partial), elements of partial_size(dtype) bytes; the rank totals
  // above count them in element widths.
  bool has_partials = false;
  std::string active_partial_formula, helper_partial_formula;
};

// The alpha-beta time of one group's message of `bytes` (count = bytes / element size), and the
// schedule the router (relay::choose_schedule: direct, relay, or a pipeline depth for a single
// group) picks for that count, which is what route::automatic runs.
struct timing {
  std::int64_t bytes = 0, count = 0;
  std::optional<double> relay_seconds, direct_seconds;
  relay::schedule_spec router;
};

// The call of --count/--counts, planned by relay::make_plan.
struct concrete_info {
  std::vector<std::int64_t> counts;                 // per group
  std::vector<relay::symbol_values> symbol_values;  // per group: 1, n and each quantum
  std::vector<std::uint64_t> scratch_bytes;         // per rank, as the plan lays it out
  std::size_t plan_operations = 0, plan_phases = 0;
  std::optional<double> predicted_seconds, direct_predicted_seconds;
};

// One call's bytes on its busiest link direction and on all links together.
struct link_traffic {
  std::uint64_t busiest = 0, total = 0;
};

// With --wire fp8: the wire's cost on the topology and, with counts, the call's choice.
struct wire_info {
  relay::wire_format format = relay::wire_format::native;  // the concrete encoding asked for
  relay::element_widths widths;                            // 33/32 bytes an element
  beta_figure beta;                                        // at those widths
  std::uint64_t threshold_bytes = 0;                       // the model's (relay::fp8_never: never)
  std::vector<std::optional<double>> seconds;              // per timing row, passes included
  // With --count/--counts: what make_plan decided, and the call's link bytes on the wire taken
  // and natively.
  std::optional<relay::wire_choice> choice;
  link_traffic traffic, native_traffic;
};

struct plan_report {
  options opts;
  relay::topology topo;
  relay::element_widths widths;  // of opts.type, fp32 partial sums: what the costs count
  relay::schedule sched;         // what was asked for
  relay::schedule direct;        // its pure-direct baseline
  symbol_names symbols;
  std::vector<quantum_info> quanta;

  std::vector<beta_figure> step_beta;  // per step
  beta_figure beta, direct_beta;
  std::optional<relay::ratio> ceiling;  // direct / relay, where both are routable
  std::optional<known_bound> bound;

  // Per-link load in shares of n: [from * ranks + to], summed over steps and per step.
  std::vector<relay::ratio> loads;
  std::vector<std::vector<relay::ratio>> step_loads;

  operation_counts operations;
  scratch_info scratch;
  std::vector<timing> timings;
  std::optional<concrete_info> concrete;
  std::optional<wire_info> wire;                 // with --wire fp8
  std::optional<relay::check_failure> verified;  // with --verify
  std::optional<run_result> run;                 // with --run
  std::string plan_error;  // make_plan refused the call (the parser's checks should prevent it)

  int element_size() const { return relay::size_of(opts.type); }
  bool failed() const { return (verified && !verified->ok()) || (run && !run->ok()); }
};

// `o` must have passed parse_arguments (a schedule exists and the topology fits).
plan_report make_report(const options& o);

// "an output element is never written (group 1, rank 3, step 2, count 1025, position 7, in
// place)", or "ok".
std::string describe_check(const relay::check_failure& f);

}  // namespace relay_plan
