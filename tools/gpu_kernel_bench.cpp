// gpu_kernel_bench: the measurements behind the GPU kernels' acceptance, side by side in one run.
//
//   1. device-to-device copy (the runtime's memcpy) at the reduction's size: the ceiling;
//   2. the batched reduce kernel, fp32 and bf16, 2 and 8 inputs of --gib GiB each, in several
//      block/unroll shapes (the executor uses the first), counting bytes read + written;
//   3. one batched-copy launch of many copies against one memcpy of the same total bytes (and
//      against one memcpy per copy, the memcpy engine), buffers rotated so that L2 holds none;
//   4. the executor's per-step overhead: one empty kernel launch, back to back, against a plan
//      of S steps over 8 ranks on one device whose every copy is 256 bytes;
//   5. (--fp8 alone) the fp8 wire's kernels (gpu/fp8_kernels.hpp): quantize, dequantize and
//      dequantize-accumulate of float32, bfloat16 and float16 at 16 MiB to 1 GiB of elements, in
//      both encodings (e4m3 by the hardware's conversion on NVIDIA sm_89+, e4m3_fnuz by the
//      software codec AMD runs), each beside a device-to-device copy of the same input bytes,
//      counting bytes read + written.
//
// Inputs are random (never zeros) and a sample of every reduction is checked bit for bit against
// reduce_element on the host, and a sample of every fp8 image against fp8_quantize_block.
// Usage: gpu_kernel_bench [--gib G] (default 1) | gpu_kernel_bench --fp8.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "relay/core/fp8_block.hpp"
#include "relay/core/reduction.hpp"
#include "relay/exec/gpu/executor.hpp"
#include "relay/gpu/fp8_kernels.hpp"
#include "relay/gpu/kernels.hpp"
#include "relay/gpu/runtime.hpp"
#include "support/gpu_check.hpp"
#include "support/median.hpp"
#include "support/ring_plan.hpp"

namespace rt = relay::gpu::rt;
using relay::gpu::copy_desc;
using relay::gpu::reduce_desc;

namespace {

struct device_memory {
  void* p = nullptr;
  explicit device_memory(std::size_t n) { CHECK_RT(rt::malloc(&p, n)); }
  ~device_memory() { (void)rt::free(p); }
  device_memory(const device_memory&) = delete;
  device_memory& operator=(const device_memory&) = delete;
  unsigned char* bytes() const { return static_cast<unsigned char*>(p); }
};

// Random values in [-4, 4), never zero, from a hash of the index: no upload of gigabytes.
__device__ inline std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
template <class T>
__global__ void fill_kernel(T* p, std::uint64_t n, std::uint64_t seed) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    const float f = static_cast<float>(mix(i ^ (seed << 40)) >> 40) / 16777216.0f * 8.0f - 4.0f;
    const float v = f == 0.0f ? 0.5f : f;
    if constexpr (std::is_same_v<T, float>)
      p[i] = v;
    else
      p[i] = T::from_float(v);
  }
}
__global__ void empty_kernel() {}

template <class T>
void fill(void* p, std::uint64_t n, std::uint64_t seed) {
  CHECK_RT(rt::launch(fill_kernel<T>, 4096, 256, nullptr, static_cast<T*>(p), n, seed));
}

// Median over trials of the mean time of `reps` calls of f, in milliseconds, timed with events.
template <class F>
double time_ms(rt::stream_t s, int reps, F&& f) {
  rt::event_t a = nullptr, b = nullptr;
  CHECK_RT(rt::event_create(&a, true));
  CHECK_RT(rt::event_create(&b, true));
  for (int i = 0; i < 2; ++i)
    f(i);
  std::vector<double> trials;
  for (int t = 0; t < 7; ++t) {
    CHECK_RT(rt::event_record(a, s));
    for (int i = 0; i < reps; ++i)
      f(i);
    CHECK_RT(rt::event_record(b, s));
    CHECK_RT(rt::event_synchronize(b));
    float ms = 0;
    CHECK_RT(rt::event_elapsed_ms(&ms, a, b));
    trials.push_back(ms / reps);
  }
  CHECK_RT(rt::event_destroy(a));
  CHECK_RT(rt::event_destroy(b));
  return relay::examples::median(trials);
}

