// The command line: what it accepts and what it refuses, with a message that says why.
#include "sweep/options.hpp"

#include <catch2/catch.hpp>
#include <initializer_list>
#include <string>
#include <vector>

using namespace relay;
using namespace relay::bench;

namespace {
parse_outcome parse(std::initializer_list<const char*> args) {
  std::vector<const char*> argv{"relay-bench"};
  argv.insert(argv.end(), args.begin(), args.end());
  return parse_options(static_cast<int>(argv.size()), argv.data());
}
}  // namespace

TEST_CASE("options: defaults are the spec's sweep", "[bench]") {
  const parse_outcome p = parse({});
  REQUIRE(p.error.empty());
  CHECK(p.opts.min_bytes == 4096);
  CHECK(p.opts.max_bytes == std::int64_t{1} << 30);
  CHECK(p.opts.type == dtype::bfloat16);
  CHECK(p.opts.executor == executor_kind::cpu);
  CHECK(p.opts.route == route_choice::automatic);
  CHECK(p.opts.check);
  CHECK(std::string(p.opts.topo.name) == "mi300x");
}

TEST_CASE("options: a full command line", "[bench]") {
  const parse_outcome p = parse({"-b",
                                 "8K",
                                 "--maxbytes=2M",
                                 "-f",
                                 "4",
                                 "-C",
                                 "all",
                                 "-A",
                                 "2,4",
                                 "-m",
                                 "fused,single",
                                 "-N",
                                 "8",
                                 "-d",
                                 "float",
                                 "-o",
                                 "avg",
                                 "-n50",
                                 "-w",
                                 "2",
                                 "-c",
                                 "0",
                                 "-x",
                                 "gpu",
                                 "--devices",
                                 "0,0,0,0,1,1,1,1",
                                 "-t",
                                 "switched:450:5",
                                 "--route",
                                 "relay",
                                 "-p",
                                 "500",
                                 "--csv",
                                 "out.csv",
                                 "--baseline",
                                 "direct"});
  REQUIRE(p.error == "");
  const options& o = p.opts;
  CHECK(o.min_bytes == 8192);
  CHECK(o.max_bytes == 2 << 20);
  CHECK(o.step_factor == 4);
  CHECK(o.collectives.size() == 4);
  CHECK(o.actives == std::vector<int>{2, 4});
  CHECK(o.modes == std::vector<run_mode>{run_mode::fused, run_mode::single});
  CHECK(o.type == dtype::float32);
  CHECK(o.op == reduce_op::avg);
  CHECK(o.iterations == 50);
  CHECK(o.warmup == 2);
  CHECK_FALSE(o.check);
  CHECK(o.executor == executor_kind::gpu);
  CHECK(o.devices == std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1});
  CHECK(o.topo.kind == fabric::switched);
  CHECK(o.topo.link_bandwidth == 450e9);
  CHECK(o.topo.step_latency == Approx(5e-6));
  CHECK(o.route == route_choice::relay);
  CHECK(o.permille == 500);
  CHECK(o.csv_path == "out.csv");
  CHECK(o.baseline == baseline_kind::direct);
}

TEST_CASE("options: the pipelined route and its depth", "[bench]") {
  const parse_outcome p = parse({"-r", "pipelined", "--tiles", "8", "-m", "single"});
  REQUIRE(p.error.empty());
  CHECK(p.opts.route == route_choice::pipelined);
  CHECK(p.opts.tiles == 8);
  CHECK(parse({}).opts.tiles == 4);
  CHECK_THAT(parse({"--tiles", "1"}).error, Catch::Contains("--tiles"));
}

TEST_CASE("options: -x ipc and --graph", "[bench]") {
  const parse_outcome p = parse({"-x", "ipc", "--graph", "100"});
  REQUIRE(p.error.empty());
  CHECK(p.opts.executor == executor_kind::ipc);
  CHECK(p.opts.graph_calls == 100);
  CHECK(parse({"-x", "ipc"}).opts.graph_calls == 0);  // eager unless asked
  CHECK_THAT(parse({"--graph", "100"}).error, Catch::Contains("it needs --executor ipc"));
  CHECK_THAT(parse({"-x", "ipc", "--graph", "0"}).error, Catch::Contains("--graph"));
}

