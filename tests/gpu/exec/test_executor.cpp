// The GPU executor on hand-built and random plans, against the naive host interpreter of
// gpu_support.hpp; its ordering (events only where a real dependency exists), its preparation
// cache and scratch cache, and every rejection it makes before touching a caller's buffer.
#include "relay/cost/choose.hpp"
#include "relay/exec/gpu/executor.hpp"

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "gpu/gpu_support.hpp"

using namespace relay;
using relay::test::host_memory;
using relay::test::plan_builder;
using relay::test::poison;

namespace {

int device_count() {
  int n = 0;
  RELAY_GPU_REQUIRE(gpu::rt::device_count(&n));
  return n;
}

// How many random plans per configuration; the sanitizer runs lower it.
int rounds() {
  const char* s = std::getenv("RELAY_GPU_TEST_ROUNDS");
  return s != nullptr ? std::atoi(s) : 25;
}

struct interval_set {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> v;  // [lo, hi) in bytes
  bool hits(std::uint64_t lo, std::uint64_t hi) const {
    for (auto [a, b] : v)
      if (lo < b && a < hi) return true;
    return false;
  }
};

// A random valid plan: phase 0 fills every rank's scratch from its input (so nothing reads
// memory no one wrote), then transfer and reduce phases of random operations, independent within
// each phase, over all three areas of every rank, at any element offset.
plan random_plan(std::mt19937_64& rng, int ranks, dtype t) {
  const int divisor = 1 + static_cast<int>(rng() % 4);
  plan_builder b(ranks, t, divisor);
  const auto es = static_cast<std::uint64_t>(size_of(t));
  std::vector<std::uint64_t> elems[3];
  for (int r = 0; r < ranks; ++r) {
    const std::uint64_t in = 2000 + rng() % 6000, out = 2000 + rng() % 6000,
                        scratch = 1000 + rng() % (in - 1000);
    elems[0].push_back(in);
    elems[1].push_back(out);
    elems[2].push_back(scratch);
    b.sizes(r, in * es, out * es, scratch * es);
  }
  b.begin(phase::transfer);
  for (int r = 0; r < ranks; ++r)
    b.copy({static_cast<std::uint16_t>(r), buffer::input, 0},
           {static_cast<std::uint16_t>(r), buffer::scratch, 0},
           elems[2][static_cast<std::size_t>(r)]);

  const int phases = 2 + static_cast<int>(rng() % 8);
  for (int ph = 0; ph < phases; ++ph) {
    const phase kind = rng() % 2 == 0 ? phase::transfer : phase::reduce;
    b.begin(kind);
    // Per (rank, area): what this phase reads and writes so far.
    std::vector<interval_set> reads(static_cast<std::size_t>(ranks) * 3),
        writes(static_cast<std::size_t>(ranks) * 3);
    auto slot = [](const plan_operand& o) { return o.rank * 3u + static_cast<unsigned>(o.buf); };
    const int attempts = 1 + static_cast<int>(rng() % 14);
    for (int a = 0; a < attempts; ++a) {
      const std::uint64_t count = rng() % 8 == 0 ? 500 + rng() % 1500 : 1 + rng() % 400;
      auto pick = [&](int rank) -> std::optional<plan_operand> {
        const auto buf = static_cast<buffer>(rng() % 3);
        const std::uint64_t size = elems[static_cast<int>(buf)][static_cast<std::size_t>(rank)];
        if (size < count) return std::nullopt;
        return plan_operand{static_cast<std::uint16_t>(rank), buf,
                            (rng() % (size - count + 1)) * es};
      };
      const int issuer = static_cast<int>(rng() % static_cast<std::uint64_t>(ranks));
      std::vector<plan_operand> srcs;
      const int k =
          kind == phase::transfer ? 1 : 1 + static_cast<int>(rng() % (rng() % 4 == 0 ? 16 : 4));
      bool ok = true;
      for (int s = 0; s < k && ok; ++s) {
        const auto o = pick(issuer);
        ok = o.has_value();
        if (ok) srcs.push_back(*o);
      }
      const int dst_rank = kind == phase::transfer
                               ? static_cast<int>(rng() % static_cast<std::uint64_t>(ranks))
                               : issuer;
      auto dst = pick(dst_rank);
      if (!ok || !dst) continue;
      if (kind == phase::reduce && rng() % 4 == 0) dst = srcs[0];  // accumulate in place
      if (kind == phase::transfer && srcs[0] == *dst) continue;    // plans drop such copies
      const std::uint64_t bytes = count * es;
      // Independence within the phase; a reduction may overwrite its own first source exactly,
      // nothing else of its own sources.
      bool clash = writes[slot(*dst)].hits(dst->offset, dst->offset + bytes) ||
                   reads[slot(*dst)].hits(dst->offset, dst->offset + bytes);
      for (const plan_operand& s : srcs) {
        clash = clash || writes[slot(s)].hits(s.offset, s.offset + bytes);
        if (slot(s) == slot(*dst) && !(s == *dst) && s.offset < dst->offset + bytes &&
            dst->offset < s.offset + bytes)
          clash = true;
      }
      if (clash) continue;
      for (const plan_operand& s : srcs)
        reads[slot(s)].v.push_back({s.offset, s.offset + bytes});
      writes[slot(*dst)].v.push_back({dst->offset, dst->offset + bytes});
      if (kind == phase::transfer)
        b.copy(srcs[0], *dst, count);
      else
        b.reduce(srcs, *dst, count, rng() % 2 == 0);
    }
  }
  return b.get();
}

host_memory random_memory(const plan& p, std::mt19937_64& rng) {
  host_memory m;
  const auto es = static_cast<std::size_t>(p.element_size());
  for (int r = 0; r < p.ranks(); ++r) {
    const auto i = static_cast<std::size_t>(r);
    m.input.push_back(test::random_elements(p.type, p.input_bytes[i] / es, rng));
    m.output.push_back(test::random_elements(p.type, p.output_bytes[i] / es, rng));
    m.scratch.push_back(std::vector<unsigned char>(p.scratch_bytes[i], poison));
  }
  return m;
}

// Buffers of every rank, allocated through the executor.
struct rank_buffers {
  gpu_executor& e;
  std::vector<buffer_view> in, out;
  rank_buffers(gpu_executor& ex, const plan& p) : e(ex) {
    for (int r = 0; r < p.ranks(); ++r) {
      const auto i = static_cast<std::size_t>(r);
      in.push_back({e.allocate(r, p.input_bytes[i]), p.input_bytes[i]});
      out.push_back({e.allocate(r, p.output_bytes[i]), p.output_bytes[i]});
      REQUIRE(in.back().data != nullptr);
      REQUIRE(out.back().data != nullptr);
    }
  }
  ~rank_buffers() {
    for (std::size_t r = 0; r < in.size(); ++r) {
      e.deallocate(static_cast<int>(r), in[r].data);
      e.deallocate(static_cast<int>(r), out[r].data);
    }
  }
  void upload(const host_memory& m) {
    for (std::size_t r = 0; r < in.size(); ++r) {
      REQUIRE(e.write(static_cast<int>(r), in[r].data, m.input[r].data(), in[r].bytes).ok());
      REQUIRE(e.write(static_cast<int>(r), out[r].data, m.output[r].data(), out[r].bytes).ok());
    }
  }
  host_memory download() {
    host_memory m;
    for (std::size_t r = 0; r < in.size(); ++r) {
      m.input.emplace_back(in[r].bytes);
      m.output.emplace_back(out[r].bytes);
      REQUIRE(e.read(static_cast<int>(r), m.input.back().data(), in[r].data, in[r].bytes).ok());
      REQUIRE(e.read(static_cast<int>(r), m.output.back().data(), out[r].data, out[r].bytes).ok());
    }
    return m;
  }
};

void check_same(const host_memory& got, const host_memory& want, int es) {
  for (std::size_t r = 0; r < want.input.size(); ++r) {
    INFO("rank " << r);
    CHECK(test::first_difference(got.input[r], want.input[r], es) == -1);
    CHECK(test::first_difference(got.output[r], want.output[r], es) == -1);
  }
}

// Uploads `start` into `buf`, runs `p` and waits for it; the run must succeed.
void run_from(gpu_executor& gpu, rank_buffers& buf, const plan& p, const host_memory& start) {
  buf.upload(start);
  const status s = gpu.run(p, buf.in, buf.out);
  INFO(s.to_string());
  REQUIRE(s.ok());
  REQUIRE(gpu.synchronize().ok());
}

std::vector<int> device_map(int ranks, bool spread) {
  const int n = spread ? device_count() : 1;
  std::vector<int> map;
  for (int r = 0; r < ranks; ++r)
    map.push_back(r % n);
  return map;
}

const char* engine_name(copy_engine e) {
  return e == copy_engine::kernel ? "kernel" : "memcpy";
}
const char* lanes_name(stream_mode s) {
  return s == stream_mode::per_device ? "per device" : "per rank";
}

}  // namespace