template <class Desc>
struct device_list {
  device_memory mem;
  std::uint64_t tiles;
  std::uint32_t n;
  device_list(std::vector<Desc> d, std::uint64_t tile_units)
      : mem(d.size() * sizeof(Desc)),
        tiles(relay::gpu::assign_tiles(d.data(), d.size(), tile_units)),
        n(static_cast<std::uint32_t>(d.size())) {
    CHECK_RT(rt::memcpy(mem.p, d.data(), d.size() * sizeof(Desc)));
  }
  const Desc* get() const { return static_cast<const Desc*>(mem.p); }
};

template <class Kernel>
unsigned resident(Kernel k, int block) {
  int blocks = 0;
  CHECK_RT(relay::gpu::resident_blocks(&blocks, k, block, 0));
  return static_cast<unsigned>(blocks);
}

double copy_gbps(double bytes, double ms) {
  return 2.0 * bytes / (ms * 1e6);
}

// ---- 2. reductions
// -------------------------------------------------------------------------------

template <class T, int Block, int Unroll>
double reduce_ms(rt::stream_t s, const reduce_desc& d) {
  device_list<reduce_desc> list({d}, Block * Unroll);
  auto* kernel = relay::gpu::batched_reduce_kernel<T, Block, Unroll>;
  const unsigned grid =
      static_cast<unsigned>(std::min<std::uint64_t>(list.tiles, resident(kernel, Block)));
  return time_ms(s, 10, [&](int) {
    CHECK_RT(rt::launch(kernel, grid, Block, s, list.get(), list.n, list.tiles));
  });
}

// Bit-for-bit check of `sample` elements at both ends of the output.
template <class T>
bool check_sample(const std::vector<void*>& src, void* dst, std::uint64_t n, int k, int divisor) {
  const std::uint64_t sample = 4096;
  for (std::uint64_t at : {std::uint64_t{0}, n - sample}) {
    std::vector<std::vector<T>> in(static_cast<std::size_t>(k), std::vector<T>(sample));
    std::vector<T> out(sample);
    for (int s = 0; s < k; ++s)
      CHECK_RT(rt::memcpy(in[static_cast<std::size_t>(s)].data(),
                          static_cast<const T*>(src[static_cast<std::size_t>(s)]) + at,
                          sample * sizeof(T)));
    CHECK_RT(rt::memcpy(out.data(), static_cast<const T*>(dst) + at, sample * sizeof(T)));
    std::vector<const T*> ptrs;
    for (const auto& v : in)
      ptrs.push_back(v.data());
    for (std::uint64_t i = 0; i < sample; ++i) {
      const T want = relay::reduce_element<T>(ptrs.data(), k, i, divisor);
      if (std::memcmp(&want, &out[i], sizeof(T)) != 0) return false;
    }
  }
  return true;
}

template <class T>
void bench_reduce(rt::stream_t s, const char* type, double gib, double copy_rate) {
  const std::uint64_t bytes = static_cast<std::uint64_t>(gib * (1ull << 30));
  const std::uint64_t n = bytes / sizeof(T);
  for (int k : {2, 8}) {
    std::vector<device_memory*> mem;
    std::vector<void*> src;
    for (int i = 0; i < k; ++i) {
      mem.push_back(new device_memory(n * sizeof(T)));
      src.push_back(mem.back()->p);
      fill<T>(src.back(), n, 100 + static_cast<std::uint64_t>(i));
    }
    device_memory dst(n * sizeof(T));
    CHECK_RT(rt::device_synchronize());
    const reduce_desc d = relay::gpu::make_reduce(dst.p, src.data(), k, n, sizeof(T), 1);
    const double traffic = static_cast<double>(k + 1) * static_cast<double>(n * sizeof(T));
    struct shape {
      const char* name;
      double ms;
    };
    const shape shapes[] = {
        {"256x4 (executor)", reduce_ms<T, 256, 4>(s, d)},
        {"256x2", reduce_ms<T, 256, 2>(s, d)},
        {"512x4", reduce_ms<T, 512, 4>(s, d)},
        {"256x8", reduce_ms<T, 256, 8>(s, d)},
    };
    const bool exact = check_sample<T>(src, dst.p, n, k, 1);
    for (const shape& sh : shapes) {
      const double rate = traffic / (sh.ms * 1e6);
      std::printf("| %s | %d | %.2f GiB | %s | %.3f ms | %.0f GB/s | %.1f%% | %s |\n", type, k,
                  static_cast<double>(n * sizeof(T)) / (1ull << 30), sh.name, sh.ms, rate,
                  100.0 * rate / copy_rate, exact ? "bit-exact" : "WRONG");
    }
    for (device_memory* m : mem)
      delete m;
  }
}

