// The nccl transport on every visible GPU, one rank per device:
// - the property suite through nccl_executor (each rank a thread running its slice on its own
//   stream): random collectives, routes that exist at N = the device count (A = N on the direct
//   route; A < N relay, direct, legacy and pipelined where N >= 3), dtypes, operators, in and
//   out of place, counts and group layouts, against the naive reference with poisoned outputs
//   and canaries;
// - the fp8 wire: the property suite's random cases made floating (both encodings, the
//   five data kinds) within the documented fp8 bound, and random finite data byte for byte equal
//   to the host executor's result (the same kernels and bits as the GPU executor);
// - the per-call peer check: a rank with invalid buffers, or disagreeing arguments, makes every
//   rank fail with nothing run;
// - the bootstrap over an NCCL communicator.
//
// RELAY_NCCL_CASES (default 2,000) and RELAY_PROPERTY_SEED replay a run; a failure prints its case.
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "gpu/gpu_support.hpp"
#include "gpu/host_bits.hpp"
#include "relay/bootstrap/nccl_bootstrap.hpp"
#include "relay/cost/choose.hpp"
#include "relay/exec/nccl_executor.hpp"
#include "support/property_suite.hpp"

using namespace relay;

namespace {

using test::device_count;
using test::env_or;

// A random case of N ranks (N = the device count): any valid A, mode and route.
testing::property_case random_case_of(std::mt19937_64& rng, int N) {
  testing::property_case c;
  c.seed = rng();
  std::mt19937_64 r(c.seed);
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(r); };
  c.coll = all_collectives[static_cast<std::size_t>(pick(4))];
  c.ranks = N;
  std::vector<int> actives;
  for (int a = 2; a <= N && a <= max_reduce_inputs; a *= 2)
    actives.push_back(a);
  c.active = actives[static_cast<std::size_t>(pick(static_cast<int>(actives.size())))];
  c.mode = N % c.active == 0 && pick(2) == 0 ? mode::fused : mode::single;
  if (c.active == N) {
    c.route = route::direct;
  } else {
    const route routes[] = {route::relay, route::relay, route::direct, route::legacy,
                            route::pipelined};
    c.route = routes[pick(5)];
    if (c.route == route::legacy && c.active != 2) c.route = route::relay;
    if (c.route == route::pipelined) {  // any single group, A >= 4 too
      c.mode = mode::single;
      c.tiles = std::array{2, 3, 4, 7}[static_cast<std::size_t>(pick(4))];
    }
  }
  c.type = all_dtypes[static_cast<std::size_t>(pick(static_cast<int>(all_dtypes.size())))];
  c.op = pick(2) == 0 ? reduce_op::sum : reduce_op::avg;
  c.in_place = has_in_place(c.coll) && pick(2) == 0;
  c.alignment = std::array<std::int64_t, 4>{128, 128, 1, 16}[static_cast<std::size_t>(pick(4))];
  std::vector<int> ranks(static_cast<std::size_t>(N));
  std::iota(ranks.begin(), ranks.end(), 0);
  if (pick(2) == 0) std::shuffle(ranks.begin(), ranks.end(), r);
  const int groups = c.mode == mode::fused ? N / c.active : 1;
  for (int g = 0; g < groups; ++g)
    c.groups.emplace_back(ranks.begin() + g * c.active, ranks.begin() + (g + 1) * c.active);
  for (int g = 0; g < groups; ++g)
    c.counts.push_back(testing::random_count(r, c));
  return c;
}

struct property_run {
  std::uint64_t failures = 0, direct_full = 0;  // cases wrong, and cases with A = N
};

