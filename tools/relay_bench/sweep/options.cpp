#include "sweep/options.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>
#include <string_view>

#include "relay/core/names.hpp"
#include "relay/topology/parse.hpp"
#include "support/cli.hpp"
#include "sweep/sizes.hpp"

namespace relay::bench {

namespace {
constexpr name_table<run_mode, 3> run_mode_names{{"fused", "parallel", "single"}};
constexpr name_table<executor_kind, 5> executor_names{{"cpu", "gpu", "shm", "nccl", "ipc"}};
constexpr name_table<route_choice, 5> route_names{
    {"auto", "relay", "direct", "legacy", "pipelined"}};
constexpr name_table<baseline_kind, 8> baseline_names{
    {"auto", "nccl", "direct", "none", "floor", "floor-ll", "floor-barrier", "floor-job"}};
}  // namespace

std::string_view name(run_mode m) {
  return run_mode_names(m);
}
std::string_view name(executor_kind e) {
  return executor_names(e);
}
std::string_view name(route_choice r) {
  return route_names(r);
}
std::string_view name(baseline_kind b) {
  return baseline_names(b);
}

namespace {

// A link rate as --topology text takes it: 12, 12.5.
std::string number_text(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.10g", v);
  return text;
}

template <class T>
std::optional<T> parse_number(std::string_view s) {
  T value{};
  const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (error != std::errc{} || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return value;
}

std::optional<collective> parse_collective_name(std::string_view s) {
  if (auto c = relay::parse_collective(s)) return c;
  if (s == "all_reduce" || s == "all-reduce") return collective::allreduce;
  if (s == "reduce_scatter" || s == "reducescatter") return collective::reduce_scatter;
  if (s == "all_gather" || s == "allgather") return collective::all_gather;
  if (s == "all_to_all" || s == "alltoall") return collective::all_to_all;
  return std::nullopt;
}

// A parser of the names in `table`, for the option handlers below.
template <class E, std::size_t N>
auto parse_name(const name_table<E, N>& table) {
  return [&table](std::string_view s) { return table.parse(s); };
}

}  // namespace

std::string usage() {
  return R"(relay-bench: nccl-tests-style sweep of relay's collectives, with the cost model's
prediction and a baseline (NCCL/RCCL, or relay's direct route) side by side.

usage: relay-bench [options]

sweep
  -b, --minbytes SIZE     smallest size (default 4K); K, M, G are powers of 1024
  -e, --maxbytes SIZE     largest size (default 1G)
  -f, --stepfactor F      multiply the size by F, in (1, 1024], each step (default 2)
  -i, --stepbytes SIZE    add SIZE (> 0) each step instead of -f
  -C, --collective LIST   allreduce, reduce-scatter, all-gather, all-to-all, or all
                          (comma-separated; default allreduce)
  -A, --active LIST       active ranks per group, A: 2, 4, 8 or 16, below N (default 2)
  -N, --ranks N           ranks on the node, N, 2..64 (default 8)
  -m, --mode LIST         fused, parallel, single (default fused)
  -r, --route R           auto, relay, direct, legacy, pipelined (default auto: relay or
                          direct, whichever the cost model predicts faster, per size)
      --tiles T           pipeline depth of the pipelined route (single groups), 2..64
                          (default 4)
  -p, --permille P        allreduce offload share of the relay route, 1..999 (default:
                          the link-balanced one)
      --alignment E       chunk alignment in elements (default 128)
  -d, --datatype T        int8 uint8 int32 uint32 int64 uint64 float16 bfloat16 float32
                          float64, or half bf16 float double (default bfloat16)
  -o, --op OP             sum or avg (default sum): allreduce and reduce-scatter only
      --wire W            native (default), fp8 (the topology's encoding), fp8_e4m3 or
                          fp8_e4m3_fnuz: relay's data crosses links as fp8 blocks where the
                          cost model says it pays (float32, float16, bfloat16);
                          adds the wire taken and the largest relative error per form
      --wire-threshold B  with --wire fp8: bytes of a group's count from which fp8 is taken
                          (default: the cost model's threshold; 0: always)

measurement
  -n, --iters N           timed iterations; the median is reported (default 20; -x ipc,
                          nccl processes: the mean, see --per-call-events)
  -w, --warmup_iters N    untimed iterations first (default 5)
  -c, --check 0|1         check every element of one run of each size (default 1)
      --in-place 0|1      measure the in-place form too, where the collective has one
                          (default 1; 0: out of place only)
      --rotate SIZE       rotate buffer sets until they span SIZE, so timed runs do not
                          find their data in cache (default: twice the executor's cache;
                          0: never)
      --seed S            input data seed (default 1)
      --graph K           -x ipc: capture K calls into a graph and time its replays (the
                          time per call is a replay's over K); the check runs eagerly
      --per-call-events 0|1
                          -x ipc, nccl (processes): device events around each timed call,
                          the median of their times reported (default 0: one event pair
                          around the iterations, their time over N, as nccl-tests times)
      --split 0|1         -x ipc with -r direct: each group's calls on a communicator of
                          its own, split from the job's (relay::split_communicator), so
                          groups agree among their own ranks only (default 0)
      --helper-devices D0,D1,...
                          -x shm or ipc: helpers hosted by the processes, one device each
                          (docs/hosted-helpers.md): relay-run -n A starts the processes,
                          which run one group (-m single, -A N minus the helpers) and
                          drive the helpers' devices; priced as helpers

where
  -x, --executor E        cpu, gpu, shm, nccl or ipc (default cpu); shm: one rank per
                          process, under relay-run -n N; nccl: the nccl transport, a rank per
                          device, each rank a thread running its slice (or a process, under
                          relay-run); ipc: the ipc transport, one rank per process under
                          relay-run, ranks sharing the devices round-robin (parallel mode:
                          each group's plan on a copy of the job's communicator); a job of
                          processes runs shm and nccl fused and single
      --devices LIST      gpu: the device of each rank, e.g. 0,0,0,0,1,1,1,1
                          (default: ranks round-robin over the visible devices)
      --emulate-mesh B    gpu, ipc: emulate a mesh, one link per pair of ranks: every copy
                          between two ranks is paced so that each ordered pair moves at
                          most B GB/s (10^9 bytes/s; a value of 10^6 or more is read as
                          bytes/s: 12 and 12e9 are alike); ipc: RELAY_IPC_EMULATE_MESH on
                          every rank, native wire. Baseline: the direct route on the same
                          emulated mesh. Give -t mesh:B:US:OPUS with the emulator's own
                          latency (gpu_mesh_check prints it); default -t mesh:B
  -t, --topology T        what the prediction prices: mi300x, mi350x, h200-nvswitch,
                          mi250x, or mesh:GBPS[:US[:OPUS[:MEM[:CALLUS]]]] /
                          switched:GBPS[:US[:OPUS[:MEM[:CALLUS]]]] (MEM: GB/s
                          of a device memory, read + written; CALLUS: us a
                          call costs once)
                          (gpu_calibrate prints one; default mi300x)
      --baseline B        auto, nccl, direct, none, floor, floor-ll, floor-barrier,
                          floor-job (default auto: NCCL/RCCL where it can run these ranks,
                          else relay's direct route on this executor; with -x ipc, NCCL/RCCL
                          runs each group on a communicator of its own where every rank has
                          a device of its own, else none). The floors, -x ipc allreduce
                          only, are single-kernel one-shot allreduces among each group:
                          floor-ll pushes words that carry their call's epoch to every
                          member (no barrier; up to 1 MiB; launched early, as relay's ll
                          kernel, unless RELAY_BENCH_FLOOR_EARLY_LAUNCH=0); floor-barrier
                          reads the inputs in place between an entry and an exit barrier;
                          floor: floor-ll up to 1 MiB, floor-barrier above; floor-job:
                          floor-barrier whose entry meets every rank, as one relay call's
                          agreement does

output
      --csv FILE          one row per size and form (FILE - : standard output)
      --json FILE         the run and every row as JSON (FILE - : standard output)
      --progress 0|1      a progress line on stderr (default: when stderr is a terminal)
  -h, --help              this text
      --version           print relay-bench's version and exit

exit status: 0 all elements right; 1 some element wrong; 2 invalid command line;
3 the run failed (out of memory, executor error).
)";
}

parse_outcome parse_options(int argc, const char* const* argv) {
  parse_outcome out;
  options& o = out.opts;
  for (int i = 0; i < argc; ++i) {
    if (i > 0) o.command_line += ' ';
    o.command_line += argv[i];
  }

  // Each handler sets its option from the value, or returns why the value is invalid.
  using handler = std::function<std::string(std::string_view)>;
  struct option_spec {
    const char* shorthand;
    const char* longhand;
    handler apply;
  };
  auto bytes_into = [](std::int64_t& target) {
    return [&target](std::string_view v) -> std::string {
      const auto b = parse_bytes(v);
      if (!b) return cli::quoted(v) + " is not a size (bytes, or with K, M, G: powers of 1024)";
      target = *b;
      return {};
    };
  };
  auto int_into = [](int& target, cli::int_range range) {
    return [&target, range](std::string_view v) -> std::string {
      std::string error;
      if (auto x = cli::parse_int(v, range, error)) target = static_cast<int>(*x);
      return error;
    };
  };
  // A comma-separated list, each entry through `one` (which sets `error` when it returns
  // nothing). Entries are numbered from 1, as relay-plan's --counts numbers them.
  auto list_into = [](auto& target, auto one) {
    return [&target, one](std::string_view v) -> std::string {
      target.clear();
      const auto entries = 1 + static_cast<std::size_t>(std::count(v.begin(), v.end(), ','));
      for (std::size_t k = 1; k <= entries; ++k) {
        const std::size_t comma = v.find(',');
        std::string error;
        const auto x = one(v.substr(0, comma), error);
        if (!x)
          return entries == 1 ? error
                              : "entry " + std::to_string(k) + " of " + std::to_string(entries) +
                                    ": " + error;
        target.push_back(*x);
        if (comma != std::string_view::npos) v.remove_prefix(comma + 1);
      }
      return {};
    };
  };
  // A parser of one entry, with the message "'x' is not one of <choices>".
  auto entry_of = [](auto parse, std::string_view choices) {
    return [parse, choices](std::string_view v, std::string& error) {
      auto x = parse(v);
      if (!x) error = cli::quoted(v) + " is not one of " + std::string(choices);
      return x;
    };
  };
  auto int_entry = [](cli::int_range range) {
    return [range](std::string_view v, std::string& error) -> std::optional<int> {
      const auto x = cli::parse_int(v, range, error);
      return x ? std::optional<int>(static_cast<int>(*x)) : std::nullopt;
    };
  };
  auto one_of = [](auto& target, auto parse, std::string_view choices) {
    return [&target, parse, choices](std::string_view v) -> std::string {
      const auto x = parse(v);
      if (!x) return cli::quoted(v) + " is not one of " + std::string(choices);
      target = *x;
      return {};
    };
  };
  auto switch_into = [](auto& target) {
    return [&target](std::string_view v) -> std::string {
      if (v != "0" && v != "1") return cli::quoted(v) + " is not 0 or 1";
      target = v == "1";
      return {};
    };
  };
  const option_spec specs[] = {
      {"-b", "--minbytes", bytes_into(o.min_bytes)},
      {"-e", "--maxbytes", bytes_into(o.max_bytes)},
      {"-f", "--stepfactor",
       [&](std::string_view v) -> std::string {
         const auto f = parse_number<double>(v);
         if (!f || !(*f > 1 && *f <= 1024)) return cli::quoted(v) + " is not a number in (1, 1024]";
         o.step_factor = *f;
         return {};
       }},
      {"-i", "--stepbytes",
       [&](std::string_view v) -> std::string {
         const auto b = parse_bytes(v);
         if (!b || *b == 0)
           return cli::quoted(v) + " is not a size above 0 (K, M, G: powers of 1024)";
         o.step_bytes = *b;
         return {};
       }},
      {"-C", "--collective",
       [&](std::string_view v) -> std::string {
         if (v == "all") {
           o.collectives.assign(all_collectives.begin(), all_collectives.end());
           return {};
         }
         return list_into(o.collectives,
                          entry_of(parse_collective_name,
                                   "allreduce, reduce-scatter, all-gather, all-to-all or all"))(v);
       }},
      {"-A", "--active", list_into(o.actives, int_entry(cli::active_range))},
      {"-N", "--ranks", int_into(o.ranks, cli::bench_ranks_range)},
      {"-m", "--mode",
       list_into(o.modes, entry_of(parse_name(run_mode_names), "fused, parallel, single"))},
      {"-r", "--route",
       one_of(o.route, parse_name(route_names), "auto, relay, direct, legacy, pipelined")},
      {"-p", "--permille", int_into(o.permille, cli::permille_range)},
      {nullptr, "--tiles", int_into(o.tiles, cli::tiles_range)},
      {nullptr, "--alignment",
       [&](std::string_view v) -> std::string {
         std::string error;
         if (auto a = cli::parse_int(v, cli::alignment_range, error)) o.alignment = *a;
         return error;
       }},
      {"-d", "--datatype",
       one_of(
           o.type, [](std::string_view v) { return parse_dtype(v); },
           "int8, uint8, int32, uint32, int64, uint64, float16, bfloat16, float32, float64, "
           "half, bf16, float, double")},
      {"-o", "--op",
       one_of(
           o.op, [](std::string_view v) { return parse_reduce_op(v); }, "sum, avg")},
      {nullptr, "--wire",
       one_of(
           o.wire, [](std::string_view v) { return parse_wire(v); },
           "native, fp8, fp8_e4m3, fp8_e4m3_fnuz")},
      {nullptr, "--wire-threshold",
       [&](std::string_view v) -> std::string {
         std::string error;
         if (auto b = cli::parse_int(v, {-1, std::int64_t{1} << 50}, error)) o.wire_threshold = *b;
         return error;
       }},
      {"-n", "--iters", int_into(o.iterations, {1, 1000000})},
      {"-w", "--warmup_iters", int_into(o.warmup, {0, 1000000})},
      {"-c", "--check", switch_into(o.check)},
      {nullptr, "--in-place", switch_into(o.in_place)},
      {nullptr, "--split", switch_into(o.split)},
      {nullptr, "--helper-devices", list_into(o.helper_devices, int_entry({0, 65536}))},
      {nullptr, "--per-call-events", switch_into(o.per_call_events)},
      {nullptr, "--graph", int_into(o.graph_calls, {1, 100000})},
      {nullptr, "--rotate", bytes_into(o.rotate_bytes)},
      {nullptr, "--seed",
       [&](std::string_view v) -> std::string {
         auto s = parse_number<std::uint64_t>(v);
         if (!s) return cli::quoted(v) + " is not a whole number of 0 or more";
         o.seed = *s;
         return {};
       }},
      {"-x", "--executor",
       one_of(o.executor, parse_name(executor_names), "cpu, gpu, shm, nccl, ipc")},
      {nullptr, "--devices", list_into(o.devices, int_entry({0, 1023}))},
      {nullptr, "--emulate-mesh",
       [&](std::string_view v) -> std::string {
         const auto b = parse_number<double>(v);
         if (!b || !(*b > 0) || !std::isfinite(*b))
           return cli::quoted(v) + " is not a link rate above 0 (GB/s, or bytes/s from 1e6)";
         o.emulate_mesh_gbps = *b >= 1e6 ? *b / 1e9 : *b;
         if (o.emulate_mesh_gbps < 0.001)
           return cli::quoted(v) + " is below 1 MB/s: too slow a link to emulate";
         return {};
       }},
      {"-t", "--topology",
       [&](std::string_view v) -> std::string {
         o.topology_text = v;
         return {};  // checked once N is known
       }},
      {nullptr, "--baseline",
       one_of(o.baseline, parse_name(baseline_names),
              "auto, nccl, direct, none, floor, floor-ll, floor-barrier, floor-job")},
      {nullptr, "--csv",
       [&](std::string_view v) -> std::string {
         o.csv_path = v;
         return v.empty() ? "an empty file name" : "";
       }},
      {nullptr, "--json",
       [&](std::string_view v) -> std::string {
         o.json_path = v;
         return v.empty() ? "an empty file name" : "";
       }},
      {nullptr, "--progress",
       [&](std::string_view v) -> std::string {
         bool on = false;
         std::string error = switch_into(on)(v);
         if (error.empty()) o.progress = on ? 1 : 0;
         return error;
       }},
  };

  cli::seen_options seen;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      out.help = true;
      return out;
    }
    if (arg == "--version") {
      out.version = true;
      return out;
    }
  }
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const option_spec* match = nullptr;
    std::optional<std::string_view> value;
    for (const option_spec& s : specs) {
      const std::string_view l = s.longhand;
      if (arg == l || (s.shorthand != nullptr && arg == s.shorthand)) {
        match = &s;
      } else if (arg.starts_with(l) && arg.size() > l.size() && arg[l.size()] == '=') {
        match = &s;
        value = arg.substr(l.size() + 1);
      } else if (s.shorthand != nullptr && arg.size() > 2 && arg.starts_with(s.shorthand) &&
                 !arg.starts_with("--")) {
        match = &s;  // -b4K
        value = arg.substr(2);
      }
      if (match != nullptr) break;
    }
    if (match == nullptr) {
      out.error = "unknown option " + cli::quoted(arg) + " (relay-bench --help lists them)";
      return out;
    }
    if (std::string error = seen.add(match->longhand); !error.empty()) {
      out.error = error;
      return out;
    }
    if (!value) {
      if (i + 1 >= argc) {
        out.error = std::string(match->longhand) + " needs a value";
        return out;
      }
      value = argv[++i];
    }
    if (std::string error = match->apply(*value); !error.empty()) {
      out.error = std::string(match->longhand) + ": " + error;
      return out;
    }
  }

  // What only the whole command line can tell.
  if (o.min_bytes > o.max_bytes) {
    out.error = "--minbytes (" + std::to_string(o.min_bytes) + ") is larger than --maxbytes (" +
                std::to_string(o.max_bytes) + ")";
    return out;
  }
  if (seen.contains("--stepfactor") && seen.contains("--stepbytes")) {
    out.error = "--stepfactor and --stepbytes exclude each other";
    return out;
  }
  if (o.min_bytes == 0 && o.step_bytes == 0) {
    out.error = "--minbytes 0 with a step factor never grows; give -b > 0 or --stepbytes";
    return out;
  }
  for (int a : o.actives)
    if (a > o.ranks || (a == o.ranks && o.route != route_choice::direct)) {
      out.error = "--active " + std::to_string(a) + " with --ranks " + std::to_string(o.ranks) +
                  ": A must be smaller than N (a relay needs at least one helper), or equal to "
                  "it with --route direct";
      return out;
    }
  if (seen.contains("--permille") && o.route != route_choice::relay &&
      o.route != route_choice::automatic) {
    out.error = "--permille shapes the relay route only";
    return out;
  }
  if (seen.contains("--tiles") && o.route != route_choice::pipelined) {
    out.error = "--tiles: a tile count applies to the pipelined route only (-r pipelined)";
    return out;
  }
  const bool reduces = std::any_of(o.collectives.begin(), o.collectives.end(), [](collective c) {
    return c == collective::allreduce || c == collective::reduce_scatter;
  });
  if (seen.contains("--op") && !reduces) {
    out.error = "--op " + std::string(relay::name(o.op)) + ": " +
                std::string(relay::name(o.collectives.front())) +
                " does not reduce (only allreduce and reduce-scatter do)";
    return out;
  }
  if (seen.contains("--op") && reduces &&
      std::any_of(o.collectives.begin(), o.collectives.end(), [](collective c) {
        return c == collective::all_gather || c == collective::all_to_all;
      }))
    out.warnings.push_back("--op " + std::string(relay::name(o.op)) +
                           " applies to the allreduce and reduce-scatter rows only");
  if (o.per_call_events && o.executor != executor_kind::ipc && o.executor != executor_kind::nccl) {
    out.error =
        "--per-call-events times calls between device events: it needs --executor ipc "
        "or nccl";
    return out;
  }
  if (o.graph_calls > 0 && o.executor != executor_kind::ipc) {
    out.error = "--graph times replays of captured calls: it needs --executor ipc";
    return out;
  }
  if (is_fp8(o.wire) && !fp8_wire_dtype(o.type)) {
    out.error = "--wire " + std::string(name(o.wire)) +
                ": takes float32, float16 or bfloat16, not " + std::string(name(o.type));
    return out;
  }
  if (seen.contains("--wire-threshold") && !is_fp8(o.wire)) {
    out.error = "--wire-threshold needs --wire fp8 (or fp8_e4m3, fp8_e4m3_fnuz)";
    return out;
  }
  if (!o.devices.empty() && o.executor != executor_kind::gpu) {
    out.error = "--devices maps ranks to GPUs: it needs --executor gpu";
    return out;
  }
  if (o.emulate_mesh_gbps > 0) {
    if (o.executor != executor_kind::gpu && o.executor != executor_kind::ipc) {
      out.error =
          "--emulate-mesh paces the GPU executor's copies or the ipc transport's pushes: it "
          "needs --executor gpu or ipc";
      return out;
    }
    if (o.executor == executor_kind::ipc && o.split) {
      out.error =
          "--emulate-mesh: --split runs each group on a transport of its own, and transports "
          "do not share their links";
      return out;
    }
    if (o.executor == executor_kind::ipc && is_fp8(o.wire)) {
      out.error =
          "--emulate-mesh -x ipc paces native pushes only, not the fp8 wire's quantized "
          "images: use --wire native";
      return out;
    }
    if (is_floor(o.baseline)) {
      out.error = "--emulate-mesh paces relay's copies, not the floor's: use --baseline direct";
      return out;
    }
    if (std::find(o.modes.begin(), o.modes.end(), run_mode::parallel) != o.modes.end()) {
      out.error =
          "--emulate-mesh: parallel mode runs an executor (or a transport) per group, and "
          "those do not share their links; use fused or single";
      return out;
    }
    if (o.baseline == baseline_kind::nccl) {
      out.error = "--emulate-mesh paces relay's copies, not NCCL's: use --baseline direct";
      return out;
    }
    if (!seen.contains("--topology")) {
      o.topology_text = "mesh:" + number_text(o.emulate_mesh_gbps);
      out.warnings.push_back(
          "--emulate-mesh without --topology: predictions price " + o.topology_text +
          " at the presets' 10 us a step; gpu_mesh_check measures the emulator's own, for -t "
          "mesh:B:US:OPUS");
    }
  }
  std::string topology_error;
  if (auto t = cli::parse_topology_option(o.topology_text, o.ranks, topology_error)) {
    o.topo = *t;
    if (o.emulate_mesh_gbps > 0 &&
        (t->kind != fabric::mesh ||
         std::abs(t->link_bandwidth / 1e9 - o.emulate_mesh_gbps) > 1e-6 * o.emulate_mesh_gbps))
      out.warnings.push_back(
          "--topology " + o.topology_text + " is not the emulated mesh of --emulate-mesh " +
          number_text(o.emulate_mesh_gbps) + " GB/s: predictions price another machine");
  } else {
    out.error = "--topology: " + topology_error;
    return out;
  }
  if (!o.devices.empty() && static_cast<int>(o.devices.size()) != o.ranks) {
    out.error = "--devices names " + std::to_string(o.devices.size()) + " devices for " +
                std::to_string(o.ranks) + " ranks; give one per rank";
    return out;
  }
  if (is_floor(o.baseline) && o.executor != executor_kind::ipc) {
    out.error = "--baseline " + std::string(name(o.baseline)) + " runs beside -x ipc only";
    return out;
  }
  if (o.split) {
    // A child communicator holds one group's ranks and nothing else: no helper to relay
    // through, so the direct route is the only one it can run.
    if (o.executor != executor_kind::ipc) {
      out.error = "--split runs each group on a communicator of its own: it needs -x ipc";
      return out;
    }
    if (o.route != route_choice::direct) {
      out.error =
          "--split: a group's own communicator has no helpers, so its calls take the direct "
          "route; pass -r direct";
      return out;
    }
    if (std::find(o.modes.begin(), o.modes.end(), run_mode::parallel) != o.modes.end()) {
      out.error =
          "--split runs each group's direct calls on the group's own communicator; parallel "
          "mode runs each group's plan on a copy of the job's: give -m fused or single";
      return out;
    }
  }
  if (!o.helper_devices.empty()) {
    const int helpers = static_cast<int>(o.helper_devices.size());
    if (o.executor != executor_kind::shm && o.executor != executor_kind::ipc) {
      out.error = "--helper-devices: hosted helpers run on -x shm or -x ipc";
      return out;
    }
    if (std::any_of(o.modes.begin(), o.modes.end(),
                    [](run_mode m) { return m != run_mode::single; })) {
      out.error =
          "--helper-devices: hosted helpers hold no buffers, so the processes run one "
          "group: give -m single";
      return out;
    }
    for (int A : o.actives)
      if (A + helpers != o.ranks) {
        out.error = "--helper-devices names " + std::to_string(helpers) + " helpers of -N " +
                    std::to_string(o.ranks) + ": the processes are the group, -A " +
                    std::to_string(o.ranks - helpers) + ", not " + std::to_string(A);
        return out;
      }
    if (o.split) {
      out.error = "--helper-devices: a communicator with hosted helpers is not split";
      return out;
    }
  }
  if (o.csv_path == "-" && o.json_path == "-") {
    out.error = "--csv - and --json - both want standard output; send one to a file";
    return out;
  }
  return out;
}

}  // namespace relay::bench