// ---- 5. the fp8 wire's kernels ------------------------------------------------------------------

// The first and last `sample` elements' blocks of the image against fp8_quantize_block on the
// host.
template <class T>
bool check_fp8_sample(const void* src, const void* wire, std::uint64_t n, relay::fp8_format f) {
  constexpr std::uint64_t B = relay::fp8_block_elements;
  const std::uint64_t sample = 4096;  // elements, a multiple of B
  std::vector<T> x(sample);
  std::vector<unsigned char> codes(sample);
  std::vector<float> scales(sample / B);
  for (std::uint64_t at : {std::uint64_t{0}, n - sample}) {
    CHECK_RT(rt::memcpy(x.data(), static_cast<const T*>(src) + at, sample * sizeof(T)));
    CHECK_RT(rt::memcpy(codes.data(), static_cast<const unsigned char*>(wire) + at, sample));
    CHECK_RT(rt::memcpy(scales.data(),
                        static_cast<const unsigned char*>(wire) + relay::fp8_scales_at(n) +
                            relay::fp8_scale_bytes * (at / B),
                        scales.size() * sizeof(float)));
    for (std::uint64_t b = 0; b < sample / B; ++b) {
      float block[B];
      unsigned char want[B];
      for (std::uint64_t e = 0; e < B; ++e) {
        if constexpr (std::is_same_v<T, float>)
          block[e] = x[b * B + e];
        else
          block[e] = x[b * B + e].to_float();
      }
      const float scale = relay::fp8_quantize_block(f, block, static_cast<int>(B), want);
      if (std::memcmp(&scale, &scales[b], sizeof(float)) != 0 ||
          std::memcmp(want, codes.data() + b * B, B) != 0)
        return false;
    }
  }
  return true;
}

template <class T>
void bench_fp8(rt::stream_t s, const char* type, relay::fp8_format f) {
  for (std::uint64_t bytes = std::uint64_t{16} << 20; bytes <= (std::uint64_t{1} << 30);
       bytes *= 4) {
    const std::uint64_t n = bytes / sizeof(T), wire_bytes = relay::fp8_wire_bytes(n);
    device_memory in(bytes), out(bytes), copy(bytes), wire(wire_bytes);
    fill<T>(in.p, n, 7);
    fill<T>(out.p, n, 8);
    CHECK_RT(rt::device_synchronize());
    auto* src = static_cast<const T*>(in.p);
    auto* dst = static_cast<T*>(out.p);
    auto* w = static_cast<unsigned char*>(wire.p);
    const double copy_ms =
        time_ms(s, 10, [&](int) { CHECK_RT(rt::memcpy_async(copy.p, in.p, bytes, s)); });
    const double copy_rate = copy_gbps(static_cast<double>(bytes), copy_ms);
    const double quantize_ms =
        time_ms(s, 10, [&](int) { CHECK_RT(relay::gpu::launch_fp8_quantize(src, w, n, f, s)); });
    CHECK_RT(rt::device_synchronize());
    const bool exact = check_fp8_sample<T>(in.p, wire.p, n, f);
    const double dequantize_ms = time_ms(s, 10, [&](int) {
      CHECK_RT(relay::gpu::launch_fp8_dequantize(w, n, f, dst, static_cast<const T*>(nullptr), s));
    });
    const double accumulate_ms = time_ms(
        s, 10, [&](int) { CHECK_RT(relay::gpu::launch_fp8_dequantize(w, n, f, dst, dst, s)); });
    struct row {
      const char* name;
      double traffic, ms;
    };
    const double b = static_cast<double>(bytes), wb = static_cast<double>(wire_bytes);
    const row rows[] = {{"copy", 2 * b, copy_ms},
                        {"quantize", b + wb, quantize_ms},
                        {"dequantize", wb + b, dequantize_ms},
                        {"dequantize-accumulate", wb + 2 * b, accumulate_ms}};
    for (const row& r : rows) {
      const double rate = r.traffic / (r.ms * 1e6);
      std::printf("| %s | %.0f MiB | %s | %.3f ms | %.0f GB/s | %.1f%% | %s |\n", type,
                  b / (1 << 20), r.name, r.ms, rate, 100.0 * rate / copy_rate,
                  r.name[0] == 'q' ? (exact ? "bit-exact" : "WRONG") : "");
    }
  }
}