TEST_CASE("random plans give the host interpreter's bits under every engine and lane mode",
          "[gpu][executor]") {
  const std::uint64_t seed = 424242;
  std::mt19937_64 rng(seed);
  for (bool spread : {false, true}) {
    if (spread && device_count() < 2) continue;  // one GPU: every rank shares device 0
    for (copy_engine engine : {copy_engine::kernel, copy_engine::memcpy})
      for (stream_mode lanes : {stream_mode::per_device, stream_mode::per_rank})
        for (bool sync : {true, false}) {
          for (int round = 0; round < rounds(); ++round) {
            const int ranks = 2 + static_cast<int>(rng() % 7);
            const dtype t = all_dtypes[rng() % all_dtypes.size()];
            const std::uint64_t plan_seed = rng();
            INFO("seed " << seed << ", plan seed " << plan_seed << ", " << ranks << " ranks, "
                         << name(t) << ", " << engine_name(engine) << " engine, "
                         << lanes_name(lanes) << " lanes, synchronize " << sync
                         << ", spread over devices " << spread);
            std::mt19937_64 prng(plan_seed);
            const plan p = random_plan(prng, ranks, t);
            const host_memory start = random_memory(p, prng);
            host_memory want = start;
            test::interpret(p, want);

            gpu_executor gpu(device_map(ranks, spread), {engine, lanes, sync});
            REQUIRE(gpu.init_status().ok());
            rank_buffers buf(gpu, p);
            run_from(gpu, buf, p, start);
            CHECK(gpu.last_run().prepared);
            check_same(buf.download(), want, p.element_size());

            // Again on the same buffers: the prepared program is reused and gives the same bits.
            buf.upload(start);
            REQUIRE(gpu.run(p, buf.in, buf.out).ok());
            CHECK_FALSE(gpu.last_run().prepared);
            check_same(buf.download(), want, p.element_size());
          }
        }
  }
}

