// The cost model's side of each row: which route a size takes, and how long the model says one
// call lasts on the chosen topology.
#pragma once

#include <cstdint>

#include "relay/core/wire.hpp"
#include "relay/cost/link_cost.hpp"
#include "relay/schedule/schedule.hpp"
#include "relay/topology/topology.hpp"
#include "sweep/options.hpp"

namespace relay::bench {

// One swept configuration (a table of the report).
struct call_shape {
  collective coll = collective::allreduce;
  int active = 2;
  int ranks = 8;
  run_mode mode = run_mode::fused;
  int permille = 0;
  int tiles = 0;  // the pipelined route's depth
};

// The spec of the plan(s) one call runs: parallel runs N/A plans of the single-group spec.
schedule_spec plan_spec(const call_shape& shape, route r);

// The groups one call covers, in active order: fused and parallel N/A groups of consecutive
// ranks ({0,1}, {2,3}, ...), single the first of them.
std::vector<std::vector<int>> call_groups(const call_shape& shape);

// Seconds of one call for per-group count n. Parallel prices its N/A single-group schedules as
// one schedule whose steps carry every group's traffic (the groups start together and keep
// step with each other), so the links they share add up as they would on the machine. `w`
// prices partial sums (widths_of(dtype): the fp32 partials the plans of 16-bit types carry);
// the default prices them as elements.
double predict_seconds(const call_shape& shape, route r, const topology& t, std::int64_t n,
                       int element_size, const element_widths& w = {});

// Seconds of one call on `wire`, the wire relay's plans took (plan::wire.taken): on the native
// wire predict_seconds at `type`'s widths; on an fp8 wire the links at wire widths plus the
// quantize and dequantize passes (cost/wire.hpp). Every executor's rows take their prediction
// from here, so a row's predicted column prices the wire its wire column names. Parallel keeps
// the native prediction on either wire: the fp8 passes of its merged schedule are not priced.
double predict_seconds(const call_shape& shape, route r, const topology& t, std::int64_t n,
                       dtype type, wire_format wire);

// The route a size takes: the one asked for, or for auto the one predicted faster (relay or
// direct; direct on a tie), as relay::choose_route decides it for a plan.
route resolve_route(const call_shape& shape, route_choice choice, const topology& t, std::int64_t n,
                    int element_size, const element_widths& w = {});

}  // namespace relay::bench