TEST_CASE("options: one event pair around the iterations unless --per-call-events", "[bench]") {
  CHECK_FALSE(parse({"-x", "ipc"}).opts.per_call_events);  // as nccl-tests times
  for (const char* x : {"ipc", "nccl"}) {
    const parse_outcome p = parse({"-x", x, "--per-call-events", "1"});
    REQUIRE(p.error.empty());
    CHECK(p.opts.per_call_events);
  }
  CHECK_THAT(parse({"--per-call-events", "1"}).error,
             Catch::Contains("--per-call-events times calls between device events: it needs "
                             "--executor ipc or nccl"));
  CHECK_THAT(parse({"-x", "shm", "--per-call-events", "1"}).error,
             Catch::Contains("it needs --executor ipc or nccl"));
  CHECK(parse({"--per-call-events", "0"}).error.empty());
}

TEST_CASE("options: collective names as NCCL and nccl-tests spell them", "[bench]") {
  const parse_outcome p = parse({"-C", "alltoall,reduce_scatter,allgather,all-reduce"});
  REQUIRE(p.error.empty());
  CHECK(p.opts.collectives ==
        std::vector<collective>{collective::all_to_all, collective::reduce_scatter,
                                collective::all_gather, collective::allreduce});
}

TEST_CASE("options: refusals name the problem", "[bench]") {
  auto error_of = [](std::initializer_list<const char*> args) { return parse(args).error; };
  CHECK_THAT(error_of({"--bogus"}), Catch::Contains("unknown option '--bogus'"));
  CHECK_THAT(error_of({"-b"}), Catch::Contains("needs a value"));
  CHECK(error_of({"-b", "4X"}) ==
        "--minbytes: '4X' is not a size (bytes, or with K, M, G: powers of 1024)");
  CHECK_THAT(error_of({"-b", "2G", "-e", "1G"}), Catch::Contains("larger than --maxbytes"));
  CHECK(error_of({"-A", "8"}) ==
        "--active 8 with --ranks 8: A must be smaller than N (a relay "
        "needs at least one helper), or equal to it with --route direct");
  CHECK(error_of({"-N", "1"}) == "--ranks: '1' is out of range (2..64)");
  CHECK(error_of({"-N", "2"}) ==
        "--active 2 with --ranks 2: A must be smaller than N (a relay "
        "needs at least one helper), or equal to it with --route direct");
  CHECK(error_of({"-N", "2", "-r", "direct"}).empty());
  CHECK(error_of({"-A", "2,999999999999"}) ==
        "--active: entry 2 of 2: '999999999999' is out of range (2..16)");
  CHECK_THAT(error_of({"-C", "broadcast"}), Catch::Contains("--collective"));
  CHECK_THAT(error_of({"-m", "fused,bogus"}), Catch::Contains("--mode"));
  CHECK_THAT(error_of({"-d", "float8"}), Catch::Contains("--datatype"));
  CHECK_THAT(error_of({"-n", "0"}), Catch::Contains("--iters"));
  CHECK_THAT(error_of({"-c", "2"}), Catch::Contains("--check"));
  CHECK_THAT(error_of({"-t", "dgx"}), Catch::StartsWith("--topology: 'dgx' is not one of mi300x"));
  CHECK_THAT(error_of({"-t", "mesh:-3"}), Catch::StartsWith("--topology: 'mesh:-3' is not one of"));
  CHECK(error_of({"-t", "mi250x", "-N", "16"}) ==
        "--topology: 'mi250x' is a fixed machine of 8 ranks, not 16");
  CHECK(error_of({"-x", "gpu", "--devices", "0,1"}) ==
        "--devices names 2 devices for 8 ranks; give one per rank");
  CHECK_THAT(error_of({"-r", "direct", "-p", "500"}), Catch::Contains("relay route only"));
  CHECK_THAT(error_of({"--csv", "-", "--json", "-"}), Catch::Contains("both want standard output"));
  CHECK(parse({"--help"}).help);
  CHECK(parse({"-b", "4K", "--version"}).version);
}

TEST_CASE("options: a repeated option is refused, not overridden", "[bench]") {
  CHECK(parse({"-b", "4K", "--minbytes=8K"}).error == "--minbytes is given twice");
  CHECK(parse({"-n", "5", "-n", "5"}).error == "--iters is given twice");
}