TEST_CASE("events only where a real dependency exists", "[gpu][executor]") {
  // Four ranks on device 0, float32, 1000 elements everywhere.
  plan_builder b(4, dtype::float32);
  for (int r = 0; r < 4; ++r)
    b.sizes(r, 4000, 4000, 0);
  using B = buffer;
  b.begin(phase::transfer);
  b.copy({0, B::input, 0}, {1, B::output, 0}, 1000);  // lane 0 writes out1
  b.begin(phase::transfer);
  b.copy({1, B::output, 0}, {2, B::output, 0}, 1000);  // lane 1 reads out1: waits for lane 0
  b.begin(phase::transfer);
  b.copy({0, B::input, 0}, {3, B::output, 0}, 1000);  // lane 0, touches nothing of lane 1's
  b.begin(phase::transfer);
  b.copy({2, B::output, 0}, {0, B::input, 0}, 1000);  // lane 2 overwrites in0, which lane 0 read
                                                      // (and it must see lane 1's write to out2)
  const plan& p = b.get();
  std::mt19937_64 rng(9);
  const host_memory start = random_memory(p, rng);
  host_memory want = start;
  test::interpret(p, want);

  SECTION("one stream per device: no events at all") {
    gpu_executor gpu({0, 0, 0, 0});
    rank_buffers buf(gpu, p);
    buf.upload(start);
    REQUIRE(gpu.run(p, buf.in, buf.out).ok());
    check_same(buf.download(), want, 4);
    CHECK(gpu.last_run().lanes == 1);
    CHECK(gpu.last_run().launches == 4);
    CHECK(gpu.last_run().waits == 0);
    CHECK(gpu.last_run().records == 0);
  }
  SECTION("one stream per rank: three waits, each on the newest conflicting work") {
    gpu_executor gpu({0, 0, 0, 0}, {copy_engine::kernel, stream_mode::per_rank, true});
    rank_buffers buf(gpu, p);
    buf.upload(start);
    REQUIRE(gpu.run(p, buf.in, buf.out).ok());
    check_same(buf.download(), want, 4);
    CHECK(gpu.last_run().lanes == 3);
    CHECK(gpu.last_run().launches == 4);
    // Phase 1 waits for lane 0's phase 0. Phase 3 (lane 2) conflicts with lane 1's phase 1 (out2)
    // and lane 0's phase 2 (in0): two more waits, since lane 1's clock covers only phase 0.
    CHECK(gpu.last_run().waits == 3);
    CHECK(gpu.last_run().records == 3);
  }
}

