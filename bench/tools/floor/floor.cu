// The floor program: floor_allreduce.hpp's single-kernel one-shot allreduce on its own, one
// process per rank under relay-run, 2 to 8 ranks (sharing a GPU or not), fused groups of A ranks
// ({0..A-1}, {A..2A-1}, ...). Per size: the time per call eager (device events around each of
// `iterations` calls issued back to back; the slowest rank's per call, median) and from graph
// replay (`graph` calls captured, replayed `iterations` times; per call), and the output of
// every rank checked element by element (inputs are small integers, so every sum is exact).
// Rank 0 prints the table; every rank exits 1 when any element anywhere was wrong.
//
//   nvcc -O3 -std=c++20 -arch=sm_90 -Iinclude bench/tools/floor/floor.cu -o floor
//   relay-run -n 2 -- ./floor [-A 2] [-b 4K] [-e 1M] [-d bfloat16] [-n 100] [-g 20] [-a auto]
//                             [-W 1] [-P 1]
//
// -a: the algorithm (floor_algorithm): auto (ll up to ll_default_max bytes, barrier above), ll
// (pushed words that carry their epoch, no barrier) or barrier (entry and exit barriers, inputs
// read in place); the table says which ran at each size. -W 1 (barrier): each call's entry meets
// every rank of the job, as one relay call over all the groups (fused) agrees; -P 1: launches
// carry relay's pull kernel's argument bytes (floor_options).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "floor_allreduce.hpp"
#include "relay/bootstrap/environment.hpp"
#include "relay/bootstrap/tcp_bootstrap.hpp"

using namespace relay;
using relay::bench::floor::floor_allreduce;