TEST_CASE("options: options that do not apply are errors or warnings", "[bench]") {
  CHECK(parse({"-C", "all-gather", "-o", "avg"}).error ==
        "--op avg: all-gather does not reduce (only allreduce and reduce-scatter do)");
  const parse_outcome mixed = parse({"-C", "allreduce,all-to-all", "-o", "avg"});
  REQUIRE(mixed.error.empty());
  CHECK(mixed.warnings ==
        std::vector<std::string>{"--op avg applies to the allreduce and reduce-scatter rows only"});
  CHECK(parse({}).warnings.empty());
  CHECK(parse({"--devices", "0,0,0,0,0,0,0,0"}).error ==
        "--devices maps ranks to GPUs: it needs --executor gpu");
  CHECK(parse({"-i", "0"}).error ==
        "--stepbytes: '0' is not a size above 0 (K, M, G: powers of 1024)");
  CHECK(parse({"-f", "2", "-i", "4K"}).error == "--stepfactor and --stepbytes exclude each other");
  CHECK(parse({"--tiles", "8"}).error ==
        "--tiles: a tile count applies to the pipelined route only (-r pipelined)");
}

TEST_CASE("options: --emulate-mesh and --in-place", "[bench]") {
  // GB/s, or bytes/s from 1e6 on: 12 and 12e9 are one rate.
  for (const char* rate : {"12", "12e9", "12000000000"}) {
    const parse_outcome p = parse({"-x", "gpu", "--emulate-mesh", rate, "-t", "mesh:12:8.5:0.2"});
    INFO(rate);
    REQUIRE(p.error.empty());
    CHECK(p.opts.emulate_mesh_gbps == 12);
    CHECK(p.warnings.empty());
    CHECK(p.opts.topo.kind == fabric::mesh);
    CHECK(p.opts.topo.link_bandwidth == 12e9);
    CHECK(p.opts.topo.step_latency == Approx(8.5e-6));
  }
  // Without --topology the prediction prices the emulated mesh, with a warning about latency.
  const parse_outcome bare = parse({"-x", "gpu", "--emulate-mesh", "12.5"});
  REQUIRE(bare.error.empty());
  CHECK(bare.opts.topology_text == "mesh:12.5");
  CHECK(bare.opts.topo.link_bandwidth == 12.5e9);
  CHECK(bare.opts.topo.step_latency == Approx(10e-6));  // the text form's default
  REQUIRE(bare.warnings.size() == 1);
  CHECK(bare.warnings[0].find("--emulate-mesh without --topology: predictions price mesh:12.5") ==
        0);
  // A topology that is not the emulated mesh is allowed, with a warning.
  const parse_outcome other = parse({"-x", "gpu", "--emulate-mesh", "12", "-t", "mi300x"});
  REQUIRE(other.error.empty());
  CHECK(other.warnings ==
        std::vector<std::string>{"--topology mi300x is not the emulated mesh of --emulate-mesh 12 "
                                 "GB/s: predictions price another machine"});
  CHECK(parse({}).opts.emulate_mesh_gbps == 0);  // off by default

  const std::string needs_gpu_or_ipc =
      "--emulate-mesh paces the GPU executor's copies or the ipc transport's pushes: it needs "
      "--executor gpu or ipc";
  CHECK(parse({"--emulate-mesh", "12"}).error == needs_gpu_or_ipc);
  CHECK(parse({"-x", "nccl", "--emulate-mesh", "12"}).error == needs_gpu_or_ipc);
  CHECK(parse({"-x", "shm", "--emulate-mesh", "12"}).error == needs_gpu_or_ipc);
  CHECK(parse({"-x", "gpu", "--emulate-mesh", "12", "-m", "fused,parallel"}).error ==
        "--emulate-mesh: parallel mode runs an executor (or a transport) per group, and those "
        "do not share their links; use fused or single");
  CHECK(parse({"-x", "gpu", "--emulate-mesh", "12", "--baseline", "nccl"}).error ==
        "--emulate-mesh paces relay's copies, not NCCL's: use --baseline direct");
  CHECK(parse({"-x", "gpu", "--baseline", "floor"}).error ==
        "--baseline floor runs beside -x ipc only");
  // -x ipc: the ipc transport's pushes, hosted helpers included; the direct route's baseline.
  const parse_outcome ipc =
      parse({"-x", "ipc", "-N", "8", "-A", "2", "-m", "single", "--helper-devices", "0,0,0,0,0,0",
             "--emulate-mesh", "12", "-t", "mesh:12:8.5:0.2"});
  REQUIRE(ipc.error.empty());
  CHECK(ipc.opts.emulate_mesh_gbps == 12);
  CHECK(ipc.opts.topo.link_bandwidth == 12e9);
  CHECK(parse({"-x", "ipc", "--emulate-mesh", "12", "-m", "parallel"}).error ==
        "--emulate-mesh: parallel mode runs an executor (or a transport) per group, and those "
        "do not share their links; use fused or single");
  CHECK(parse({"-x", "ipc", "--emulate-mesh", "12", "--baseline", "nccl"}).error ==
        "--emulate-mesh paces relay's copies, not NCCL's: use --baseline direct");
  CHECK(parse({"-x", "ipc", "--emulate-mesh", "12", "--baseline", "floor"}).error ==
        "--emulate-mesh paces relay's copies, not the floor's: use --baseline direct");
  CHECK(parse({"-x", "ipc", "--emulate-mesh", "12", "-r", "direct", "--split", "1"}).error ==
        "--emulate-mesh: --split runs each group on a transport of its own, and transports do "
        "not share their links");
  CHECK(parse({"-x", "ipc", "--emulate-mesh", "12", "-d", "bfloat16", "--wire", "fp8"}).error ==
        "--emulate-mesh -x ipc paces native pushes only, not the fp8 wire's quantized images: "
        "use --wire native");
  CHECK(parse({"-x", "gpu", "--emulate-mesh", "12", "-d", "bfloat16", "--wire", "fp8"})
            .error.empty());  // the GPU executor paces fp8 images too
  CHECK(parse({"-x", "ipc", "--baseline", "floor"}).error == "");
  CHECK(parse({"-x", "gpu", "--baseline", "floor-job"}).error ==
        "--baseline floor-job runs beside -x ipc only");
  CHECK(parse({"-x", "ipc", "--baseline", "floor-job"}).opts.baseline == baseline_kind::floor_job);
  CHECK(parse({"-x", "ipc", "--baseline", "floor"}).opts.baseline == baseline_kind::floor);
  CHECK(parse({"-x", "ipc", "--baseline", "floor-ll"}).opts.baseline == baseline_kind::floor_ll);
  CHECK(parse({"-x", "ipc", "--baseline", "floor-barrier"}).opts.baseline ==
        baseline_kind::floor_barrier);
  CHECK(parse({"-x", "gpu", "--baseline", "floor-ll"}).error ==
        "--baseline floor-ll runs beside -x ipc only");
  CHECK(parse({"-x", "gpu", "--baseline", "floor-barrier"}).error ==
        "--baseline floor-barrier runs beside -x ipc only");
  CHECK(parse({"-x", "ipc", "--baseline", "floor-fast"}).error ==
        "--baseline: 'floor-fast' is not one of auto, nccl, direct, none, floor, floor-ll, "
        "floor-barrier, floor-job");
  CHECK_FALSE(parse({"-x", "ipc"}).opts.split);
  CHECK(parse({"-x", "ipc", "-r", "direct", "--split", "1"}).error == "");
  CHECK(parse({"-x", "ipc", "-r", "direct", "--split", "1"}).opts.split);
  CHECK(parse({"-x", "shm", "-r", "direct", "--split", "1"}).error ==
        "--split runs each group on a communicator of its own: it needs -x ipc");
  CHECK(parse({"-x", "ipc", "--split", "1"}).error ==
        "--split: a group's own communicator has no helpers, so its calls take the direct "
        "route; pass -r direct");
  CHECK(parse({"-x", "ipc", "-r", "relay", "--split", "1"}).error ==
        "--split: a group's own communicator has no helpers, so its calls take the direct "
        "route; pass -r direct");
  CHECK(parse({"-x", "gpu", "--emulate-mesh", "0"}).error ==
        "--emulate-mesh: '0' is not a link rate above 0 (GB/s, or bytes/s from 1e6)");
  CHECK(parse({"-x", "gpu", "--emulate-mesh", "fast"}).error ==
        "--emulate-mesh: 'fast' is not a link rate above 0 (GB/s, or bytes/s from 1e6)");
  CHECK(parse({"-x", "gpu", "--emulate-mesh", "0.0001"}).error ==
        "--emulate-mesh: '0.0001' is below 1 MB/s: too slow a link to emulate");

  CHECK(parse({}).opts.in_place);
  const parse_outcome out_only = parse({"--in-place", "0"});
  REQUIRE(out_only.error.empty());
  CHECK_FALSE(out_only.opts.in_place);
  CHECK_FALSE(measures_in_place(out_only.opts, collective::allreduce));
  CHECK(measures_in_place(parse({}).opts, collective::allreduce));
  CHECK_FALSE(measures_in_place(parse({}).opts, collective::all_to_all));  // has none
}