// ---- 3. batched copy ---------------------------------------------------------------------------

// `persistent`: a grid of the resident blocks walking the tiles (the executor's grid before
// copy_grid), else copy_grid's block per tile.
template <int Block, int Unroll, bool Streaming = true>
double batched_ms(rt::stream_t s, const std::vector<std::vector<copy_desc>>& sets,
                  bool persistent = false) {
  std::vector<device_list<copy_desc>*> lists;
  for (const auto& d : sets)
    lists.push_back(new device_list<copy_desc>(d, Block * Unroll));
  auto* kernel = relay::gpu::batched_copy_kernel<Block, Unroll, Streaming>;
  const unsigned cap = resident(kernel, Block);
  const double ms = time_ms(s, 40, [&](int i) {
    const device_list<copy_desc>& l = *lists[static_cast<std::size_t>(i) % lists.size()];
    const unsigned grid = persistent ? static_cast<unsigned>(std::min<std::uint64_t>(l.tiles, cap))
                                     : relay::gpu::copy_grid(l.tiles);
    CHECK_RT(rt::launch(kernel, grid, Block, s, l.get(), l.n, l.tiles));
  });
  for (auto* l : lists)
    delete l;
  return ms;
}

void bench_batched_copy(rt::stream_t s) {
  // A pool of 2 x 1 GiB: every repetition uses another slice, so L2 (50-60 MB) holds none of it.
  const std::size_t pool = 1ull << 30;
  device_memory src(pool), dst(pool);
  fill<float>(src.p, pool / 4, 7);
  CHECK_RT(rt::device_synchronize());
  struct config {
    int copies;
    std::size_t bytes;
  };
  for (const config c : {config{12, 1u << 20}, config{12, 4u << 20}, config{24, 1u << 20},
                         config{64, 1u << 20}, config{12, 16u << 20}, config{12, 64u << 20}}) {
    const std::size_t total = static_cast<std::size_t>(c.copies) * c.bytes;
    const std::size_t sets = std::min<std::size_t>(32, pool / total);
    // Each copy's source and destination sit apart, as a helper's pushes to several peers do.
    std::vector<std::vector<copy_desc>> descs(sets);
    for (std::size_t k = 0; k < sets; ++k)
      for (int i = 0; i < c.copies; ++i) {
        const std::size_t at = k * total + static_cast<std::size_t>(i) * c.bytes;
        descs[k].push_back(relay::gpu::make_copy(src.bytes() + at, dst.bytes() + at, c.bytes));
      }
    const double one_ms = time_ms(s, 40, [&](int i) {
      const std::size_t at = (static_cast<std::size_t>(i) % sets) * total;
      CHECK_RT(rt::memcpy_async(dst.bytes() + at, src.bytes() + at, total, s));
    });
    const double many_ms = time_ms(s, 40, [&](int i) {
      const std::size_t at = (static_cast<std::size_t>(i) % sets) * total;
      for (int j = 0; j < c.copies; ++j) {
        const std::size_t o = at + static_cast<std::size_t>(j) * c.bytes;
        CHECK_RT(rt::memcpy_async(dst.bytes() + o, src.bytes() + o, c.bytes, s));
      }
    });
    const double b256 = batched_ms<256, 4>(s, descs);
    const double persistent = batched_ms<256, 4>(s, descs, true);
    const double plain = batched_ms<256, 4, false>(s, descs);
    const double b512 = batched_ms<512, 4>(s, descs);
    const double b256x8 = batched_ms<256, 8>(s, descs);
    // Smaller tiles: more of them per resident block, so less of a half-empty last wave.
    const double b256x2 = batched_ms<256, 2>(s, descs);
    const double b256x1 = batched_ms<256, 1>(s, descs);
    const double b128x4 = batched_ms<128, 4>(s, descs);
    const double ref = copy_gbps(static_cast<double>(total), one_ms);
    auto row = [&](const char* what, double ms) {
      const double rate = copy_gbps(static_cast<double>(total), ms);
      std::printf("| %d x %zu MiB | %s | %.1f us | %.0f GB/s | %.1f%% |\n", c.copies, c.bytes >> 20,
                  what, ms * 1e3, rate, 100.0 * rate / ref);
    };
    row("one memcpy of the total (reference)", one_ms);
    row("one memcpy per copy", many_ms);
    row("batched kernel 256x4 (executor)", b256);
    row("batched kernel 256x4, persistent grid", persistent);
    row("batched kernel 256x4, no cache hints (plans that reduce)", plain);
    row("batched kernel 512x4", b512);
    row("batched kernel 256x8", b256x8);
    row("batched kernel 256x2", b256x2);
    row("batched kernel 256x1", b256x1);
    row("batched kernel 128x4", b128x4);
  }
  // The copy kernel moves the bytes it was given and no others.
  std::vector<unsigned char> a(4096), b(4096);
  CHECK_RT(rt::memcpy(a.data(), src.bytes() + 5 * (16u << 20), a.size()));
  CHECK_RT(rt::memcpy(b.data(), dst.bytes() + 5 * (16u << 20), b.size()));
  std::printf("\n(sampled copy result %s)\n", a == b ? "matches its source" : "WRONG");
}

