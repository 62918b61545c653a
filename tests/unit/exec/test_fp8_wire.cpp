// The fp8 wire on the host executor: hand-worked values of one block, the non-finite
// rules, the report of the choice, and the property suite on random and adversarial data within
// the documented bound (check/wire_reference.hpp) against the exact long-double reference.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "relay/cost/choose.hpp"
#include "relay/exec/host_executor.hpp"
#include "support/property_suite.hpp"

using namespace relay;

namespace {

// All-gather, A = N = 2 (direct: each rank sends its input to the other), float32, `n` elements
// per rank; rank 1's input is zeros. Returns rank 1's output (rank 0's segment, then its own).
std::vector<float> gather_from_rank0(const std::vector<float>& x, wire_format w) {
  const std::size_t n = x.size();
  std::vector<float> in0 = x, in1(n, 0.0f), out0(2 * n, -7.0f), out1(2 * n, -7.0f);  // poison
  const std::vector<buffer_view> send{{in0.data(), n * 4}, {in1.data(), n * 4}};
  const std::vector<buffer_view> recv{{out0.data(), 2 * n * 4}, {out1.data(), 2 * n * 4}};
  host_executor ex;
  options opt;
  opt.route = route::direct;  // A = N
  opt.wire = w;
  opt.wire_threshold = 0;
  REQUIRE(all_gather(ex, {{0, 1}}, send, recv, std::vector<std::int64_t>{std::int64_t(n)},
                     dtype::float32, opt));
  // Rank 0's own segment is a local copy: exact.
  for (std::size_t i = 0; i < n; ++i)
    CHECK(std::memcmp(&out0[i], &x[i], 4) == 0);
  return out1;
}

}  // namespace

TEST_CASE("one block by hand: scale from the finite maximum, NaN in its own element",
          "[exec][wire]") {
  // The finite maximum 1000 sets the scale: 1000/256 = 3.90625 (e4m3) or 1000/128 = 7.8125
  // (e4m3_fnuz), and 1000 travels as 256 (128) and arrives exactly. The quotients are twice as
  // large on e4m3 as on fnuz, whose bias is one higher, so both round alike: 1 travels as 0.256
  // (0.128), steps of 2^-5 (2^-6) there, 8 of them: 0.25 * 3.90625 = 0.9765625; 0.1 as 0.0256
  // (0.0128), steps of 2^-9 (2^-10), 13 of them: 0.09918212890625; -3 as -0.768 (-0.384), steps
  // of 2^-4 (2^-5), 12 of them: -2.9296875. NaN and -Inf cross as NaN; -0.0 keeps its sign on
  // e4m3 (fnuz has one zero).
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x{1.0f, 0.1f, 1000.0f, nan, -inf, -0.0f, -3.0f};
  for (wire_format w : {wire_format::fp8_e4m3, wire_format::fp8_e4m3_fnuz}) {
    INFO(name(w));
    const std::vector<float> got = gather_from_rank0(x, w);
    CHECK(got[0] == 0.9765625f);
    CHECK(got[1] == 0.09918212890625f);
    CHECK(got[2] == 1000.0f);
    CHECK(std::isnan(got[3]));
    CHECK(std::isnan(got[4]));
    CHECK(got[5] == 0.0f);
    CHECK(std::signbit(got[5]) == (w == wire_format::fp8_e4m3));
    CHECK(got[6] == -2.9296875f);
    for (std::size_t i = 7; i < 14; ++i)  // rank 1's own zeros, a local copy
      CHECK(got[i] == 0.0f);
  }
}