TEST_CASE("runs without synchronization stay ordered across runs", "[gpu][executor]") {
  // Four plans that feed each other through every lane, issued 6 times over without waiting.
  const std::uint64_t n = 50000;
  auto sized = [&](plan_builder& b) {
    for (int r = 0; r < 3; ++r)
      b.sizes(r, n * 4, n * 4, 0);
  };
  using B = buffer;
  plan_builder a(3, dtype::int32), bb(3, dtype::int32), c(3, dtype::int32), d(3, dtype::int32);
  sized(a), sized(bb), sized(c), sized(d);
  a.copy({1, B::input, 0}, {0, B::output, 0}, n);                               // lane 1
  bb.copy({0, B::output, 0}, {2, B::output, 0}, n);                             // lane 0
  c.reduce({{2, B::input, 0}, {2, B::output, 0}}, {2, B::input, 0}, n, false);  // lane 2
  d.copy({2, B::input, 0}, {1, B::input, 0}, n);  // lane 2, into rank 1
  std::mt19937_64 rng(11);
  const host_memory start = random_memory(a.get(), rng);
  host_memory want = start;
  for (int i = 0; i < 6; ++i)
    for (const plan_builder* pb : {&a, &bb, &c, &d})
      test::interpret(pb->get(), want);

  gpu_executor gpu({0, 0, 0}, {copy_engine::kernel, stream_mode::per_rank, false});
  rank_buffers buf(gpu, a.get());
  buf.upload(start);
  for (int i = 0; i < 6; ++i)
    for (const plan_builder* pb : {&a, &bb, &c, &d})
      REQUIRE(gpu.run(pb->get(), buf.in, buf.out).ok());
  REQUIRE(gpu.synchronize().ok());
  check_same(buf.download(), want, 4);
}

TEST_CASE("scratch is a grow-only cache with an explicit release", "[gpu][executor]") {
  plan_builder b(2, dtype::float32);
  b.sizes(0, 4000, 4000, 4000);
  b.sizes(1, 4000, 4000, 2000);
  using B = buffer;
  b.copy({0, B::input, 0}, {1, B::scratch, 0}, 500);
  b.copy({0, B::input, 0}, {0, B::scratch, 0}, 1000);
  b.reduce({{1, B::scratch, 0}, {1, B::input, 0}}, {1, B::output, 0}, 500, true);
  b.reduce({{0, B::scratch, 0}, {0, B::input, 0}}, {0, B::output, 0}, 1000, true);
  const plan& p = b.get();
  std::mt19937_64 rng(3);
  const host_memory start = random_memory(p, rng);
  host_memory want = start;
  test::interpret(p, want);

  gpu_executor gpu({0, 0});
  rank_buffers buf(gpu, p);
  CHECK(gpu.scratch_held() == 0);
  buf.upload(start);
  REQUIRE(gpu.run(p, buf.in, buf.out).ok());
  CHECK(gpu.scratch_held() >= 6000);
  check_same(buf.download(), want, 4);
  gpu.release_scratch();
  CHECK(gpu.scratch_held() == 0);
  buf.upload(start);
  REQUIRE(gpu.run(p, buf.in, buf.out).ok());
  CHECK(gpu.last_run().prepared);  // the old lists pointed into the released scratch
  check_same(buf.download(), want, 4);
}