// ---- 4. per-step overhead ----------------------------------------------------------------------

// Microseconds per run, runs issued back to back without synchronizing (host clock).
double run_us(relay::gpu_executor& ex, const relay::plan& p,
              const std::vector<relay::buffer_view>& in,
              const std::vector<relay::buffer_view>& out) {
  for (int i = 0; i < 3; ++i)
    if (relay::status st = ex.run(p, in, out); !st) {
      std::fprintf(stderr, "run failed: %s\n", st.to_string().c_str());
      std::exit(1);
    }
  if (relay::status st = ex.synchronize(); !st) std::exit(1);
  std::vector<double> trials;
  for (int t = 0; t < 7; ++t) {
    const int reps = 50;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i)
      if (!ex.run(p, in, out)) std::exit(1);
    if (!ex.synchronize()) std::exit(1);
    const auto t1 = std::chrono::steady_clock::now();
    trials.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / reps);
  }
  return relay::examples::median(trials);
}

void bench_step_overhead(rt::stream_t s) {
  const double launch_us =
      1e3 * time_ms(s, 1000, [&](int) { CHECK_RT(rt::launch(empty_kernel, 1, 32, s)); });
  std::printf("One empty kernel launch, back to back on one stream: **%.2f us**\n\n", launch_us);
  std::printf("| engine | streams | step | per step | launches/step | waits/step | x launch |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  struct mode {
    relay::copy_engine engine;
    relay::stream_mode streams;
    const char* e;
    const char* s;
  };
  for (const mode m :
       {mode{relay::copy_engine::kernel, relay::stream_mode::per_device, "kernel",
             "one per device"},
        mode{relay::copy_engine::kernel, relay::stream_mode::per_rank, "kernel", "one per rank"},
        mode{relay::copy_engine::memcpy, relay::stream_mode::per_rank, "memcpy", "one per rank"}})
    for (bool reduce : {false, true}) {
      relay::gpu_executor ex(std::vector<int>(8, 0), {m.engine, m.streams, false});
      if (!ex.init_status()) std::exit(1);
      std::vector<relay::buffer_view> in, out;
      for (int r = 0; r < 8; ++r) {
        in.push_back({ex.allocate(r, 512), 512});
        out.push_back({ex.allocate(r, 512), 512});
        fill<float>(in.back().data, 128, 1);
        fill<float>(out.back().data, 128, 2);
      }
      CHECK_RT(rt::device_synchronize());
      // Ring steps over 8 ranks on device 0 (tools/support/ring_plan.hpp).
      const relay::plan one = relay::examples::ring_plan(8, 1, reduce),
                        many = relay::examples::ring_plan(8, 65, reduce);
      const double t1 = run_us(ex, one, in, out);
      const double t65 = run_us(ex, many, in, out);
      const relay::gpu_run_stats st = ex.last_run();
      const double per_step = (t65 - t1) / 64;
      std::printf("| %s | %s | %s | %.2f us | %.1f | %.1f | %.2f |\n", m.e, m.s,
                  reduce ? "8 copies + 8 reductions" : "8 copies", per_step,
                  (st.launches + st.memcpys) / 65.0, st.waits / 65.0, per_step / launch_us);
      for (int r = 0; r < 8; ++r) {
        ex.deallocate(r, in[static_cast<std::size_t>(r)].data);
        ex.deallocate(r, out[static_cast<std::size_t>(r)].data);
      }
    }
}

}  // namespace

