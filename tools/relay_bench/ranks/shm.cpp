#include "ranks/shm.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <chrono>
#include <span>

#include "ranks/group_place.hpp"
#include "ranks/over_ranks.hpp"
#include "relay/comm/collectives.hpp"
#include "relay/comm/from_environment.hpp"
#include "relay/transport/shm/factory.hpp"
#include "report/conventions.hpp"
#include "report/report.hpp"
#include "report/results.hpp"
#include "sweep/data.hpp"
#include "sweep/measure.hpp"
#include "sweep/predict.hpp"
#include "sweep/sizes.hpp"

namespace relay::bench {

std::size_t staging_bytes(const options& o, const std::vector<call_shape>& shapes,
                          std::int64_t largest) {
  std::size_t need = std::size_t{1} << 20;
  const int es = size_of(o.type);
  for (const call_shape& s : shapes) {
    const std::int64_t n = group_count(s.coll, s.active, largest, es);
    for (route r : {route::relay, route::direct}) {
      const route taken =
          o.route == route_choice::automatic ? r : resolve_route(s, o.route, o.topo, n, es);
      // Parallel mode runs each group's plan alone (on a communicator of its own).
      const std::vector<std::vector<int>> groups = call_groups(s);
      std::vector<group_list> calls;
      if (s.mode == run_mode::parallel)
        for (const std::vector<int>& g : groups)
          calls.push_back({g});
      else
        calls.push_back(groups);
      for (const group_list& call : calls) {
        plan_request q =
            request_for(plan_spec(s, taken), call, std::vector<std::int64_t>(call.size(), n));
        q.type = o.type;
        q.alignment = o.alignment;
        q.wire = o.wire;  // an fp8 plan's wire slots are scratch too
        q.wire_threshold = o.wire_threshold;
        plan p;
        if (!make_plan(q, p)) continue;
        for (std::size_t k = 0; k < p.input_bytes.size(); ++k)
          need = std::max<std::size_t>(need, layout_of(p, k).end);
      }
    }
  }
  return need;
}

namespace {

// One form (in or out of place) of one row, on this rank.
status measure_form(communicator& comm, const options& o, const row& r, bool in_place,
                    form_result& result) {
  const call_shape& s = r.shape;
  const int es = size_of(o.type), me = comm.rank();
  const group_list groups = call_groups(s);
  const std::vector<std::int64_t> counts(groups.size(), r.n);
  // This rank's place: its group and index, or a helper.
  const group_place place = place_in(groups, me);
  const int group = place.group, index = place.index;
  const auto in_elems = group >= 0 ? input_elements(s.coll, s.active, r.n) : 0;
  const auto out_elems = group >= 0 ? output_elements(s.coll, s.active, r.n) : 0;
  std::int64_t in_at = 0, out_at = in_elems;
  if (in_place) {
    const in_place_offsets at = in_place_layout(s.coll, index, r.n);
    in_at = at.input;
    out_at = at.output;
  }
  std::vector<std::byte> memory(
      static_cast<std::size_t>(std::max(in_at + in_elems, out_at + out_elems) * es) + 64);
  std::byte* base =
      memory.data() + (64 - reinterpret_cast<std::uintptr_t>(memory.data()) % 64) % 64;
  const buffer_view send =
      group >= 0 ? buffer_view{base + in_at * es, static_cast<std::size_t>(in_elems * es)}
                 : buffer_view{};
  const buffer_view recv =
      group >= 0 ? buffer_view{base + out_at * es, static_cast<std::size_t>(out_elems * es)}
                 : buffer_view{};
  auto refill = [&] {
    if (group >= 0) fill_input(o.type, o.seed, me, in_elems, static_cast<std::byte*>(send.data));
  };
  relay::options opt;
  opt.route = r.chosen;
  opt.permille = s.permille;
  opt.tiles = r.chosen == route::pipelined ? s.tiles : 0;
  opt.alignment = o.alignment;
  opt.wire = o.wire;
  opt.wire_threshold = o.wire_threshold;
  opt.machine = &o.topo;  // the fp8 encoding and threshold of --topology, as on -x cpu and gpu
  wire_choice wire;
  opt.wire_report = &wire;
  auto once = [&] {
    return run_collective(comm, s.coll, groups, send, recv, counts, o.type, o.op, opt);
  };
  refill();
  for (int i = 0; i < o.warmup; ++i)
    if (status st = once(); !st) return st;
  // Timed: the ranks start together; an iteration lasts as long as its slowest rank's part,
  // and the median of those is the row's time (as the other executors report).
  // The processes' own exchanges: a process that hosts helpers speaks for itself alone.
  bootstrap& processes = processes_of(comm);
  if (status st = processes.barrier(comm.config().timeout); !st) return st;
  std::vector<double> mine(static_cast<std::size_t>(o.iterations));
  auto last = std::chrono::steady_clock::now();
  for (double& t : mine) {
    if (status st = once(); !st) return st;
    const auto now = std::chrono::steady_clock::now();
    t = std::chrono::duration<double>(now - last).count();
    last = now;
  }
  if (status st = largest_over_ranks(processes, mine, comm.config().timeout); !st) return st;
  result.seconds = median(mine);
  result.ran = true;
  result.wire = wire.taken;  // the same decision on every rank: the call's arguments made it
  if (!o.check) return {};
  // Checked: fresh input, poisoned output, one call, every element of this rank's output.
  refill();
  if (group >= 0 && !in_place) poison(static_cast<std::byte*>(recv.data), recv.bytes);
  if (group >= 0 && in_place && s.coll == collective::all_gather) {
    // In place, the input is part of the output: poison the rest of it only.
    poison(static_cast<std::byte*>(recv.data), static_cast<std::size_t>(index * r.n * es));
    poison(static_cast<std::byte*>(recv.data) + (index + 1) * r.n * es,
           static_cast<std::size_t>((s.active - index - 1) * r.n * es));
  }
  if (status st = once(); !st) return st;
  check_result mine_check;
  const std::span<const int> mine_group =
      group >= 0 ? std::span<const int>(groups[static_cast<std::size_t>(group)])
                 : std::span<const int>();
  if (group >= 0)
    mine_check = check_output_on(wire.taken, r.chosen, s.coll, o.type, o.op, mine_group, index, r.n,
                                 o.seed, static_cast<const std::byte*>(recv.data));
  check_result all;
  if (status st = combine_checks(processes, mine_check, all, comm.config().timeout); !st) return st;
  result.wrong = all.wrong;
  result.first_wrong = all.first;
  if (wire.taken != wire_format::native) result.max_relative_error = all.max_relative_error;
  return {};
}

}  // namespace

int run_shm_bench(const options& o, const std::vector<call_shape>& shapes) {
  if (int refused = refuse_rank_job("-x shm", o, shapes, -1)) return refused;
  const std::vector<std::int64_t> sizes =
      size_grid(o.min_bytes, o.max_bytes, o.step_factor, o.step_bytes);
  shm_options segment;
  segment.bytes_per_rank = staging_bytes(o, shapes, sizes.empty() ? 0 : sizes.back());
  std::unique_ptr<communicator> comm;
  host_helper_devices(o);
  if (status st = communicator_from_environment(shm_factory(segment), comm); !st) {
    fmt::print(stderr, "relay-bench: -x shm: {} (start it with relay-run -n N)\n", st.to_string());
    return exit_failed;
  }
  if (int refused = refuse_rank_job("-x shm", o, shapes, comm->size())) return refused;
  const bool lead = comm->rank() == 0;
  const std::string baseline = "none (no baseline runs in the shm transport's processes)";
  const run_info info =
      describe_run(o,
                   fmt::format("shm: {}, {} MiB of shared memory each",
                               job_of_ranks(processes_of(*comm).size(), comm->size()),
                               segment.bytes_per_rank >> 20),
                   baseline);
  if (lead) print_run_header(stdout, info, info.executor);
  rank_job job;
  job.lead = lead;
  job.baseline = baseline;
  job.measure = [&](const row& r, bool in_place, bool, form_result& f) {
    return measure_form(*comm, o, r, in_place, f);
  };
  return run_rank_rows(o, shapes, sizes, info, job);
}

}  // namespace relay::bench