TEST_CASE("time_runs reports the device's time of the last run", "[gpu][executor]") {
  plan_builder b(2, dtype::float32);
  const std::uint64_t n = std::uint64_t{1} << 24;  // 64 MiB a copy: far above launch latency
  b.sizes(0, n * 4, n * 4, 0);
  b.sizes(1, n * 4, n * 4, 0);
  using B = buffer;
  b.copy({0, B::input, 0}, {1, B::output, 0}, n);
  b.copy({1, B::input, 0}, {0, B::output, 0}, n);
  const plan& p = b.get();
  std::mt19937_64 rng(5);
  const host_memory start = random_memory(p, rng);

  gpu_executor untimed({0, 0});
  CHECK(untimed.last_run_seconds() == -1);  // timing is off by default
  gpu_options o;
  o.time_runs = true;
  gpu_executor gpu({0, 0}, o);
  CHECK(gpu.last_run_seconds() == -1);  // nothing ran yet
  rank_buffers buf(gpu, p);
  buf.upload(start);
  for (int i = 0; i < 3; ++i) {
    const auto before = std::chrono::steady_clock::now();
    REQUIRE(gpu.run(p, buf.in, buf.out).ok());
    const double host =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - before).count();
    const double device = gpu.last_run_seconds();
    INFO("device " << device << " s, host " << host << " s");
    // 2 x 64 MiB read and written: at least 256 MiB of traffic, so well above 10 us on any
    // GPU of today, and never longer than the host saw.
    CHECK(device > 10e-6);
    CHECK(device <= host);
  }
}

TEST_CASE("bad arguments are rejected by name, before any buffer is touched", "[gpu][executor]") {
  SECTION("the device map") {
    const gpu_executor none({});
    CHECK(none.init_status().code() == errc::invalid_group);
    const gpu_executor far({0, 1000});
    CHECK(far.init_status().code() == errc::invalid_group);
    CHECK(far.init_status().message().find("rank 1 maps to device 1000") != std::string::npos);
  }

  plan_builder b(2, dtype::float32);
  b.sizes(0, 4000, 4000, 0);
  b.sizes(1, 4000, 4000, 0);
  b.copy({0, buffer::input, 0}, {1, buffer::output, 0}, 1000);
  b.copy({1, buffer::input, 0}, {0, buffer::output, 0}, 1000);
  gpu_executor gpu({0, 0});
  rank_buffers buf(gpu, b.get());
  host_memory start;
  for (int r = 0; r < 2; ++r) {
    start.input.emplace_back(4000, 0x11);
    start.output.emplace_back(4000, poison);
  }
  buf.upload(start);
  auto rejected = [&](const plan& p, std::vector<buffer_view> in, std::vector<buffer_view> out,
                      errc code, const std::string& words) {
    const status s = gpu.run(p, in, out);
    INFO(s.to_string());
    CHECK(s.code() == code);
    CHECK(s.message().find(words) != std::string::npos);
    check_same(buf.download(), start, 4);  // nothing ran
  };
  std::vector<buffer_view> in = buf.in, out = buf.out;

  SECTION("buffers") {
    rejected(b.get(), {in[0]}, out, errc::invalid_buffer, "1 inputs and 2 outputs");
    rejected(b.get(), {in[0], {nullptr, 4000}}, out, errc::invalid_buffer,
             "input of rank 1 is null");
    rejected(b.get(), in, {out[0], {out[1].data, 3999}}, errc::invalid_buffer,
             "output of rank 1 holds 3999 bytes; the call needs 4000");
    std::vector<unsigned char> host(8000);
    rejected(b.get(), {{host.data(), 4000}, in[1]}, out, errc::invalid_buffer,
             "input of rank 0 is not GPU memory");
    rejected(b.get(), {in[0], {static_cast<unsigned char*>(in[1].data) + 2, 4000}}, out,
             errc::invalid_buffer, "not aligned");
  }
  SECTION("plans") {
    plan wrong_ranks = b.get();
    wrong_ranks.spec.ranks = 3;
    rejected(wrong_ranks, in, out, errc::invalid_group, "the plan has 3 ranks");
    plan outside = b.get();
    outside.ops[1].dst.offset = 3000;  // 3000 + 4000 bytes > 4000
    rejected(outside, in, out, errc::invalid_schedule, "outside the output of rank 0");
    plan two_sources = b.get();
    two_sources.ops[0].source_count = 2;
    rejected(two_sources, in, out, errc::invalid_schedule, "bad source list");
  }
  SECTION("and a good run afterwards still works") {
    REQUIRE(gpu.run(b.get(), in, out).ok());
    host_memory want = start;
    test::interpret(b.get(), want);
    check_same(buf.download(), want, 4);
  }
}

// ---- mesh emulation (gpu_options::emulate_mesh, exec/gpu/pacing.hpp)
// --------------------------------

