// relay-bench -x nccl or -x ipc as one rank of a multi-process job (relay-run -n G -- relay-bench
// -x nccl ...): every call through this rank's communicator over the transport; with nccl,
// NCCL's own collective on the same NCCL communicator beside it where one group covers the node;
// with ipc, the floor's or NCCL's collective beside it (gpu_rank.hpp's ipc_vendor), and with
// --graph K timed runs replay a captured graph of K calls. Each rank checks its own
// output element by element; an iteration lasts as long as its slowest rank's part (device
// events); rank 0 prints the table with #wrong summed over the ranks; every rank exits 1 when
// any element anywhere was wrong. With --wire fp8, relay's calls take the fp8 wire
// where the threshold says, each rank checks its output against the fp8 bound, and the table
// gives the wire taken and the largest relative error over the ranks.
#include <fmt/format.h>
#include <algorithm>
#include <cstdlib>
#include <span>

#include "ranks/gpu_rank.hpp"
#include "ranks/group_place.hpp"
#include "ranks/over_ranks.hpp"
#include "ranks/rank_bench.hpp"
#include "ranks/shm.hpp"
#include "report/conventions.hpp"
#include "report/report.hpp"
#include "report/results.hpp"
#include "sweep/data.hpp"
#include "sweep/measure.hpp"
#include "sweep/options.hpp"
#include "sweep/predict.hpp"
#include "sweep/sizes.hpp"