int main(int argc, char** argv) {
  double gib = 1.0;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--gib") gib = std::atof(argv[i + 1]);
  int count = 0;
  CHECK_RT(rt::device_count(&count));
  std::string device;
  CHECK_RT(rt::device_name(device, 0));
  std::printf("# gpu_kernel_bench on %s (%s), inputs of %.2f GiB\n\n", device.c_str(), rt::platform,
              gib);
  rt::stream_t s = nullptr;
  CHECK_RT(rt::stream_create(&s));
  if (argc > 1 && std::string(argv[1]) == "--fp8") {
    // e4m3: the hardware conversion where the device has one (NVIDIA sm_89+); e4m3_fnuz: the
    // software codec, what AMD runs (gpu/fp8_kernels.hpp).
    for (relay::fp8_format f : {relay::fp8_format::e4m3, relay::fp8_format::e4m3_fnuz}) {
      std::printf("## fp8 wire kernels (%s), against a device-to-device copy of the input\n\n",
                  f == relay::fp8_format::e4m3 ? "e4m3" : "e4m3_fnuz");
      std::printf(
          "| dtype | input | kernel | time | GB/s (read+write) | of copy | check |\n"
          "|---|---|---|---|---|---|---|\n");
      bench_fp8<float>(s, "fp32", f);
      bench_fp8<relay::bfloat16>(s, "bf16", f);
      bench_fp8<relay::float16>(s, "fp16", f);
      std::printf("\n");
    }
    CHECK_RT(rt::stream_destroy(s));
    return 0;
  }

  // 1. The ceiling: one device-to-device copy at the reduction's input size.
  const std::size_t bytes = static_cast<std::size_t>(gib * (1ull << 30));
  double copy_rate = 0;
  {
    device_memory a(bytes), b(bytes);
    fill<float>(a.p, bytes / 4, 3);
    CHECK_RT(rt::device_synchronize());
    const double ms = time_ms(s, 10, [&](int) { CHECK_RT(rt::memcpy_async(b.p, a.p, bytes, s)); });
    copy_rate = copy_gbps(static_cast<double>(bytes), ms);
    std::printf("## Device-to-device copy\n\n%.2f GiB in %.3f ms: **%.0f GB/s** (read + write)\n\n",
                static_cast<double>(bytes) / (1ull << 30), ms, copy_rate);
  }

  std::printf("## Batched reduce kernel\n\n");
  std::printf(
      "| dtype | inputs | size of each | block x unroll | time | GB/s (read+write) | of copy "
      "| check |\n|---|---|---|---|---|---|---|---|\n");
  bench_reduce<float>(s, "fp32", gib, copy_rate);
  bench_reduce<relay::bfloat16>(s, "bf16", gib, copy_rate);

  std::printf("\n## Batched copy: one launch against one memcpy of the same total bytes\n\n");
  std::printf(
      "| copies | how | time | GB/s (read+write) | of one memcpy |\n|---|---|---|---|---|\n");
  bench_batched_copy(s);

  std::printf("\n## Per-step overhead: 8 ranks on one device, 256-byte copies\n\n");
  bench_step_overhead(s);
  CHECK_RT(rt::stream_destroy(s));
  return 0;
}
