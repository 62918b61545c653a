// relay-bench's command line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "relay/core/collective.hpp"
#include "relay/core/dtype.hpp"
#include "relay/core/wire.hpp"
#include "relay/topology/topology.hpp"

namespace relay::bench {

// fused and single are plan modes; parallel runs N/A independent single-group plans at once
// (each group its own plan and its own helpers), as the spec's parallel independent-comm sweep.
enum class run_mode : unsigned char { fused, parallel, single };
std::string_view name(run_mode m);

// shm: one rank of a multi-process job (relay-run), over the shm transport (shm_bench.hpp).
// nccl: the nccl transport, a rank per device, each rank a thread running its slice (or one
// process per rank under relay-run).
// ipc: one rank of a multi-process job (relay-run), over the ipc transport (rank_bench.hpp).
enum class executor_kind : unsigned char { cpu, gpu, shm, nccl, ipc };
std::string_view name(executor_kind e);

// auto: the route the cost model predicts faster, per size.
enum class route_choice : unsigned char { automatic, relay, direct, legacy, pipelined };
std::string_view name(route_choice r);

// What the speedup column divides by. automatic: NCCL (or RCCL) where it can run these ranks,
// else relay's direct route on the same executor.
// The floors, -x ipc only: single-kernel one-shot allreduces beside relay (bench/tools/floor).
// floor: the fastest, by size (ll up to its largest default size, barrier above). floor_ll: ll,
// pushed words that carry their call's epoch, no barrier. floor_barrier: barrier, each group's
// inputs read in place between an entry barrier and an exit barrier. floor_job: barrier whose
// entry meets every rank, as the agreement of one relay call over several groups does
// (docs/ipc-transport.md).
enum class baseline_kind : unsigned char {
  automatic,
  nccl,
  direct,
  none,
  floor,
  floor_ll,
  floor_barrier,
  floor_job
};
// Any floor.
constexpr bool is_floor(baseline_kind b) {
  return b == baseline_kind::floor || b == baseline_kind::floor_ll ||
         b == baseline_kind::floor_barrier || b == baseline_kind::floor_job;
}
std::string_view name(baseline_kind b);

struct options {
  // The sweep.
  std::int64_t min_bytes = 4 << 10;
  std::int64_t max_bytes = std::int64_t{1} << 30;
  double step_factor = 2;
  std::int64_t step_bytes = 0;  // > 0: additive steps instead of the factor
  std::vector<collective> collectives{collective::allreduce};
  std::vector<int> actives{2};
  std::vector<run_mode> modes{run_mode::fused};
  int ranks = 8;
  dtype type = dtype::bfloat16;
  reduce_op op = reduce_op::sum;
  route_choice route = route_choice::automatic;
  int permille = 0;
  // Pipeline depth of the pipelined route: cli::default_tiles, as relay-plan's (this header is
  // also compiled by nvcc and hipcc, which do not see tools/support; tests/tools/
  // test_both_clis.cpp checks the two defaults agree).
  int tiles = 4;
  std::int64_t alignment = 128;
  // How relay's plans cross links (the baseline always runs natively): --wire, and the bytes of
  // a group's count from which fp8 is taken (-1: the cost model's threshold on the topology).
  wire_format wire = wire_format::native;
  std::int64_t wire_threshold = -1;
  // Measurement.
  int iterations = 20;
  int warmup = 5;
  bool check = true;
  bool in_place = true;  // measure the in-place form too, where the collective has one
  int graph_calls = 0;   // > 0 (-x ipc): time replays of a graph of this many captured calls
  // Processes on devices (-x ipc, nccl under relay-run): a pair of device events around each
  // timed call, instead of one pair around the iterations (nccl-tests' way, the default).
  bool per_call_events = false;
  // -x ipc: each group's calls on a communicator split from the job's, one per group, so a
  // group's entry meets its own ranks only (relay/comm/split.hpp).
  bool split = false;
  // -x shm, ipc: helpers hosted by the processes (docs/hosted-helpers.md; RELAY_HELPER_DEVICES),
  // one device per helper rank; the processes run one group of A = N - helpers.
  std::vector<int> helper_devices;
  std::int64_t rotate_bytes = -1;  // -1: twice the executor's cache; 0: never rotate
  std::uint64_t seed = 1;
  // Where it runs.
  executor_kind executor = executor_kind::cpu;
  std::vector<int> devices;  // rank -> device (gpu); empty: ranks round-robin over all devices
  baseline_kind baseline = baseline_kind::automatic;
  // > 0 (-x gpu): emulate a mesh, every ordered pair of ranks paced to this many GB/s (10^9
  // bytes) each way (gpu_options::emulate_mesh).
  double emulate_mesh_gbps = 0;
  std::string topology_text = "mi300x";
  topology topo{};
  // Output.
  std::string csv_path, json_path;  // "-": standard output (instead of the table)
  int progress = -1;                // -1: on when stderr is a terminal
  std::string command_line;         // as given, for the records
};

struct parse_outcome {
  options opts;
  bool help = false;
  bool version = false;
  std::string error;  // non-empty: the command line is invalid, and why
  // Options that apply to some rows only (printed on stderr before the run).
  std::vector<std::string> warnings;
};

parse_outcome parse_options(int argc, const char* const* argv);
std::string usage();

// Whether rows of collective c measure the in-place form: it has one, and --in-place is on.
inline bool measures_in_place(const options& o, collective c) {
  return o.in_place && has_in_place(c);
}

}  // namespace relay::bench