namespace {

// torchcomms' example (ShardedRelayCollectives.py, its --low-precision case): one group of the
// first A of 8 ranks, each active rank's buffers filled with constants that name sender and
// destination, and the outputs those constants' sums. Returns the number of wrong elements over
// the active ranks' outputs (the first few printed), after checking that fp8 was taken.
template <class T>
int constant_fills(collective c, int A, std::int64_t n, route r, wire_format w) {
  const int N = 8;
  const auto count = static_cast<std::size_t>(n);
  const std::size_t in_n = c == collective::reduce_scatter || c == collective::all_to_all
                               ? static_cast<std::size_t>(A) * count
                               : count;
  const std::size_t out_n = c == collective::allreduce || c == collective::reduce_scatter
                                ? count
                                : static_cast<std::size_t>(A) * count;
  std::vector<std::vector<T>> in(static_cast<std::size_t>(N)), out(static_cast<std::size_t>(N));
  std::vector<buffer_view> send(static_cast<std::size_t>(N)), recv(static_cast<std::size_t>(N));
  for (int a = 0; a < A; ++a) {
    auto& x = in[static_cast<std::size_t>(a)];
    x.resize(in_n);
    for (std::size_t i = 0; i < in_n; ++i) {
      const auto block = static_cast<float>(i / count);  // the destination's index, j
      const float v = c == collective::reduce_scatter
                          ? static_cast<float>(a + 1) + 100 * (block + 1)
                      : c == collective::all_to_all ? static_cast<float>(a + 1) * 10 + block + 1
                                                    : static_cast<float>(a + 1);
      x[i] = reduction_traits<T>::store(v, 1);
    }
    out[static_cast<std::size_t>(a)].assign(out_n, reduction_traits<T>::store(-5.0f, 1));  // poison
    send[static_cast<std::size_t>(a)] = {x.data(), in_n * sizeof(T)};
    recv[static_cast<std::size_t>(a)] = {out[static_cast<std::size_t>(a)].data(),
                                         out_n * sizeof(T)};
  }
  std::vector<int> group;
  for (int a = 0; a < A; ++a)
    group.push_back(a);
  host_executor ex;
  options opt;
  opt.route = r;
  opt.wire = w;
  opt.wire_threshold = 0;
  wire_choice said;
  opt.wire_report = &said;
  REQUIRE(run_collective(ex, c, {group}, send, recv, std::vector<std::int64_t>{n},
                         std::is_same_v<T, float> ? dtype::float32 : dtype::float16, reduce_op::sum,
                         opt));
  REQUIRE(said.taken == w);
  const float rank_sum = static_cast<float>(A * (A + 1) / 2);
  int wrong = 0;
  for (int k = 0; k < A; ++k)
    for (std::size_t i = 0; i < out_n; ++i) {
      const auto block = static_cast<float>(i / count);  // the source's index, for the gathers
      const float want =
          c == collective::allreduce        ? rank_sum
          : c == collective::reduce_scatter ? rank_sum + 100 * static_cast<float>(A * (k + 1))
          : c == collective::all_gather     ? block + 1
                                            : (block + 1) * 10 + static_cast<float>(k + 1);
      const float got = reduction_traits<T>::load(out[static_cast<std::size_t>(k)][i]);
      if (got != want && wrong++ < 3)
        UNSCOPED_INFO("rank " << k << ", element " << i << ": " << got << ", want " << want);
    }
  return wrong;
}

}  // namespace

TEST_CASE("constant fills arrive bit for bit: torchcomms' example on the fp8 wire",
          "[exec][wire]") {
  // Every element of a transfer is one constant (102 from rank 1 to owner 0 at A=2, ...): its
  // block travels as the target and arrives exactly, and so do the fp32 sums of such blocks
  // that helpers send on. The reduce-scatter at A=2 gives 203 and 403 (a power-of-two scale would
  // send 102 as 104: 205). Counts of whole blocks and not (a transfer's last block is partial),
  // float32 and float16 (every constant and sum here has at most 11 significant bits), the relay
  // route (two crossings) and the direct one, both encodings.
  for (collective c : all_collectives)
    for (int A : {2, 4})
      for (std::int64_t n : {std::int64_t{4096}, std::int64_t{1000}})
        for (route r : {route::relay, route::direct})
          for (wire_format w : {wire_format::fp8_e4m3, wire_format::fp8_e4m3_fnuz}) {
            INFO(name(c) << " A=" << A << " count " << n << " " << name(r) << " " << name(w));
            CHECK(constant_fills<float>(c, A, n, r, w) == 0);
            CHECK(constant_fills<float16>(c, A, n, r, w) == 0);
          }
}