// The property suite through nccl_executor over `devices`: `cases` cases drawn from `seed`, each
// changed by `shape` where given (testing::make_fp8); the first 10 failures reported.
property_run run_property(const std::vector<int>& devices, std::uint64_t cases, std::uint64_t seed,
                          void (*shape)(testing::property_case&)) {
  nccl_executor ex(devices);
  REQUIRE(ex.init_status().ok());
  std::mt19937_64 rng(seed);
  property_run run;
  for (std::uint64_t i = 0; i < cases; ++i) {
    testing::property_case c = random_case_of(rng, static_cast<int>(devices.size()));
    if (shape != nullptr) shape(c);
    run.direct_full += c.active == c.ranks ? 1 : 0;
    const testing::property_result r = testing::run_case(ex, c);
    if (!r.ok && run.failures++ < 10)
      FAIL_CHECK("case " << i << " (suite seed " << seed << "): " << r.failure);
  }
  return run;
}

std::vector<int> all_devices() {
  std::vector<int> d(static_cast<std::size_t>(device_count()));
  std::iota(d.begin(), d.end(), 0);
  return d;
}

}  // namespace

TEST_CASE("nccl transport equals the naive reference on random cases", "[nccl][property]") {
  const std::vector<int> devices = all_devices();
  if (devices.size() < 2) {
    WARN("the nccl transport needs 2 GPUs or more; " << devices.size() << " visible");
    return;
  }
  const std::uint64_t cases = env_or("RELAY_NCCL_CASES", 2'000);
  const std::uint64_t seed = env_or("RELAY_PROPERTY_SEED", 20261201);
  const property_run run = run_property(devices, cases, seed, nullptr);
  CHECK(run.failures == 0);
  CHECK(run.direct_full > 0);
  WARN("nccl property run: " << cases << " cases over " << devices.size() << " GPUs, "
                             << run.direct_full << " with A = N, seed " << seed << ", #wrong cases "
                             << run.failures);
}

TEST_CASE("nccl transport on the fp8 wire: random cases within the bound",
          "[nccl][property][fp8]") {
  // The property suite's fp8 cases (testing::make_fp8: float32, float16 or bfloat16, either
  // encoding, uniform, wide-range, subnormal, NaN/infinity or near-largest data), forced to fp8
  // at every count, checked against the fp8 bound (check/wire_reference.hpp).
  const std::vector<int> devices = all_devices();
  if (devices.size() < 2) {
    WARN("the nccl transport needs 2 GPUs or more; " << devices.size() << " visible");
    return;
  }
  const std::uint64_t cases = env_or("RELAY_NCCL_CASES", 2'000) / 4 + 1;
  const std::uint64_t seed = env_or("RELAY_PROPERTY_SEED", 20261207);
  CHECK(run_property(devices, cases, seed, testing::make_fp8).failures == 0);
}

TEST_CASE("nccl transport on the fp8 wire gives the host executor's bits", "[nccl][fp8]") {
  // Random finite values in [-1, 1], SUM, on every device (one rank each), in groups of A = 2
  // (A = N on the direct route where N = 2, else the relay route) and A = 4 on the relay route
  // where N > 4 (reduce-scatter's fp32 partial sums then cross the wire): every output byte equal
  // to the host executor's, outputs poisoned alike on both.
  const std::vector<int> devices = all_devices();
  const int N = static_cast<int>(devices.size());
  if (N < 2) {
    WARN("the nccl transport needs 2 GPUs or more; " << N << " visible");
    return;
  }
  nccl_executor ex(devices);
  REQUIRE(ex.init_status().ok());
  std::mt19937_64 rng(20261208);
  std::vector<int> actives{2};
  if (N > 4) actives.push_back(4);
  for (wire_format w : {wire_format::fp8_e4m3, wire_format::fp8_e4m3_fnuz})
    for (dtype t : {dtype::float32, dtype::float16, dtype::bfloat16})
      for (collective coll : {collective::allreduce, collective::reduce_scatter})
        for (int A : actives) {
          INFO(name(w) << " (seed 20261208)");
          options opt;
          opt.route = A == N ? route::direct : route::relay;
          opt.wire = w;
          opt.wire_threshold = 0;
          test::check_host_bits(ex, coll, t, A, opt, rng);
        }
}

TEST_CASE("nccl transport: a rank's invalid buffers or arguments fail every rank, nothing runs",
          "[nccl]") {
  const std::vector<int> devices = all_devices();
  if (devices.size() < 2) return;
  const int N = static_cast<int>(devices.size());
  const nccl_api* nccl = nullptr;
  REQUIRE(gpu_nccl(nccl).ok());
  std::vector<nccl_comm> comms(devices.size());
  REQUIRE(nccl->comm_init_all(comms.data(), N, devices.data()) == nccl_success);
  // An A = N direct allreduce of 1000 int32.
  plan_request req;
  req.coll = collective::allreduce;
  req.mode = mode::single;
  req.route = route::direct;
  req.ranks = N;
  req.groups = {devices};
  req.counts = {1000};
  req.type = dtype::int32;
  plan p;
  REQUIRE(make_plan(req, p).ok());
  const std::size_t bytes = 4000;
  struct rank_data {
    void *send = nullptr, *recv = nullptr;
    gpu::rt::stream_t stream = nullptr;
    std::shared_ptr<nccl_bootstrap> boot;
    std::unique_ptr<nccl_transport> link;
    plan_slice slice;
    status result;
  };
  std::vector<rank_data> rd(devices.size());
  for (int r = 0; r < N; ++r) {
    rank_data& d = rd[static_cast<std::size_t>(r)];
    RELAY_GPU_REQUIRE(gpu::rt::set_device(r));
    RELAY_GPU_REQUIRE(gpu::rt::malloc(&d.send, bytes));
    RELAY_GPU_REQUIRE(gpu::rt::malloc(&d.recv, bytes));
    std::vector<std::int32_t> in(1000);
    for (int i = 0; i < 1000; ++i)
      in[static_cast<std::size_t>(i)] = (r + 1) * 1000 + i;
    RELAY_GPU_REQUIRE(gpu::rt::memcpy(d.send, in.data(), bytes));
    RELAY_GPU_REQUIRE(gpu::rt::memset(d.recv, 0xa5, bytes));
    RELAY_GPU_REQUIRE(gpu::rt::stream_create(&d.stream));
    d.boot = std::make_shared<nccl_bootstrap>(comms[static_cast<std::size_t>(r)], r);
    REQUIRE(nccl_transport::over(comms[static_cast<std::size_t>(r)], r, d.link, d.boot).ok());
    d.slice = slice_plan(p, r);
  }
  // Every rank runs one call; `local_error` ranks report bad buffers, `odd_fingerprint` one
  // disagrees on the arguments.
  auto call_all = [&](int local_error, int odd_fingerprint) {
    std::vector<std::thread> threads;
    for (int r = 0; r < N; ++r)
      threads.emplace_back([&, r] {
        rank_data& d = rd[static_cast<std::size_t>(r)];
        (void)gpu::rt::set_device(r);
        call_context call;
        call.p = &p;
        call.slice = &d.slice;
        call.send = {d.send, bytes};
        call.recv = {d.recv, bytes};
        call.placement = placement::out_of_place;
        call.sequence = 1;
        call.fingerprint = r == odd_fingerprint ? 2 : 1;
        if (r == local_error)
          (void)(call.local = status{errc::invalid_buffer, "the output is too small"});
        call.timeout = std::chrono::milliseconds(20'000);
        call.stream = d.stream;
        (void)(d.result = d.link->run(call));
        (void)gpu::rt::stream_synchronize(d.stream);
      });
    for (std::thread& t : threads)
      t.join();
  };
  auto outputs_poisoned = [&] {
    for (int r = 0; r < N; ++r) {
      std::vector<unsigned char> h(bytes);
      (void)gpu::rt::set_device(r);
      REQUIRE(gpu::rt::memcpy(h.data(), rd[static_cast<std::size_t>(r)].recv, bytes) ==
              gpu::rt::success);
      for (unsigned char b : h)
        if (b != 0xa5) return false;
    }
    return true;
  };

  call_all(1, -1);
  CHECK(rd[1].result.code() == errc::invalid_buffer);
  CHECK(rd[0].result.code() == errc::peer_error);
  CHECK(rd[0].result.message().find("rank(s) 1 passed invalid buffers") != std::string::npos);
  CHECK(outputs_poisoned());

  call_all(-1, N - 1);
  for (int r = 0; r < N; ++r) {
    INFO("rank " << r << ": " << rd[static_cast<std::size_t>(r)].result.to_string());
    CHECK(rd[static_cast<std::size_t>(r)].result.code() == errc::mismatch);
    CHECK(rd[static_cast<std::size_t>(r)].result.message().find(std::to_string(N - 1)) !=
          std::string::npos);
  }
  CHECK(outputs_poisoned());

  call_all(-1, -1);  // and a good call afterwards: sum over ranks of (r+1)*1000 + i
  const std::int32_t ranks_sum = N * (N + 1) / 2 * 1000;
  for (int r = 0; r < N; ++r) {
    INFO("rank " << r << ": " << rd[static_cast<std::size_t>(r)].result.to_string());
    CHECK(rd[static_cast<std::size_t>(r)].result.ok());
    std::vector<std::int32_t> h(1000);
    (void)gpu::rt::set_device(r);
    REQUIRE(gpu::rt::memcpy(h.data(), rd[static_cast<std::size_t>(r)].recv, bytes) ==
            gpu::rt::success);
    for (int i = 0; i < 1000; i += 111)
      CHECK(h[static_cast<std::size_t>(i)] == ranks_sum + N * i);
  }

  for (int r = 0; r < N; ++r) {
    rank_data& d = rd[static_cast<std::size_t>(r)];
    (void)gpu::rt::set_device(r);
    d.link.reset();
    d.boot.reset();
    (void)gpu::rt::free(d.send);
    (void)gpu::rt::free(d.recv);
    (void)gpu::rt::stream_destroy(d.stream);
    (void)nccl->comm_destroy(comms[static_cast<std::size_t>(r)]);
  }
}

TEST_CASE("the bootstrap over an NCCL communicator gathers bytes of any length", "[nccl]") {
  const std::vector<int> devices = all_devices();
  if (devices.size() < 2) return;
  const int N = static_cast<int>(devices.size());
  const nccl_api* nccl = nullptr;
  REQUIRE(gpu_nccl(nccl).ok());
  std::vector<nccl_comm> comms(devices.size());
  REQUIRE(nccl->comm_init_all(comms.data(), N, devices.data()) == nccl_success);
  std::vector<std::vector<std::vector<std::byte>>> got(devices.size());
  std::vector<status> results(devices.size()), barriers(devices.size());
  std::vector<int> ranks(devices.size(), -1), sizes(devices.size(), -1);
  std::vector<std::thread> threads;
  for (int r = 0; r < N; ++r)
    threads.emplace_back([&, r] {
      const auto i = static_cast<std::size_t>(r);
      (void)gpu::rt::set_device(r);
      nccl_bootstrap boot(comms[i], r);
      ranks[i] = boot.rank();
      sizes[i] = boot.size();
      // Rank r sends r*3 bytes of value 7*r+1 (rank 0 sends nothing).
      std::vector<std::byte> mine(i * 3, static_cast<std::byte>(7 * r + 1));
      (void)(results[i] = boot.all_gather(mine, got[i], std::chrono::milliseconds(20'000)));
      (void)(barriers[i] = boot.barrier(std::chrono::milliseconds(20'000)));
    });
  for (std::thread& t : threads)
    t.join();
  for (int r = 0; r < N; ++r) {
    const auto i = static_cast<std::size_t>(r);
    INFO("rank " << r << ": " << results[i].to_string());
    CHECK(results[i].ok());
    CHECK(barriers[i].ok());
    CHECK(ranks[i] == r);
    CHECK(sizes[i] == N);
    REQUIRE(got[i].size() == devices.size());
    for (int q = 0; q < N; ++q)
      CHECK(got[i][static_cast<std::size_t>(q)] ==
            std::vector<std::byte>(static_cast<std::size_t>(q) * 3,
                                   static_cast<std::byte>(7 * q + 1)));
  }
  for (nccl_comm c : comms)
    (void)nccl->comm_destroy(c);
}