namespace relay::bench {

namespace {

// One form of one row on this rank: relay's on the route taken (vendor = false, direct = false),
// relay's direct route on the native wire (direct: the baseline under --emulate-mesh), or NCCL's.
status measure_form(gpu_rank& me, const options& o, const row& r, bool in_place, bool vendor,
                    form_result& result, bool direct = false) {
  const call_shape& s = r.shape;
  const int es = size_of(o.type), rank = me.rank();
  const route taken = direct ? route::direct : r.chosen;
  rank_collective c;
  c.coll = s.coll;
  c.groups = call_groups(s);
  c.counts.assign(c.groups.size(), r.n);
  c.type = o.type;
  c.op = o.op;
  c.opt.route = taken;
  c.opt.permille = s.permille;
  c.opt.tiles = taken == route::pipelined ? s.tiles : 0;
  c.opt.alignment = o.alignment;
  c.parallel = s.mode == run_mode::parallel;
  wire_choice wire;  // NCCL's own collective (vendor) and the direct baseline run natively
  if (!vendor) c.opt.wire_report = &wire;
  if (!vendor && !direct) {
    c.opt.wire = o.wire;
    c.opt.wire_threshold = o.wire_threshold;
    c.opt.machine = &o.topo;  // the fp8 encoding and threshold of --topology
  }
  const group_place place = place_in(c.groups, rank);
  const int group = place.group, index = place.index;
  const std::int64_t in_elems = group >= 0 ? input_elements(s.coll, s.active, r.n) : 0;
  const std::int64_t out_elems = group >= 0 ? output_elements(s.coll, s.active, r.n) : 0;
  std::int64_t in_at = 0, out_at = in_elems;
  if (in_place) {
    const in_place_offsets at = in_place_layout(s.coll, index, r.n);
    in_at = at.input;
    out_at = at.output;
  }
  const auto frame = static_cast<std::size_t>(std::max(in_at + in_elems, out_at + out_elems) * es);
  auto* base = static_cast<std::byte*>(me.device_memory(std::max<std::size_t>(frame, 256)));
  if (base == nullptr) return {errc::out_of_memory, "no device memory for the buffers"};
  if (group >= 0) {
    c.send = {base + in_at * es, static_cast<std::size_t>(in_elems * es)};
    c.recv = {base + out_at * es, static_cast<std::size_t>(out_elems * es)};
  }
  std::vector<std::byte> host(frame);
  auto refill = [&]() -> status {
    if (group < 0) return {};
    fill_input(o.type, o.seed, rank, in_elems, host.data() + in_at * es);
    return me.upload(c.send.data, host.data() + in_at * es, c.send.bytes);
  };
  if (status st = refill(); !st) return st;
  if (status st = me.run(c, vendor, o.warmup, nullptr); !st) return st;
  if (status st = me.boot().barrier(me.timeout()); !st) return st;
  std::vector<double> mine;
  const auto timing =
      o.per_call_events ? gpu_rank::call_timing::per_call : gpu_rank::call_timing::loop;
  if (status st = me.run(c, vendor, o.iterations, &mine, timing); !st) return st;
  if (status st = largest_over_ranks(me.boot(), mine, me.timeout()); !st) return st;
  result.seconds = median(mine);
  result.ran = true;
  if (!o.check) return {};
  // Checked: fresh input, the rest of the frame poisoned, one call, every element of the output.
  if (group >= 0) {
    poison(host.data(), host.size());
    fill_input(o.type, o.seed, rank, in_elems, host.data() + in_at * es);
    if (status st = me.upload(base, host.data(), frame); !st) return st;
  }
  if (status st = me.run(c, vendor, 1, nullptr); !st) return st;
  result.wire = wire.taken;  // the same decision on every rank: the call's arguments made it
  check_result verdict;
  if (group >= 0) {
    if (status st = me.download(host.data(), base, frame); !st) return st;
    verdict = check_output_on(wire.taken, taken, s.coll, o.type, o.op,
                              c.groups[static_cast<std::size_t>(group)], index, r.n, o.seed,
                              host.data() + out_at * es);
  }
  // Every rank's check: the wrong count, the largest relative error (fp8), where it first erred.
  check_result all;
  if (status st = combine_checks(me.boot(), verdict, all, me.timeout()); !st) return st;
  result.wrong = all.wrong;
  result.first_wrong = all.first;
  if (wire.taken != wire_format::native) result.max_relative_error = all.max_relative_error;
  return {};
}

}  // namespace

bool launched_as_rank() {
  for (const char* v : {"RELAY_RANK", "RANK"})
    if (const char* x = std::getenv(v); x != nullptr && *x != '\0') return true;
  return false;
}

int run_rank_bench(const options& o, const std::vector<call_shape>& shapes) {
  const std::string executor = fmt::format("-x {}", name(o.executor));
  const bool ipc = o.executor == executor_kind::ipc;  // runs parallel mode too
  if (int refused = refuse_rank_job(executor, o, shapes, -1, ipc)) return refused;
  const std::vector<std::int64_t> sizes =
      size_grid(o.min_bytes, o.max_bytes, o.step_factor, o.step_bytes);
  std::string why;
  // Under --emulate-mesh no vendor's collective runs beside: the baseline is relay's direct route.
  const ipc_vendor beside = o.emulate_mesh_gbps > 0                      ? ipc_vendor::none
                            : o.baseline == baseline_kind::floor         ? ipc_vendor::floor
                            : o.baseline == baseline_kind::floor_ll      ? ipc_vendor::floor_ll
                            : o.baseline == baseline_kind::floor_barrier ? ipc_vendor::floor_barrier
                            : o.baseline == baseline_kind::floor_job     ? ipc_vendor::floor_job
                            : o.baseline == baseline_kind::nccl          ? ipc_vendor::nccl
                            : o.baseline == baseline_kind::automatic     ? ipc_vendor::automatic
                                                                         : ipc_vendor::none;
  if (ipc) {
    host_helper_devices(o);
    emulate_mesh_on_ipc(o);
  }
  std::unique_ptr<gpu_rank> me =
      ipc ? make_ipc_rank(staging_bytes(o, shapes, sizes.empty() ? 0 : sizes.back()), o.graph_calls,
                          beside, o.split, why)
          : make_nccl_rank(why);
  if (!me) {
    fmt::print(stderr, "relay-bench: {}: {}\n", executor, why);
    return exit_failed;
  }
  if (int refused = refuse_rank_job(executor, o, shapes, me->size(), ipc)) return refused;
  const bool lead = me->rank() == 0;
  const bool floor = ipc && is_floor(o.baseline);
  const gpu_rank::vendor_info vendor = me->vendor();
  const bool parallel =
      std::find(o.modes.begin(), o.modes.end(), run_mode::parallel) != o.modes.end();
  const char* apart = o.split    ? "; each group's calls on a communicator of its own, split from "
                                   "the job's (--split)"
                      : parallel ? "; parallel mode: each group's plan on a copy of the job's "
                                   "communicator and a stream of its own, all at once"
                                 : "";
  const char* timed = o.per_call_events
                          ? "; device events around each call, the median of the calls"
                          : "; one pair of device events around the iterations, their time "
                            "over the calls (as nccl-tests)";
  const std::string how =
      ipc ? fmt::format("ipc: {} ({}); {}{}{}", job_of_ranks(me->boot().size(), me->size()),
                        me->description(),
                        o.graph_calls > 0
                            ? fmt::format("times from replays of a graph of {} captured calls",
                                          o.graph_calls)
                            : std::string("eager calls"),
                        apart, timed)
          : fmt::format(
                "nccl: {} processes, one rank and one device each, relay's nccl "
                "transport{}",
                o.ranks, timed);
  const bool emulated = ipc && o.emulate_mesh_gbps > 0;
  // The prediction prices the device memories the ranks really share (8 ranks on one GPU add up
  // on one memory): every rank's device into the topology. The ipc transport divides a shared
  // device equally among its ranks (transport/ipc/grids.hpp), so each runs on its share alone.
  options priced = o;
  priced.topo.divided_devices = ipc;
  if (status st = emulated ? rank_devices_into(me->boot(), me->device(), me->hosted_devices(),
                                               me->size(), me->timeout(), priced.topo)
                           : status{};
      !st) {
    fmt::print(stderr, "relay-bench: {}: {}\n", executor, st.to_string());
    return exit_failed;
  }
  const std::string direct_text =
      fmt::format("relay's direct route on the same emulated mesh ({} GB/s a link each way)",
                  o.emulate_mesh_gbps);
  const run_info info = describe_run(o, how, emulated ? direct_text : vendor.description);
  if (lead) print_run_header(stdout, info, info.executor);
  rank_job job;
  job.lead = lead;
  job.direct_baseline = emulated && o.baseline != baseline_kind::none;
  job.who = fmt::format("rank {}: ", me->rank());
  // Where the floor is asked for but cannot run, the table says why instead of a bare "none".
  job.baseline = emulated ? direct_text
                 : !floor ? (vendor.runs ? "none" : vendor.description)
                 : o.baseline == baseline_kind::floor_job
                     ? "none (the floor-job runs an allreduce sum only, and only where every "
                       "rank is in a group: its entry meets every rank)"
                     : fmt::format("none (the {} runs an allreduce sum only)", name(o.baseline));
  job.vendor = vendor.description;
  job.with_vendor = [&](const call_shape& s) {
    if (!vendor.runs || emulated) return false;
    if (floor) {
      if (s.coll != collective::allreduce || o.op != reduce_op::sum) return false;
      if (o.baseline != baseline_kind::floor_job) return true;
      // floor-job: its entry meets every rank, so every rank must be in a group (no helpers).
      std::size_t members = 0;
      for (const std::vector<int>& g : call_groups(s))
        members += g.size();
      return members == static_cast<std::size_t>(s.ranks);
    }
    // NCCL beside the ipc transport runs each group on a communicator of its own; the nccl
    // transport's communicator holds every rank, so there one group must cover them.
    if (ipc) return true;
    return o.baseline != baseline_kind::none && s.active == s.ranks && s.mode == run_mode::single;
  };
  job.measure = [&](const row& r, bool in_place, bool v, form_result& f) {
    if (floor && v && in_place) return status{};  // the floor runs out of place only: n/a
    if (v && vendor.max_bytes > 0 && r.n * size_of(o.type) > vendor.max_bytes)
      return status{};  // larger than the vendor's largest call: n/a
    if (v && emulated) return measure_form(*me, o, r, in_place, false, f, true);
    return measure_form(*me, o, r, in_place, v, f);
  };
  return run_rank_rows(priced, shapes, sizes, info, job);
}

}  // namespace relay::bench
