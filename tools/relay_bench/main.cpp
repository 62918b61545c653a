// relay-bench: an nccl-tests-style sweep of relay's collectives on one executor, with the cost
// model's prediction and a baseline side by side. See the README's "relay-bench" section.
#include <fmt/format.h>
#include <cmath>
#include <cstdio>
#include <memory>

#include "backends/backend.hpp"
#include "baseline/vendor.hpp"
#include "ranks/rank_bench.hpp"
#include "ranks/shm.hpp"
#include "relay/schedule/generate.hpp"
#include "report/conventions.hpp"
#include "report/progress.hpp"
#include "report/report.hpp"
#include "support/cli.hpp"
#include "support/host_memory.hpp"
#include "sweep/measure.hpp"
#include "sweep/options.hpp"
#include "sweep/sizes.hpp"

namespace {

using namespace relay;
using namespace relay::bench;

// Every configuration the command line asks for, or the first that has no schedule.
std::vector<call_shape> shapes_of(const options& o, std::string& error) {
  std::vector<call_shape> shapes;
  for (collective c : o.collectives)
    for (int a : o.actives)
      for (run_mode m : o.modes) {
        const call_shape s{c, a, o.ranks, m, o.permille, o.tiles};
        std::vector<route> routes;
        if (o.route == route_choice::automatic)
          routes = {route::relay, route::direct};
        else
          routes = {resolve_route(s, o.route, o.topo, 0, 1)};
        for (route r : routes)
          if (const char* why = spec_error(plan_spec(s, r))) {
            error = fmt::format("{} A={} N={} {} ({} route): {}", name(c), a, o.ranks, name(m),
                                name(r), why);
            return {};
          }
        if (m == run_mode::parallel && o.ranks % a != 0) {
          error = fmt::format("parallel mode runs N/A groups: A={} must divide N={}", a, o.ranks);
          return {};
        }
        shapes.push_back(s);
      }
  return shapes;
}

struct output_files {
  std::FILE* table = stdout;  // null: no table
  std::FILE* csv = nullptr;
  std::FILE* json = nullptr;
  ~output_files() {
    for (std::FILE* f : {csv, json})
      if (f != nullptr && f != stdout) std::fclose(f);
  }
};

std::FILE* open_output(const std::string& path) {
  return path == "-" ? stdout : std::fopen(path.c_str(), "w");
}

}  // namespace