namespace {

struct settings {
  int active = 2;
  std::uint64_t min_bytes = 4096, max_bytes = 1 << 20;
  dtype type = dtype::bfloat16;
  int iterations = 100, graph = 20;
  bench::floor::floor_options how;
};

std::uint64_t parse_size(const char* s) {
  char* end = nullptr;
  std::uint64_t v = std::strtoull(s, &end, 10);
  if (*end == 'K' || *end == 'k') v <<= 10;
  if (*end == 'M' || *end == 'm') v <<= 20;
  if (*end == 'G' || *end == 'g') v <<= 30;
  return v;
}

int die(const std::string& why) {
  std::fprintf(stderr, "floor: %s\n", why.c_str());
  return 2;
}

// Rank r's input element i: a small integer, held exactly by every dtype the floor sums.
int value(int rank, std::uint64_t i) {
  return static_cast<int>((i * 7 + static_cast<std::uint64_t>(rank) * 13) % 9) - 4;
}

template <class T>
T from_int(int v) {
  if constexpr (std::is_same_v<T, bfloat16> || std::is_same_v<T, float16>)
    return T::from_float(static_cast<float>(v));
  else
    return static_cast<T>(v);
}
template <class T>
double to_double(T x) {
  if constexpr (std::is_same_v<T, bfloat16> || std::is_same_v<T, float16>)
    return x.to_float();
  else
    return static_cast<double>(x);
}

#define FLOOR_CHECK(call)                                                                      \
  do {                                                                                         \
    const gpu::rt::error_t e_ = (call);                                                        \
    if (e_ != gpu::rt::success) return die(std::string(#call) + ": " + gpu::rt::describe(e_)); \
  } while (0)

// The slowest rank's value of each entry of `mine`, on every rank.
status slowest(bootstrap& boot, std::vector<double>& mine) {
  std::vector<std::vector<std::byte>> all;
  if (status s = boot.all_gather(std::as_bytes(std::span(mine)), all, std::chrono::seconds(60)); !s)
    return s;
  for (const auto& a : all)
    for (std::size_t i = 0; i < mine.size() && (i + 1) * sizeof(double) <= a.size(); ++i) {
      double x = 0;
      std::memcpy(&x, a.data() + i * sizeof x, sizeof x);
      mine[i] = std::max(mine[i], x);
    }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  settings o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string f = argv[i];
    if (f == "-A")
      o.active = std::atoi(argv[i + 1]);
    else if (f == "-b")
      o.min_bytes = parse_size(argv[i + 1]);
    else if (f == "-e")
      o.max_bytes = parse_size(argv[i + 1]);
    else if (f == "-n")
      o.iterations = std::max(1, std::atoi(argv[i + 1]));
    else if (f == "-g")
      o.graph = std::max(0, std::atoi(argv[i + 1]));
    else if (f == "-W")
      o.how.whole_job_entry = std::atoi(argv[i + 1]) != 0;
    else if (f == "-P")
      o.how.relay_sized_arguments = std::atoi(argv[i + 1]) != 0;
    else if (f == "-a") {
      const std::string a = argv[i + 1];
      if (a == "auto")
        o.how.algorithm = bench::floor::floor_algorithm::automatic;
      else if (a == "ll")
        o.how.algorithm = bench::floor::floor_algorithm::ll;
      else if (a == "barrier")
        o.how.algorithm = bench::floor::floor_algorithm::barrier;
      else
        return die("-a takes auto, ll or barrier, not " + a);
    } else if (f == "-d") {
      const std::string t = argv[i + 1];
      o.type = t == "float32"   ? dtype::float32
               : t == "float16" ? dtype::float16
               : t == "int32"   ? dtype::int32
                                : dtype::bfloat16;
    } else {
      return die("unknown option " + f);
    }
  }
  environment env;
  if (status s = environment_from_process(env); !s) return die(s.to_string());
  if (env.size % o.active != 0 || o.active < 2 || o.active > bench::floor::max_members)
    return die("-A must divide the ranks and lie in 2..8");
  std::unique_ptr<bootstrap> boot;
  if (status s = make_tcp_bootstrap(env, boot); !s) return die(s.to_string());
  int devices = 0;
  FLOOR_CHECK(gpu::rt::device_count(&devices));
  const int device = env.device % std::max(1, devices);
  FLOOR_CHECK(gpu::rt::set_device(device));
  floor_allreduce fl;
  if (status s = fl.open(*boot, device, env.timeout); !s) return die(s.to_string());
  const int me = boot->rank(), group = me / o.active;
  std::vector<int> members;
  for (int k = 0; k < o.active; ++k)
    members.push_back(group * o.active + k);
  const auto es = static_cast<std::uint64_t>(size_of(o.type));
  void* memory = nullptr;
  FLOOR_CHECK(gpu::rt::malloc(&memory, 2 * o.max_bytes));
  if (status s = fl.map(*boot, memory, env.timeout); !s) return die(s.to_string());
  auto* in = static_cast<unsigned char*>(memory);
  unsigned char* out = in + o.max_bytes;
  gpu::rt::stream_t stream = nullptr;
  FLOOR_CHECK(gpu::rt::stream_create(&stream));
  std::vector<gpu::rt::event_t> events(2 * static_cast<std::size_t>(o.iterations));
  for (auto& e : events)
    FLOOR_CHECK(gpu::rt::event_create(&e, true));
  if (me == 0)
    std::printf(
        "# floor: one-shot allreduce, %d processes, groups of %d, %s, algorithm %s, at most %d "
        "blocks of %d threads; barrier's entry meets %s; %s argument bytes\n"
        "# %10s %8s %12s %12s %8s\n",
        env.size, o.active, std::string(name(o.type)).c_str(), bench::floor::name(o.how.algorithm),
        fl.grid(), bench::floor::block_threads, o.how.whole_job_entry ? "every rank" : "the group",
        o.how.relay_sized_arguments ? std::to_string(bench::floor::relay_argument_bytes).c_str()
                                    : "the kernel's",
        "bytes", "algo", "eager_us", "graph_us", "#wrong");
  long long wrong_total = 0;
  for (std::uint64_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= 2) {
    const std::uint64_t n = bytes / es;
    std::vector<unsigned char> host(bytes);
    visit_dtype(o.type, [&](auto x) {
      using T = decltype(x);
      if constexpr (bench::floor::is_summed<T>) {
        for (std::uint64_t i = 0; i < n; ++i) {
          const T v = from_int<T>(value(me, i));
          std::memcpy(host.data() + i * sizeof(T), &v, sizeof(T));
        }
      }
    });
    FLOOR_CHECK(gpu::rt::upload(in, host.data(), bytes));
    auto call = [&]() {
      return fl.run(members, in, out, bytes, o.type, env.timeout, stream, o.how);
    };
    for (int w = 0; w < 5; ++w)
      if (status s = call(); !s) return die(s.to_string());
    FLOOR_CHECK(gpu::rt::stream_synchronize(stream));
    if (status s = boot->barrier(std::chrono::seconds(60)); !s) return die(s.to_string());
    for (int i = 0; i < o.iterations; ++i) {
      FLOOR_CHECK(gpu::rt::event_record(events[2 * i], stream));
      if (status s = call(); !s) return die(s.to_string());
      FLOOR_CHECK(gpu::rt::event_record(events[2 * i + 1], stream));
    }
    FLOOR_CHECK(gpu::rt::stream_synchronize(stream));
    std::vector<double> eager(static_cast<std::size_t>(o.iterations));
    for (int i = 0; i < o.iterations; ++i) {
      float ms = 0;
      FLOOR_CHECK(gpu::rt::event_elapsed_ms(&ms, events[2 * i], events[2 * i + 1]));
      eager[static_cast<std::size_t>(i)] = ms * 1e3;
    }
    std::vector<double> replay;
    if (o.graph > 0) {
      gpu::rt::graph_t graph = nullptr;
      gpu::rt::graph_exec_t exec = nullptr;
      FLOOR_CHECK(gpu::rt::begin_capture(stream));
      status captured;
      for (int k = 0; k < o.graph && captured; ++k)
        captured = call();
      FLOOR_CHECK(gpu::rt::end_capture(stream, &graph));
      if (!captured) return die(captured.to_string());
      FLOOR_CHECK(gpu::rt::graph_instantiate(&exec, graph));
      FLOOR_CHECK(gpu::rt::graph_launch(exec, stream));  // warm
      FLOOR_CHECK(gpu::rt::stream_synchronize(stream));
      if (status s = boot->barrier(std::chrono::seconds(60)); !s) return die(s.to_string());
      for (int i = 0; i < o.iterations; ++i) {
        FLOOR_CHECK(gpu::rt::event_record(events[2 * i], stream));
        FLOOR_CHECK(gpu::rt::graph_launch(exec, stream));
        FLOOR_CHECK(gpu::rt::event_record(events[2 * i + 1], stream));
      }
      FLOOR_CHECK(gpu::rt::stream_synchronize(stream));
      replay.resize(static_cast<std::size_t>(o.iterations));
      for (int i = 0; i < o.iterations; ++i) {
        float ms = 0;
        FLOOR_CHECK(gpu::rt::event_elapsed_ms(&ms, events[2 * i], events[2 * i + 1]));
        replay[static_cast<std::size_t>(i)] = ms * 1e3 / o.graph;
      }
#if defined(FLOOR_TRACE) && FLOOR_TRACE
      if (me < 2) {  // block 0 of the last replayed calls: us since its start, and start to start
        std::uint64_t t[bench::floor::trace_calls][bench::floor::trace_points];
        FLOOR_CHECK(fl.trace(t));
        std::vector<double> at[bench::floor::trace_points], gaps;
        std::vector<std::uint64_t> starts;
        for (const auto& c : t) {
          starts.push_back(c[0]);
          for (int i = 1; i < bench::floor::trace_points; ++i)
            at[i].push_back(static_cast<double>(c[i] - c[0]) / 1e3);
        }
        std::sort(starts.begin(), starts.end());
        for (std::size_t i = 1; i < starts.size(); ++i)
          gaps.push_back(static_cast<double>(starts[i] - starts[i - 1]) / 1e3);
        auto mid = [](std::vector<double> v) {
          std::sort(v.begin(), v.end());
          return v[v.size() / 2];
        };
        std::printf(
            "# trace rank %d, %llu B, graph replay: entered %.2f summed %.2f end %.2f; "
            "start to start %.2f us\n",
            me, static_cast<unsigned long long>(bytes), mid(at[1]), mid(at[2]), mid(at[3]),
            mid(gaps));
      }
#endif
      FLOOR_CHECK(gpu::rt::graph_exec_destroy(exec));
      FLOOR_CHECK(gpu::rt::graph_destroy(graph));
    }
    if (status s = fl.error(); !s) return die(s.to_string());
    // Checked: the output poisoned, one call, every element against the sum worked out here.
    FLOOR_CHECK(gpu::rt::memset(out, 0x7f, bytes));
    FLOOR_CHECK(gpu::rt::device_synchronize());
    if (status s = boot->barrier(std::chrono::seconds(60)); !s) return die(s.to_string());
    if (status s = call(); !s) return die(s.to_string());
    FLOOR_CHECK(gpu::rt::stream_synchronize(stream));
    if (status s = fl.error(); !s) return die(s.to_string());
    std::vector<unsigned char> got(bytes);
    FLOOR_CHECK(gpu::rt::memcpy(got.data(), out, bytes));
    long long wrong = 0;
    visit_dtype(o.type, [&](auto x) {
      using T = decltype(x);
      if constexpr (bench::floor::is_summed<T>) {
        for (std::uint64_t i = 0; i < n; ++i) {
          int want = 0;
          for (int m : members)
            want += value(m, i);
          T t;
          std::memcpy(&t, got.data() + i * sizeof(T), sizeof(T));
          wrong += to_double(t) != static_cast<double>(want) ? 1 : 0;
        }
      }
    });
    std::vector<double> sums = {static_cast<double>(wrong)};
    if (status s = slowest(*boot, eager); !s) return die(s.to_string());
    if (!replay.empty())
      if (status s = slowest(*boot, replay); !s) return die(s.to_string());
    {
      std::vector<std::vector<std::byte>> all;
      if (status s =
              boot->all_gather(std::as_bytes(std::span(sums)), all, std::chrono::seconds(60));
          !s)
        return die(s.to_string());
      wrong = 0;
      for (const auto& a : all) {
        double w = 0;
        if (a.size() == sizeof w) std::memcpy(&w, a.data(), sizeof w);
        wrong += static_cast<long long>(w);
      }
    }
    wrong_total += wrong;
    auto median = [](std::vector<double> v) {
      if (v.empty()) return 0.0;
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    if (me == 0)
      std::printf("  %10llu %8s %12.2f %12.2f %8lld\n", static_cast<unsigned long long>(bytes),
                  bench::floor::name(floor_allreduce::algorithm(bytes, o.how)), median(eager),
                  median(replay), wrong);
    std::fflush(stdout);
  }
  for (auto& e : events)
    (void)gpu::rt::event_destroy(e);
  (void)gpu::rt::stream_destroy(stream);
  (void)boot->barrier(std::chrono::seconds(60));
  (void)gpu::rt::free(memory);
  return wrong_total == 0 ? 0 : 1;
}