TEST_CASE("a NaN or an infinity poisons its element, never its block", "[exec][wire]") {
  // bf16 allreduce, A=2 on N=8 (relay: each value crosses to a helper, the sum back): rank 0
  // holds 1 everywhere but NaN at 5 and +Inf at 40; rank 1 holds 1. Ones and twos are exact on
  // fp8, so every other element is exactly 2 on both ranks.
  const std::int64_t n = 3000;
  std::vector<std::vector<bfloat16>> in(8), out(8);
  std::vector<buffer_view> send(8), recv(8);
  for (std::size_t r = 0; r < 8; ++r) {
    in[r].assign(static_cast<std::size_t>(n), bfloat16::from_float(1.0f));
    out[r].assign(static_cast<std::size_t>(n), bfloat16::from_float(-5.0f));
    send[r] = {in[r].data(), in[r].size() * 2};
    recv[r] = {out[r].data(), out[r].size() * 2};
  }
  in[0][5] = bfloat16::from_float(std::numeric_limits<float>::quiet_NaN());
  in[0][40] = bfloat16::from_float(std::numeric_limits<float>::infinity());
  host_executor ex;
  options opt;
  opt.wire = wire_format::fp8_e4m3;
  opt.wire_threshold = 0;
  wire_choice said;
  opt.wire_report = &said;
  REQUIRE(allreduce(ex, {{0, 1}, {2, 3}, {4, 5}, {6, 7}}, send, recv, std::vector<int>(4, 3000),
                    dtype::bfloat16, reduce_op::sum, opt));
  CHECK(said.taken == wire_format::fp8_e4m3);
  for (std::size_t r : {0u, 1u}) {
    INFO("rank " << r);
    CHECK(std::isnan(out[r][5].to_float()));
    CHECK(!std::isfinite(out[r][40].to_float()));
    for (std::int64_t i = 0; i < n; ++i)
      if (i != 5 && i != 40 && out[r][static_cast<std::size_t>(i)].to_float() != 2.0f)
        FAIL("element " << i << " is " << out[r][static_cast<std::size_t>(i)].to_float());
  }
}

