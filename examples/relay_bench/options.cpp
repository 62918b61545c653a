#include "options.hpp"

#include <charconv>
#include <functional>
#include <optional>
#include <string_view>

#include "relay/topology/parse.hpp"
#include "sizes.hpp"

namespace relay::bench {

std::string_view name(run_mode m) {
  switch (m) {
    case run_mode::fused: return "fused";
    case run_mode::parallel: return "parallel";
    case run_mode::single: return "single";
  }
  return "?";
}
std::string_view name(executor_kind e) {
  return e == executor_kind::cpu ? "cpu" : e == executor_kind::gpu ? "gpu" : "shm";
}
std::string_view name(route_choice r) {
  switch (r) {
    case route_choice::automatic: return "auto";
    case route_choice::relay: return "relay";
    case route_choice::direct: return "direct";
    case route_choice::legacy: return "legacy";
    case route_choice::pipelined: return "pipelined";
  }
  return "?";
}
std::string_view name(baseline_kind b) {
  switch (b) {
    case baseline_kind::automatic: return "auto";
    case baseline_kind::nccl: return "nccl";
    case baseline_kind::direct: return "direct";
    case baseline_kind::none: return "none";
  }
  return "?";
}

namespace {

template <class T>
std::optional<T> parse_number(std::string_view s) {
  T value{};
  const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (error != std::errc{} || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return value;
}

// "a,b,c" -> each item through `one`; nullopt if any item fails.
template <class T, class F>
std::optional<std::vector<T>> parse_list(std::string_view s, F one) {
  std::vector<T> items;
  while (true) {
    const std::size_t comma = s.find(',');
    const std::optional<T> item = one(s.substr(0, comma));
    if (!item) return std::nullopt;
    items.push_back(*item);
    if (comma == std::string_view::npos) return items;
    s.remove_prefix(comma + 1);
  }
}

std::optional<collective> parse_collective_name(std::string_view s) {
  if (auto c = relay::parse_collective(s)) return c;
  if (s == "all_reduce" || s == "all-reduce") return collective::allreduce;
  if (s == "reduce_scatter" || s == "reducescatter") return collective::reduce_scatter;
  if (s == "all_gather" || s == "allgather") return collective::all_gather;
  if (s == "all_to_all" || s == "alltoall") return collective::all_to_all;
  return std::nullopt;
}

std::optional<run_mode> parse_run_mode(std::string_view s) {
  for (run_mode m : {run_mode::fused, run_mode::parallel, run_mode::single})
    if (name(m) == s) return m;
  return std::nullopt;
}

template <class E, std::size_t K>
std::optional<E> parse_enum(std::string_view s, const E (&values)[K]) {
  for (E v : values)
    if (name(v) == s) return v;
  return std::nullopt;
}

}  // namespace

std::string usage() {
  return R"(relay-bench: nccl-tests-style sweep of relay's collectives, with the cost model's
prediction and a baseline (NCCL/RCCL, or relay's direct route) side by side.

usage: relay-bench [options]

sweep
  -b, --minbytes SIZE     smallest size (default 4K); K, M, G are powers of 1024
  -e, --maxbytes SIZE     largest size (default 1G)
  -f, --stepfactor F      multiply the size by F each step (default 2)
  -i, --stepbytes SIZE    add SIZE each step instead
  -C, --collective LIST   allreduce, reduce-scatter, all-gather, all-to-all, or all
                          (comma-separated; default allreduce)
  -A, --active LIST       active ranks per group, A (default 2)
  -N, --ranks N           ranks on the node, N (default 8)
  -m, --mode LIST         fused, parallel, single (default fused)
  -r, --route R           auto, relay, direct, legacy, pipelined (default auto: relay or
                          direct, whichever the cost model predicts faster, per size)
      --tiles T           pipeline depth of the pipelined route (single-group A=2), 2..64
                          (default 4)
  -p, --permille P        allreduce offload share of the relay route, 1..999 (default:
                          the link-balanced one)
      --alignment E       chunk alignment in elements (default 128)
  -d, --datatype T        int8 uint8 int32 uint32 int64 uint64 float16 bfloat16 float32
                          float64, or half bf16 float double (default bfloat16)
  -o, --op OP             sum or avg (default sum; all-gather and all-to-all ignore it)

measurement
  -n, --iters N           timed iterations; the median is reported (default 20)
  -w, --warmup_iters N    untimed iterations first (default 5)
  -c, --check 0|1         check every element of one run of each size (default 1)
      --rotate SIZE       rotate buffer sets until they span SIZE, so timed runs do not
                          find their data in cache (default: twice the executor's cache;
                          0: never)
      --seed S            input data seed (default 1)

where
  -x, --executor E        cpu, gpu, or shm: one rank per process, under relay-run -n N
                          (default cpu)
      --devices LIST      gpu: the device of each rank, e.g. 0,0,0,0,1,1,1,1
                          (default: ranks round-robin over the visible devices)
  -t, --topology T        what the prediction prices: mi300x, mi350x, h200-nvswitch,
                          mi250x, or mesh:GBPS[:US[:OPUS]] / switched:GBPS[:US[:OPUS]]
                          (gpu_calibrate prints one; default mi300x)
      --baseline B        auto, nccl, direct, none (default auto: NCCL/RCCL where it can
                          run these ranks, else relay's direct route on this executor)

output
      --csv FILE          one row per size and form (FILE - : standard output)
      --json FILE         the run and every row as JSON (FILE - : standard output)
      --progress 0|1      a progress line on stderr (default: when stderr is a terminal)
  -h, --help              this text
      --version           relay's version

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

  using handler = std::function<bool(std::string_view)>;
  struct option_spec {
    const char* shorthand;
    const char* longhand;
    handler apply;  // returns false when the value is invalid
  };
  auto bytes_into = [](std::int64_t& target) {
    return [&target](std::string_view v) {
      const auto b = parse_bytes(v);
      if (b) target = *b;
      return b.has_value();
    };
  };
  auto int_into = [](int& target, int lo, int hi) {
    return [&target, lo, hi](std::string_view v) {
      const auto x = parse_number<int>(v);
      if (x && *x >= lo && *x <= hi) target = *x;
      return x && *x >= lo && *x <= hi;
    };
  };
  const option_spec specs[] = {
      {"-b", "--minbytes", bytes_into(o.min_bytes)},
      {"-e", "--maxbytes", bytes_into(o.max_bytes)},
      {"-f", "--stepfactor",
       [&](std::string_view v) {
         const auto f = parse_number<double>(v);
         if (f && *f > 1) o.step_factor = *f;
         return f && *f > 1;
       }},
      {"-i", "--stepbytes", bytes_into(o.step_bytes)},
      {"-C", "--collective",
       [&](std::string_view v) {
         if (v == "all") {
           o.collectives.assign(all_collectives.begin(), all_collectives.end());
           return true;
         }
         auto l = parse_list<collective>(v, parse_collective_name);
         if (l) o.collectives = *l;
         return l.has_value();
       }},
      {"-A", "--active",
       [&](std::string_view v) {
         auto l = parse_list<int>(v, parse_number<int>);
         if (l) o.actives = *l;
         return l.has_value();
       }},
      {"-N", "--ranks", int_into(o.ranks, 2, 64)},
      {"-m", "--mode",
       [&](std::string_view v) {
         auto l = parse_list<run_mode>(v, parse_run_mode);
         if (l) o.modes = *l;
         return l.has_value();
       }},
      {"-r", "--route",
       [&](std::string_view v) {
         constexpr route_choice all[] = {route_choice::automatic, route_choice::relay,
                                         route_choice::direct, route_choice::legacy,
                                         route_choice::pipelined};
         auto r = parse_enum(v, all);
         if (r) o.route = *r;
         return r.has_value();
       }},
      {"-p", "--permille", int_into(o.permille, 1, 999)},
      {nullptr, "--tiles", int_into(o.tiles, 2, 64)},
      {nullptr, "--alignment",
       [&](std::string_view v) {
         const auto a = parse_number<std::int64_t>(v);
         if (a && *a >= 1 && *a <= (std::int64_t{1} << 30)) o.alignment = *a;
         return a && *a >= 1 && *a <= (std::int64_t{1} << 30);
       }},
      {"-d", "--datatype",
       [&](std::string_view v) {
         auto t = parse_dtype(v);
         if (t) o.type = *t;
         return t.has_value();
       }},
      {"-o", "--op",
       [&](std::string_view v) {
         auto r = parse_reduce_op(v);
         if (r) o.op = *r;
         return r.has_value();
       }},
      {"-n", "--iters", int_into(o.iterations, 1, 1000000)},
      {"-w", "--warmup_iters", int_into(o.warmup, 0, 1000000)},
      {"-c", "--check",
       [&](std::string_view v) {
         if (v != "0" && v != "1") return false;
         o.check = v == "1";
         return true;
       }},
      {nullptr, "--rotate", bytes_into(o.rotate_bytes)},
      {nullptr, "--seed",
       [&](std::string_view v) {
         auto s = parse_number<std::uint64_t>(v);
         if (s) o.seed = *s;
         return s.has_value();
       }},
      {"-x", "--executor",
       [&](std::string_view v) {
         constexpr executor_kind all[] = {executor_kind::cpu, executor_kind::gpu,
                                          executor_kind::shm};
         auto e = parse_enum(v, all);
         if (e) o.executor = *e;
         return e.has_value();
       }},
      {nullptr, "--devices",
       [&](std::string_view v) {
         auto l = parse_list<int>(v, parse_number<int>);
         if (l) o.devices = *l;
         return l.has_value();
       }},
      {"-t", "--topology",
       [&](std::string_view v) {
         o.topology_text = v;
         return true;  // checked once N is known
       }},
      {nullptr, "--baseline",
       [&](std::string_view v) {
         constexpr baseline_kind all[] = {baseline_kind::automatic, baseline_kind::nccl,
                                          baseline_kind::direct, baseline_kind::none};
         auto b = parse_enum(v, all);
         if (b) o.baseline = *b;
         return b.has_value();
       }},
      {nullptr, "--csv",
       [&](std::string_view v) {
         o.csv_path = v;
         return !v.empty();
       }},
      {nullptr, "--json",
       [&](std::string_view v) {
         o.json_path = v;
         return !v.empty();
       }},
      {nullptr, "--progress",
       [&](std::string_view v) {
         if (v != "0" && v != "1") return false;
         o.progress = v == "1";
         return true;
       }},
  };

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
      out.error = "unknown option '" + std::string(arg) + "' (relay-bench --help lists them)";
      return out;
    }
    if (!value) {
      if (i + 1 >= argc) {
        out.error = "option " + std::string(arg) + " needs a value";
        return out;
      }
      value = argv[++i];
    }
    if (!match->apply(*value)) {
      out.error = "invalid value '" + std::string(*value) + "' for " + match->longhand +
                  " (relay-bench --help says what it takes)";
      return out;
    }
  }

  // What only the whole command line can tell.
  if (o.min_bytes > o.max_bytes) {
    out.error = "--minbytes (" + std::to_string(o.min_bytes) + ") is larger than --maxbytes (" +
                std::to_string(o.max_bytes) + ")";
    return out;
  }
  if (o.min_bytes == 0 && o.step_bytes == 0) {
    out.error = "--minbytes 0 with a step factor never grows; give -b > 0 or --stepbytes";
    return out;
  }
  for (int a : o.actives)
    if (a < 2 || a >= o.ranks) {
      out.error = "-A " + std::to_string(a) + ": the active count must be 2.." +
                  std::to_string(o.ranks - 1) + " (a relay needs a helper)";
      return out;
    }
  if (o.permille != 0 && o.route != route_choice::relay && o.route != route_choice::automatic) {
    out.error = "--permille shapes the relay route only";
    return out;
  }
  if (auto t = parse_topology(o.topology_text, o.ranks)) {
    o.topo = *t;
  } else {
    out.error = "unknown topology '" + o.topology_text +
                "': use mi300x, mi350x, h200-nvswitch, mi250x (N=8 only), mesh:GBPS[:US[:OPUS]] or "
                "switched:GBPS[:US[:OPUS]]";
    return out;
  }
  if (!o.devices.empty() && static_cast<int>(o.devices.size()) != o.ranks) {
    out.error = "--devices names " + std::to_string(o.devices.size()) + " devices for " +
                std::to_string(o.ranks) + " ranks; give one per rank";
    return out;
  }
  if (o.csv_path == "-" && o.json_path == "-") {
    out.error = "--csv - and --json - both want standard output; send one to a file";
    return out;
  }
  return out;
}

}  // namespace relay::bench