namespace {

gpu_options paced(std::uint64_t bytes_per_second, stream_mode lanes = stream_mode::per_device,
                  bool sync = true) {
  gpu_options o{copy_engine::kernel, lanes, sync};
  o.emulate_mesh = bytes_per_second;
  return o;
}

// Runs `p` from `start` on a fresh executor with options `o`; returns the memory afterwards.
host_memory run_on(const std::vector<int>& map, gpu_options o, const plan& p,
                   const host_memory& start) {
  gpu_executor gpu(map, o);
  REQUIRE(gpu.init_status().ok());
  rank_buffers buf(gpu, p);
  run_from(gpu, buf, p, start);
  return buf.download();
}

}  // namespace

TEST_CASE("mesh emulation: paced runs give the unpaced run's bits and the interpreter's",
          "[gpu][executor][pacing]") {
  const std::uint64_t seed = 20261215;
  std::mt19937_64 rng(seed);
  // 50 GB/s and 1 GB/s links: one tile at a time and many blocks waiting on a slow link.
  for (std::uint64_t rate : {std::uint64_t{50'000'000'000}, std::uint64_t{1'000'000'000}})
    for (bool spread : {false, true}) {
      if (spread && device_count() < 2) continue;
      for (stream_mode lanes : {stream_mode::per_device, stream_mode::per_rank})
        for (bool sync : {true, false})
          for (int round = 0; round < rounds(); ++round) {
            const int ranks = 2 + static_cast<int>(rng() % 7);
            const dtype t = all_dtypes[rng() % all_dtypes.size()];
            const std::uint64_t plan_seed = rng();
            INFO("seed " << seed << ", plan seed " << plan_seed << ", " << ranks << " ranks, "
                         << name(t) << ", links of " << rate << " B/s, " << lanes_name(lanes)
                         << " lanes, synchronize " << sync << ", spread " << spread);
            std::mt19937_64 prng(plan_seed);
            const plan p = random_plan(prng, ranks, t);
            const host_memory start = random_memory(p, prng);
            host_memory want = start;
            test::interpret(p, want);
            const std::vector<int> map = device_map(ranks, spread);
            const host_memory plain = run_on(map, {copy_engine::kernel, lanes, sync}, p, start);
            const host_memory got = run_on(map, paced(rate, lanes, sync), p, start);
            check_same(got, plain, p.element_size());
            check_same(got, want, p.element_size());
          }
    }
}