namespace {

// Bytes of float values, as the reference takes them.
std::vector<std::byte> bytes_of(const std::vector<float>& v) {
  std::vector<std::byte> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// The reference's verdict on a direct all-gather of A = N = 2, one element per rank: rank 0
// sends x, rank 1 a zero; rank 1 received `arrived` for x (rank 0's own copy is exact).
std::int64_t wrong_for(float x, float arrived, fp8_format f, int hops) {
  const std::vector<std::vector<std::byte>> in{bytes_of({x}), bytes_of({0.0f})};
  const std::vector<std::vector<std::byte>> out{bytes_of({x, 0.0f}), bytes_of({arrived, 0.0f})};
  const std::vector<std::int64_t> counts{1};
  const std::vector<std::vector<int>> groups{{0, 1}};
  const reference::call_data call{
      collective::all_gather, dtype::float32, reduce_op::sum, groups, counts, in, out};
  return reference::check_outputs_fp8(call, f, hops).wrong;
}

}  // namespace

TEST_CASE("float subnormals below the scale's floor arrive as zero, within the bound",
          "[exec][wire]") {
  // The GPU suite's case 195 (seed 20261129) in small: a float32 all-to-all sent -0x1.dbp-139
  // alone in its block. The scale stops at 2^-126, so it travels as -0x1.dbp-13, below half of
  // either encoding's smallest subnormal (2^-9, 2^-10): -0 (fnuz, one zero: +0). 0x1.8p-135
  // travels as 0x1.8p-9, 1.5 steps of e4m3's 2^-9 (a tie: 2 steps, 2^-134 arrives) and 3 of
  // fnuz's 2^-10 (exact).
  const float tiny = -0x1.dbp-139f, above = 0x1.8p-135f;
  const std::vector<float> e4m3 = gather_from_rank0({tiny, above}, wire_format::fp8_e4m3);
  CHECK(float_bits(e4m3[0]) == 0x80000000u);  // -0
  const std::vector<float> fnuz = gather_from_rank0({tiny, above}, wire_format::fp8_e4m3_fnuz);
  CHECK(float_bits(fnuz[0]) == 0u);  // +0
  // (both in one block: its maximum 0x1.8p-135 is below 2^-119 too, so the scale is 2^-126)
  CHECK(e4m3[1] == 0x1p-134f);
  CHECK(fnuz[1] == 0x1.8p-135f);
  // The bound's floor F = (1 + u) (2^-18 + 2^-30) 2^(t - 126): about 2^-136 (e4m3, t = 8) and
  // 2^-137 (fnuz, t = 7). With nothing else (S = 0, M = 0) one hop allows F and the terms of
  // float32's own rounding: at most 2^-10 F + 3 eta more.
  for (auto [f, floor] :
       {std::pair{fp8_format::e4m3, 0x1p-136L}, std::pair{fp8_format::e4m3_fnuz, 0x1p-137L}}) {
    const long double b = reference::fp8_bound<float>(0, 0, 0, 1, 1, f, 1);
    CHECK(b >= floor);
    CHECK(b <= floor * (1 + 0x1p-10L) + 0x1p-147L);
  }
  // The reference takes what the wire gives, on every route's hop count...
  for (int hops : {1, 2}) {
    CHECK(wrong_for(tiny, -0.0f, fp8_format::e4m3, hops) == 0);
    CHECK(wrong_for(tiny, 0.0f, fp8_format::e4m3_fnuz, hops) == 0);
    // ...but a value 2^6 above the floor must still arrive: losing it is an error.
    CHECK(wrong_for(-0x1p-130f, 0.0f, fp8_format::e4m3, hops) == 1);
    CHECK(wrong_for(-0x1p-130f, 0.0f, fp8_format::e4m3_fnuz, hops) == 1);
  }
}

TEST_CASE("the call reports the wire it took", "[exec][wire]") {
  std::vector<float> a(64, 1.0f), b(64, 2.0f), oa(64), ob(64);
  const std::vector<buffer_view> send{{a.data(), 256}, {b.data(), 256}};
  const std::vector<buffer_view> recv{{oa.data(), 256}, {ob.data(), 256}};
  host_executor ex;
  options opt;
  opt.route = route::direct;  // A = N
  opt.wire = wire_format::fp8;
  wire_choice said;
  opt.wire_report = &said;
  REQUIRE(allreduce(ex, {{0, 1}}, send, recv, std::vector<int>{64}, dtype::float32, reduce_op::sum,
                    opt));
  CHECK(said.requested == wire_format::fp8_e4m3_fnuz);  // mi300x's
  CHECK(said.taken == wire_format::native);             // 256 bytes: far below the threshold
  CHECK(said.bytes == 256);
  CHECK(oa == std::vector<float>(64, 3.0f));
  // Integers are refused, naming the problem, and nothing is written.
  std::vector<std::int32_t> ia(64, 1), io(64, -9);
  const std::vector<buffer_view> isend{{ia.data(), 256}, {ia.data(), 256}};
  const std::vector<buffer_view> irecv{{io.data(), 256}, {io.data(), 256}};
  const status s = allreduce(ex, {{0, 1}}, isend, irecv, std::vector<int>{64}, dtype::int32,
                             reduce_op::sum, opt);
  CHECK(s.code() == errc::unsupported);
  CHECK(s.message().find("int32") != std::string::npos);
  CHECK(io == std::vector<std::int32_t>(64, -9));
}

TEST_CASE("fp8 wire property suite: random and adversarial data within the bound",
          "[exec][wire][property]") {
  // Random cases of the native suite (every collective, A, N, mode, route, count, layout, in and
  // out of place) made floating, on both encodings, over the five data kinds of
  // testing::detail::fill_fp8, each checked against the exact reference within the bound.
  host_executor ex;
  std::mt19937_64 rng(20261203);
  const int cases = testing::property_cases(700, 100);  // 100: enough of each data kind
  int failures = 0;
  std::array<int, 5> per_kind{};
  for (int i = 0; i < cases; ++i) {
    testing::property_case c = testing::random_case(rng);
    testing::make_fp8(c);
    ++per_kind[static_cast<std::size_t>(c.wire_data)];
    const testing::property_result result = testing::run_case(ex, c);
    if (!result.ok && failures++ < 10) FAIL_CHECK(result.failure);
  }
  CHECK(failures == 0);
  for (int k : per_kind)
    CHECK(k > cases / 10);
}

TEST_CASE("fp8 wire property suite: the GPU suite's cases on the host executor",
          "[exec][wire][property]") {
  // tests/gpu/exec/test_gpu_properties.cpp draws its fp8 cases from seed 20261129 (501 by default):
  // the same cases here, so that a case that fails on every executor (its 195th: float32 data
  // below the scale's floor, outside the bound without F) fails on the CPU first.
  // A run scaled below 196 cases (RELAY_PROPERTY_CASES) leaves that case to the subnormal test.
  host_executor ex;
  std::mt19937_64 rng(20261129);
  int failures = 0;
  const int cases = testing::property_cases(501);
  for (int i = 0; i < cases; ++i) {
    testing::property_case c = testing::random_case(rng);
    testing::make_fp8(c);
    if (i == 195)
      CHECK(c.describe() ==
            "all-to-all A=2 N=4 fused legacy float32 avg out-of-place alignment=128 counts=1,8888 "
            "groups=1,2|0,3 seed=17667687092792364468 fp32_partials wire=fp8_e4m3 data=2");
    const testing::property_result result = testing::run_case(ex, c);
    if (!result.ok && failures++ < 10) FAIL_CHECK("case " << i << ": " << result.failure);
  }
  CHECK(failures == 0);
}

namespace {

// The most fp8 crossings on any path from an input to an output of `p`: each element of every
// area carries its count; a copy adds one where it crosses the wire, a reduction takes the
// largest of its sources.
int most_crossings(const plan& p) {
  const auto R = static_cast<std::size_t>(p.ranks());
  std::array<std::vector<std::vector<int>>, 3> mem;  // input, output, scratch; per rank, per byte
  for (auto& m : mem)
    m.resize(R);
  for (std::size_t r = 0; r < R; ++r) {
    mem[0][r].assign(p.input_bytes[r] + 1, 0);
    mem[1][r].assign(p.output_bytes[r] + 1, 0);
    mem[2][r].assign(p.scratch_bytes[r] + 1, 0);
  }
  auto at = [&](const plan_operand& o) {
    return mem[static_cast<std::size_t>(o.buf)][o.rank].data() + o.offset;
  };
  for (const plan_op& o : p.ops) {
    const auto sources = p.sources_of(o);
    for (std::uint64_t i = 0; i < o.count; ++i) {
      int h = 0;
      for (std::size_t s = 0; s < sources.size(); ++s)
        h = std::max(h, at(sources[s])[i * static_cast<std::uint64_t>(p.source_width(o, s))]);
      at(o.dst)[i * static_cast<std::uint64_t>(p.dst_width(o))] = h + (p.crosses_wire(o) ? 1 : 0);
    }
  }
  int most = 0;
  for (std::size_t r = 0; r < R; ++r)
    for (int b : mem[1][r])
      most = std::max(most, b);
  return most;
}

}  // namespace

TEST_CASE("wire_hops bounds the crossings of every route's plans", "[exec][wire]") {
  // The table the bound uses (check/wire_reference.hpp), by hand: direct routes cross once but
  // the allreduce at A > 2 (reduce-scatter, then all-gather); every other route twice.
  CHECK(reference::wire_hops(collective::allreduce, route::direct, 2) == 1);
  CHECK(reference::wire_hops(collective::allreduce, route::direct, 4) == 2);
  CHECK(reference::wire_hops(collective::all_to_all, route::direct, 4) == 1);
  CHECK(reference::wire_hops(collective::all_gather, route::relay, 2) == 2);
  CHECK(reference::wire_hops(collective::reduce_scatter, route::pipelined, 4) == 2);
  // And every plan keeps to it (out of place, where outputs hold every value's last copy).
  int plans = 0;
  for (collective c : all_collectives)
    for (auto [A, N] : {std::pair{2, 3}, std::pair{2, 8}, std::pair{4, 8}, std::pair{8, 16}})
      for (mode m : {mode::fused, mode::single})
        for (route rt : {route::relay, route::direct, route::legacy, route::pipelined}) {
          const schedule_spec s{c, A, N, m, rt, 0, rt == route::pipelined ? 3 : 0};
          if (spec_error(s) != nullptr) continue;
          std::vector<std::vector<int>> groups;
          for (int g = 0; g < (m == mode::fused ? N / A : 1); ++g) {
            groups.emplace_back();
            for (int j = 0; j < A; ++j)
              groups.back().push_back(g * A + j);
          }
          plan_request q = request_for(s, groups, std::vector<std::int64_t>(groups.size(), 9001));
          q.type = dtype::bfloat16;
          q.wire = wire_format::fp8_e4m3;
          q.wire_threshold = 0;
          plan p;
          REQUIRE(make_plan(q, p));
          INFO(name(c) << " A=" << A << " N=" << N << " " << name(m) << " " << name(rt));
          const int most = most_crossings(p);
          CHECK(most <= reference::wire_hops(c, rt, A));
          CHECK(most >= 1);
          ++plans;
        }
  CHECK(plans > 60);
}