int main(int argc, char** argv) {
  const parse_outcome parsed = parse_options(argc, argv);
  if (parsed.help) {
    fmt::print("{}", usage());
    return 0;
  }
  if (parsed.version) {
    fmt::print("relay-bench {}\n", cli::version);
    return 0;
  }
  if (!parsed.error.empty()) {
    fmt::print(stderr, "relay-bench: {}\n", parsed.error);
    return exit_usage;
  }
  for (const std::string& warning : parsed.warnings)
    fmt::print(stderr, "relay-bench: warning: {}\n", warning);
  options o = parsed.opts;  // the executor's devices go into the topology below
  std::string error;
  const std::vector<call_shape> shapes = shapes_of(o, error);
  if (shapes.empty()) {
    fmt::print(stderr, "relay-bench: {}\n", error);
    return exit_usage;
  }

  if (o.executor == executor_kind::shm) return run_shm_bench(o, shapes);
  // Under a launcher, -x nccl is one rank of a multi-process job, as -x ipc always is
  // (rank_bench.cpp).
  if (o.executor == executor_kind::ipc || (o.executor == executor_kind::nccl && launched_as_rank()))
    return run_rank_bench(o, shapes);

  std::unique_ptr<backend> exec;
  if (o.executor == executor_kind::cpu) {
    exec = make_cpu_backend(o.ranks);
  } else {
    const auto emulate = static_cast<std::uint64_t>(std::llround(o.emulate_mesh_gbps * 1e9));
    exec = o.executor == executor_kind::nccl ? make_nccl_backend(o.ranks, o.devices, error)
                                             : make_gpu_backend(o.ranks, o.devices, emulate, error);
    if (!exec) {
      fmt::print(stderr, "relay-bench: the {} executor: {}\n", name(o.executor), error);
      return exit_failed;
    }
    // The prediction prices the device memories the ranks really share (8 ranks on one GPU
    // add up on one memory).
    const std::vector<int> devices = exec->rank_devices();
    for (std::size_t r = 0; r < devices.size() && r < o.topo.device.size(); ++r)
      o.topo.device[r] = static_cast<std::uint8_t>(devices[r]);
  }

  // The vendor library runs on GPUs: it is the baseline of the gpu executor only.
  std::unique_ptr<nccl_baseline> vendor;
  std::string vendor_text =
      o.executor == executor_kind::cpu
          ? "NCCL/RCCL: n/a (the cpu executor is compared with relay's direct route)"
      : o.emulate_mesh_gbps > 0
          ? "NCCL/RCCL: not used (--emulate-mesh paces relay's copies only; the baseline is "
            "relay's direct route on the same emulated mesh)"
          : "NCCL/RCCL: not used (--baseline " + std::string(name(o.baseline)) + ")";
  if (o.executor != executor_kind::cpu && o.emulate_mesh_gbps == 0 &&
      (o.baseline == baseline_kind::automatic || o.baseline == baseline_kind::nccl)) {
    vendor = make_nccl_baseline(o.ranks, o.devices, error);
    vendor_text = vendor ? vendor->description() : "NCCL/RCCL: n/a (" + error + ")";
  } else if (o.baseline == baseline_kind::nccl) {
    fmt::print(stderr, "relay-bench: --baseline nccl needs a GPU executor\n");
    return exit_usage;
  }
  // Per configuration: the baseline, and the words the table's header gives it.
  std::vector<base_source> bases;
  std::vector<std::string> base_texts;
  for (const call_shape& s : shapes) {
    std::string why = error;
    const bool vendor_runs = vendor && vendor->supports(call_groups(s), why);
    if (o.baseline == baseline_kind::nccl && !vendor_runs) {
      fmt::print(stderr, "relay-bench: --baseline nccl: {}\n", why);
      return exit_usage;
    }
    bases.push_back(o.baseline == baseline_kind::none     ? base_source::none
                    : o.baseline == baseline_kind::direct ? base_source::direct
                    : vendor_runs                         ? base_source::nccl
                                                          : base_source::direct);
    const std::string direct = "relay's direct route on this executor";
    base_texts.push_back(bases.back() == base_source::none   ? "none"
                         : bases.back() == base_source::nccl ? vendor_text
                         : o.baseline == baseline_kind::automatic && vendor
                             ? direct + " (NCCL: " + why + ")"
                             : direct);
  }

  output_files out;
  if (o.csv_path == "-" || o.json_path == "-") out.table = nullptr;
  if (!o.csv_path.empty() && (out.csv = open_output(o.csv_path)) == nullptr) {
    fmt::print(stderr, "relay-bench: cannot write {}\n", o.csv_path);
    return exit_usage;
  }
  if (!o.json_path.empty() && (out.json = open_output(o.json_path)) == nullptr) {
    fmt::print(stderr, "relay-bench: cannot write {}\n", o.json_path);
    return exit_usage;
  }
  const run_info info = describe_run(o, exec->description(), vendor_text);
  if (out.table != nullptr) {
    print_run_header(out.table, info, vendor_text);
  }
  if (out.csv != nullptr) print_csv_header(out.csv);

  const std::vector<std::int64_t> sizes =
      size_grid(o.min_bytes, o.max_bytes, o.step_factor, o.step_bytes);
  progress bar(o.progress, static_cast<int>(shapes.size() * sizes.size()));
  row_runner runner(*exec, o, vendor.get());
  std::vector<row> rows;
  std::int64_t wrong = 0, base_wrong = 0;
  double busbw_sum = 0;
  int busbw_rows = 0;
  int step = 0;
  int skipped = 0;  // rows that did not fit in memory
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    const call_shape& s = shapes[k];
    if (out.table != nullptr) print_table_header(out.table, o, s, base_texts[k], info);
    for (std::int64_t size : sizes) {
      row r = sized_row(s, o, size);
      r.base = bases[k];
      const std::string what = fmt::format("{} A={} {} {}", name(s.coll), s.active, name(s.mode),
                                           cli::format_bytes(r.bytes));
      bar.update(step++, what);
      // The CPU executor's memory is this process's: a row that does not fit is skipped with a
      // line that says so, before it allocates (the GPU executor reports its own out-of-memory).
      if (o.executor == executor_kind::cpu) {
        r.host_memory = runner.host_memory(r);
        const cli::available_memory available = cli::host_memory_available();
        if (r.host_memory > available.bytes) {
          const std::string line =
              fmt::format("skipped {}: it needs about {} of host memory; {} available ({})", what,
                          cli::format_bytes(r.host_memory), cli::format_bytes(available.bytes),
                          available.source);
          if (out.table != nullptr) fmt::print(out.table, "# {}\n", line);
          if (out.table != stderr) fmt::print(stderr, "relay-bench: {}\n", line);
          ++skipped;
          continue;
        }
      }
      if (status st = runner.measure(r); !st) {
        bar.finish();
        fmt::print(stderr, "relay-bench: {}: {}\n", what, st.to_string());
        return exit_failed;
      }
      for (const form_pair* f : {&r.out_of_place, &r.in_place}) {
        const char* form = f == &r.out_of_place ? "out-of-place" : "in-place";
        if (f->relay.wrong > 0) {
          wrong += f->relay.wrong;
          fmt::print(stderr, "relay-bench: WRONG: {} {}: {} elements, first {}\n", what, form,
                     f->relay.wrong, f->relay.first_wrong);
        }
        if (f->base.wrong > 0) {
          base_wrong += f->base.wrong;
          fmt::print(stderr,
                     "relay-bench: WRONG in the {} baseline: {} {}: {} elements, first {}\n",
                     name(r.base), what, form, f->base.wrong, f->base.first_wrong);
        }
      }
      if (r.out_of_place.relay.ran) {
        busbw_sum += busbw_gbps(s.coll, s.active, r.bytes, r.out_of_place.relay.seconds);
        ++busbw_rows;
      }
      if (out.table != nullptr) {
        print_table_row(out.table, o, r);
        std::fflush(out.table);
      }
      if (out.csv != nullptr) {
        print_csv_rows(out.csv, o, r);
        std::fflush(out.csv);  // a sweep cut short keeps every row it finished
      }
      rows.push_back(r);
    }
    exec->release_scratch();
  }
  bar.finish();
  if (out.json != nullptr) print_json(out.json, o, info, rows);
  if (out.table != nullptr) {
    fmt::print(out.table, "#\n# wrong elements: {}{}\n",
               o.check ? std::to_string(wrong) : "not checked",
               o.check ? (wrong + base_wrong == 0 ? " OK" : " FAILED") : "");
    if (base_wrong > 0) fmt::print(out.table, "# wrong elements in the baseline: {}\n", base_wrong);
    if (skipped > 0) fmt::print(out.table, "# rows skipped for lack of host memory: {}\n", skipped);
    fmt::print(out.table, "# average relay busbw (out-of-place): {:.2f} GB/s\n#\n",
               busbw_rows > 0 ? busbw_sum / busbw_rows : 0.0);
  }
  return wrong + base_wrong > 0 ? exit_wrong : 0;
}