TEST_CASE("mesh emulation: copies of many paced tiles, every alignment, rank-local ones too",
          "[gpu][executor][pacing]") {
  // uint8 elements, so any offset: a 16-byte-unit copy with unaligned ends, a copy whose ends
  // differ in alignment (1-byte units), a rank-local copy (not paced) and two copies that share
  // one link, each over several 64 KiB tiles and a partial last one.
  const std::uint64_t big = (std::uint64_t{1} << 20) + 13, odd = 300'001;
  const int ranks = 4;
  plan_builder b(ranks, dtype::uint8);
  for (int r = 0; r < ranks; ++r)
    b.sizes(r, 3 * big, 3 * big, 0);
  using B = buffer;
  b.copy({0, B::input, 3}, {1, B::output, 3}, big);        // 16-byte units, 3 + 10 ends
  b.copy({1, B::input, 5}, {2, B::output, 2}, odd);        // ends differ: 1-byte units
  b.copy({2, B::input, 0}, {2, B::output, big + 7}, big);  // rank-local: not paced
  b.copy({3, B::input, 0}, {0, B::output, 0}, big);        // these two share link 3 -> 0
  b.copy({3, B::input, big}, {0, B::output, big + 1}, big);
  b.begin(phase::transfer);
  b.copy({1, B::output, 3}, {3, B::output, 2 * big}, big);  // forwards what rank 0 sent
  const plan& p = b.get();
  std::mt19937_64 rng(17);
  const host_memory start = random_memory(p, rng);
  host_memory want = start;
  test::interpret(p, want);
  for (stream_mode lanes : {stream_mode::per_device, stream_mode::per_rank}) {
    INFO(lanes_name(lanes) << " lanes");
    gpu_executor gpu(device_map(ranks, false), paced(12'000'000'000, lanes));
    REQUIRE(gpu.init_status().ok());
    rank_buffers buf(gpu, p);
    run_from(gpu, buf, p, start);
    check_same(buf.download(), want, 1);
    // What each link carried, by hand: 0->1 big, 1->2 odd, 3->0 two copies of big, 1->3 big;
    // the rank-local copy 2->2 crosses no link. Counted by the paced kernel per tile.
    std::vector<std::uint64_t> moved;
    REQUIRE(gpu.take_link_bytes(moved).ok());
    std::vector<std::uint64_t> want_moved(ranks * ranks, 0);
    want_moved[0 * ranks + 1] = big;
    want_moved[1 * ranks + 2] = odd;
    want_moved[3 * ranks + 0] = 2 * big;
    want_moved[1 * ranks + 3] = big;
    CHECK(moved == want_moved);
    // The counters start again: a second run counts the same, not twice.
    run_from(gpu, buf, p, start);
    REQUIRE(gpu.take_link_bytes(moved).ok());
    CHECK(moved == want_moved);
  }
}

TEST_CASE("mesh emulation: no copy is done before its link could have moved it",
          "[gpu][executor][pacing]") {
  // 4 MiB over one 4 GB/s link takes at least 4194304 / 4e9 = 1.049 ms; two copies of 2 MiB
  // over the same link together as long; a copy within a rank is not paced.
  const std::uint64_t n = std::uint64_t{1} << 22;
  using B = buffer;
  plan_builder one(2, dtype::uint8), shared(2, dtype::uint8), local(2, dtype::uint8);
  for (plan_builder* pb : {&one, &shared, &local})
    for (int r = 0; r < 2; ++r)
      pb->sizes(r, n, n, 0);
  one.copy({0, B::input, 0}, {1, B::output, 0}, n);
  shared.copy({0, B::input, 0}, {1, B::output, 0}, n / 2);
  shared.copy({0, B::input, n / 2}, {1, B::output, n / 2}, n / 2);
  local.copy({0, B::input, 0}, {0, B::output, 0}, n);
  gpu_options o = paced(4'000'000'000);
  o.time_runs = true;
  gpu_executor gpu({0, 0}, o);
  REQUIRE(gpu.init_status().ok());
  rank_buffers buf(gpu, one.get());
  for (const plan_builder* pb : {&one, &shared}) {
    REQUIRE(gpu.run(pb->get(), buf.in, buf.out).ok());
    INFO("device " << gpu.last_run_seconds() << " s");
    CHECK(gpu.last_run_seconds() >= 4194304 / 4e9);
  }
  REQUIRE(gpu.run(local.get(), buf.in, buf.out).ok());
  INFO("rank-local: device " << gpu.last_run_seconds() << " s");
  CHECK(gpu.last_run_seconds() < 4194304 / 4e9);  // at memory speed, not the link's
}

TEST_CASE("mesh emulation needs the copy kernel", "[gpu][executor][pacing]") {
  gpu_options o = paced(12'000'000'000);
  o.engine = copy_engine::memcpy;
  const gpu_executor gpu({0, 0}, o);
  CHECK(gpu.init_status().code() == errc::unsupported);
  CHECK(gpu.init_status().message().find("needs copy_engine::kernel") != std::string::npos);
}

TEST_CASE("mesh emulation: the links carry the plan's link bytes, on the fp8 wire too",
          "[gpu][executor][pacing]") {
  // Relay collectives of 8 ranks on one device, paced: what the paced kernel counted on every
  // link equals plan.hpp's link_bytes, which tests/unit/plan/test_wire.cpp ties to the cost
  // model's wire widths (33/32 bytes an element on fp8, its scales rounded up per transfer).
  for (collective c : {collective::allreduce, collective::reduce_scatter})
    for (wire_format w : {wire_format::native, wire_format::fp8_e4m3}) {
      INFO(name(c) << ", wire " << name(w));
      plan_request req =
          request_for({c, 2, 8, mode::fused, route::relay, 0, 0}, {{0, 1}, {2, 3}, {4, 5}, {6, 7}},
                      {100'003, 100'003, 100'003, 100'003});
      req.type = dtype::bfloat16;
      req.wire = w;
      req.wire_threshold = 0;
      plan p;
      REQUIRE(make_plan(req, p).ok());
      gpu_executor gpu(std::vector<int>(8, 0), paced(50'000'000'000));
      REQUIRE(gpu.init_status().ok());
      rank_buffers buf(gpu, p);
      std::mt19937_64 rng(3);
      run_from(gpu, buf, p, random_memory(p, rng));
      std::vector<std::uint64_t> moved;
      REQUIRE(gpu.take_link_bytes(moved).ok());
      const std::vector<std::uint64_t> want = link_bytes(p);
      CHECK(moved == want);
      std::uint64_t total = 0;
      for (std::uint64_t b : moved)
        total += b;
      CHECK(total > 0);
    }
}
