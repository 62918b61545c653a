// The spec's cost claims, proved by the compiler: this file builds only if every one holds.
#include "relay/check/verify.hpp"
#include "relay/cost/link_cost.hpp"

namespace {
using namespace relay;
using C = collective;

template <C c, int A, route r = route::relay, mode m = mode::fused>
constexpr ratio beta = beta_cost(schedule_v<c, A, 8, m, r>, mi300x);
template <C c, int A, route r = route::relay, int permille = 0>
constexpr ratio ceil = ceiling(schedule_v<c, A, 8, mode::fused, r, permille>, mi300x);

// A=2, all four collectives: old three-step 3n/7 (2.33x), new two-step n/4 (4.0x).
static_assert(beta<C::allreduce, 2, route::legacy> == ratio{3, 7});
static_assert(beta<C::reduce_scatter, 2, route::legacy> == ratio{3, 7});
static_assert(beta<C::all_gather, 2, route::legacy> == ratio{3, 7});
static_assert(beta<C::all_to_all, 2, route::legacy> == ratio{3, 7});
static_assert(ceil<C::allreduce, 2, route::legacy> == ratio{7, 3});
static_assert(beta<C::allreduce, 2> == ratio{1, 4});
static_assert(beta<C::reduce_scatter, 2> == ratio{1, 4});
static_assert(beta<C::all_gather, 2> == ratio{1, 4});
static_assert(beta<C::all_to_all, 2> == ratio{1, 4});
static_assert(ceil<C::allreduce, 2> == 4 && ceil<C::reduce_scatter, 2> == 4);
static_assert(ceil<C::all_gather, 2> == 4 && ceil<C::all_to_all, 2> == 4);
static_assert(beta<C::all_gather, 2, route::relay, mode::single> == ratio{1, 4});

// A=2 fused: every link direction carries exactly one chunk (n/8) in each of the two steps.
constexpr bool one_chunk_per_link_per_step(const schedule_view& s) {
  for (int step = 1; step <= 2; ++step)
    for (int a = 0; a < 8; ++a)
      for (int b = 0; b < 8; ++b)
        if (link_load(s, step, a, b) != (a == b ? ratio{0} : ratio{1, 8})) return false;
  return true;
}
static_assert(one_chunk_per_link_per_step(schedule_v<C::allreduce, 2, 8>));
static_assert(one_chunk_per_link_per_step(schedule_v<C::reduce_scatter, 2, 8>));
static_assert(one_chunk_per_link_per_step(schedule_v<C::all_gather, 2, 8>));
static_assert(one_chunk_per_link_per_step(schedule_v<C::all_to_all, 2, 8>));

// A=4 allreduce: 780 permille gives 1.28x, 500 permille 2.0x.
static_assert(ceil<C::allreduce, 4, route::relay, 780> == ratio{50, 39});
static_assert(ceil<C::allreduce, 4, route::relay, 500> == 2);
// A=4 reduce-scatter and all-gather: 2.0x; reduce-scatter helper scratch A*(A-1) chunks.
static_assert(ceil<C::reduce_scatter, 4> == 2 && ceil<C::all_gather, 4> == 2);
static_assert(scratch_elements(schedule_v<C::reduce_scatter, 4, 8>.header, false, 1024000) ==
              1536000);  // 12 chunks of 128000 = 1.5x recvCount
// bf16 A=4 fused reduce-scatter at N=8 (c = n/8), partial sums in fp32, worked by
// hand: step 1 sends (A-1)c = 3n/8 per cross link (slices) and d1 = 3c per intra link; step 2
// returns one partial of c per cross link at 4/2 the element width, 2c = n/4, beside d2 = c.
// 3n/8 + n/4 = 5n/8 (the ceiling 8/5 instead of 2); 16-bit partials keep n/2.
constexpr auto& rs4 = schedule_v<C::reduce_scatter, 4, 8>;
static_assert(widths_of(dtype::bfloat16) == element_widths{ratio{2}});
static_assert(step_beta(rs4, mi300x, 1, widths_of(dtype::bfloat16)) == ratio{3, 8});
static_assert(step_beta(rs4, mi300x, 2, widths_of(dtype::bfloat16)) == ratio{1, 4});
static_assert(link_load(rs4, 2, 4, 0, widths_of(dtype::bfloat16)) == ratio{1, 4});  // h_0 -> a_0
static_assert(link_load(rs4, 2, 0, 1, widths_of(dtype::bfloat16)) == ratio{1, 8});  // d2
static_assert(beta_cost(rs4, mi300x, dtype::bfloat16) == ratio{5, 8});
static_assert(beta_cost(rs4, mi300x, dtype::float16) == ratio{5, 8});
static_assert(beta_cost(rs4, mi300x, dtype::bfloat16, precision::native_partials) == ratio{1, 2});
static_assert(beta_cost(rs4, mi300x, dtype::float32) == ratio{1, 2});
static_assert(ceiling(rs4, mi300x, widths_of(dtype::bfloat16)) == ratio{8, 5});
// No other relay schedule at A=2 or 4 has a partial: its bf16 cost is its element cost.
static_assert(beta_cost(schedule_v<C::allreduce, 4, 8>, mi300x, dtype::bfloat16) ==
              beta_cost(schedule_v<C::allreduce, 4, 8>, mi300x));
static_assert(beta_cost(schedule_v<C::reduce_scatter, 2, 8>, mi300x, dtype::bfloat16) ==
              ratio{1, 4});

// A=4 all-to-all: pure-direct 1.0x, helper offload 5/3.
static_assert(ceil<C::all_to_all, 4, route::direct> == 1);
static_assert(ceil<C::all_to_all, 4> == ratio{5, 3});

// Relaying does not pay on a switched fabric.
static_assert(beta_cost(schedule_v<C::all_gather, 2, 8>, h200_nvswitch) >
              beta_cost(schedule_v<C::all_gather, 2, 8, mode::fused, route::direct>,
                        h200_nvswitch));
}  // namespace

namespace {
// A pipelined single group of A=2 at depth 4: 5 steps of n/29, beyond the spec's n/4.
constexpr auto& pipelined4 =
    relay::schedule_for<relay::schedule_spec{.coll = relay::collective::all_to_all,
                                             .active = 2,
                                             .ranks = 8,
                                             .mode = relay::mode::single,
                                             .route = relay::route::pipelined,
                                             .tiles = 4}>;
static_assert(relay::beta_cost(pipelined4, relay::mi300x) == relay::ratio{5, 29});
static_assert(relay::verify(pipelined4).ok());
}  // namespace

namespace {
using namespace relay;
using C = collective;
// Pipelined single groups of A=4 on N=8, H = 4 helpers, T tiles, one quantum c.
template <C c, int T, int A = 4, int N = 8>
constexpr const auto& piped = schedule_for<schedule_spec{.coll = c,
                                                         .active = A,
                                                         .ranks = N,
                                                         .mode = mode::single,
                                                         .route = route::pipelined,
                                                         .tiles = T}>;
template <C c, int T, int A = 4, int N = 8>
constexpr ratio piped_beta = beta_cost(piped<c, T, A, N>, mesh(N, 1e9));

// All-gather and reduce-scatter: n = T*H tile chunks + a direct piece of 1 chunk (all-gather's
// step 1 / reduce-scatter's step T+1, whose relay links carry one chunk) + T direct pieces of
// A-1 = 3 chunks, so n = (4T + 1 + 3T)c = (7T+1)c; each step costs 3c but that one, c, so the
// cost is (3T+1)c = (3T+1)n/(7T+1):
//   T=2: n = 15c, 7c  = 7n/15    (target 3n/7 x 3/2 = 9n/14)
//   T=4: n = 29c, 13c = 13n/29   (target 3n/7 x 5/4 = 15n/28)
//   T=8: n = 57c, 25c = 25n/57   (target 3n/7 x 9/8 = 27n/56)
static_assert(piped_beta<C::all_gather, 2> == ratio{7, 15});
static_assert(piped_beta<C::all_gather, 4> == ratio{13, 29});
static_assert(piped_beta<C::all_gather, 8> == ratio{25, 57});
static_assert(piped_beta<C::reduce_scatter, 2> == ratio{7, 15});
static_assert(piped_beta<C::reduce_scatter, 4> == ratio{13, 29});
static_assert(piped_beta<C::reduce_scatter, 8> == ratio{25, 57});
static_assert(ratio{13, 29} < ratio{15, 28} && ratio{25, 57} < ratio{27, 56});
static_assert(ratio{7, 15} < ratio{9, 14} && ratio{25, 57} > ratio{3, 7});  // above the bound
// Reduce-scatter, bf16 with fp32 partials: a partial of c costs 2c on the return hop, under the
// 3c of steps 2..T but c more than the direct piece in step T+1: (3T+2)c, 14n/29 at T=4.
static_assert(beta_cost(piped<C::reduce_scatter, 4>, mi300x, dtype::bfloat16) == ratio{14, 29});
static_assert(beta_cost(piped<C::reduce_scatter, 2>, mi300x, dtype::bfloat16) == ratio{8, 15});
static_assert(beta_cost(piped<C::reduce_scatter, 8>, mi300x, dtype::bfloat16) == ratio{26, 57});
// Ceiling against direct's n: 29/13 = 2.23x at T=4.
static_assert(ceiling(piped<C::all_gather, 4>, mi300x) == ratio{29, 13});

// All-to-all: every segment has T*H tile chunks and T+1 direct pieces of 3 chunks, and every
// step costs 3c (step 1's scatter and step T+1's forward carry 3c too): n = (4T + 3T + 3)c =
// (7T+3)c, cost 3(T+1)c:
//   T=2: 9n/17, T=4: 15n/31, T=8: 27n/59 (targets 9n/14, 15n/28, 27n/56).
static_assert(piped_beta<C::all_to_all, 2> == ratio{9, 17});
static_assert(piped_beta<C::all_to_all, 4> == ratio{15, 31});
static_assert(piped_beta<C::all_to_all, 8> == ratio{27, 59});

// Allreduce, helper-reduce then broadcast, pipelined: T tiles of H chunks of 2c, T direct blocks
// of A pieces of c, and two exchange pieces of c, so n = (8T + 4T + 2)c = (12T+2)c; every step
// costs 2c on every active link: 2(T+1)c = (T+1)n/(6T+1):
//   T=2: n = 26c, 6c = 3n/13    (target n/6 x 3/2 = n/4)
//   T=4: n = 50c, 10c = n/5     (target n/6 x 5/4 = 5n/24)
//   T=8: n = 98c, 18c = 9n/49   (target n/6 x 9/8 = 3n/16)
static_assert(piped_beta<C::allreduce, 2> == ratio{3, 13});
static_assert(piped_beta<C::allreduce, 4> == ratio{1, 5});
static_assert(piped_beta<C::allreduce, 8> == ratio{9, 49});
static_assert(ratio{3, 13} < ratio{1, 4} && ratio{1, 5} < ratio{5, 24} &&
              ratio{9, 49} < ratio{3, 16});
// No partial sums: its bf16 cost is its element cost; ceiling against direct's n/2: 5/2 at T=4.
static_assert(beta_cost(piped<C::allreduce, 4>, mi300x, dtype::bfloat16) == ratio{1, 5});
static_assert(ceiling(piped<C::allreduce, 4>, mi300x) == ratio{5, 2});

// A=8 on N=16 (H = 8), depth 4: all-gather n = (15T+1)c, cost (7T+1)c = 29n/61 (bound 7n/15);
// all-to-all n = (15T+7)c, cost 7(T+1)c = 35n/67; allreduce n = (16T+8T+2)c = 98c, cost 10c =
// 5n/49 (limit n/(N - A/2) = n/12).
static_assert(piped_beta<C::all_gather, 4, 8, 16> == ratio{29, 61});
static_assert(piped_beta<C::reduce_scatter, 4, 8, 16> == ratio{29, 61});
static_assert(piped_beta<C::all_to_all, 4, 8, 16> == ratio{35, 67});
static_assert(piped_beta<C::allreduce, 4, 8, 16> == ratio{5, 49});

// One walk a step (walk_step) gives alpha_beta_seconds its three terms; they hold at compile time.
// Its links agree with link_loads, step by step (partials of rs4 at fp32 width included).
constexpr bool walk_matches_link_loads(const schedule_view& s, const element_widths& w) {
  for (int step = 1; step <= s.header->steps; ++step)
    if (walk_step(s, step, w).links != link_loads(s, step, w)) return false;
  return true;
}
static_assert(walk_matches_link_loads(rs4, widths_of(dtype::bfloat16)));
static_assert(walk_matches_link_loads(piped<C::allreduce, 4>, {}));
// Direct reduce-scatter A=2 N=4 single (tests/unit/cost/test_link_cost.cpp works it out): each
// active sends its partner n (copies 2n on each device) and reduces output = input + scratch
// (3n), 2 operations a rank; with links_only's memory the 2 ms link alone, bar its 1e-18 s a
// byte of memory.
constexpr auto& rs2_direct = schedule_v<C::reduce_scatter, 2, 4, mode::single, route::direct>;
static_assert(step_memory(rs2_direct, mesh(4, 1e9, 0.0), 1) == memory_loads{ratio{2}, ratio{3}});
static_assert(max_ops_per_rank(rs2_direct, 1) == 2);
// The four ranks on one device divided among them: each active's own traffic at a quarter of
// the memory's rate, four times its loads.
constexpr topology rs2_divided = [] {
  topology t = mesh(4, 1e9, 0.0);
  t.device.fill(0);
  t.divided_devices = true;
  return t;
}();
static_assert(step_memory(rs2_direct, rs2_divided, 1) == memory_loads{ratio{8}, ratio{12}});
constexpr double rs2_seconds =
    alpha_beta_seconds(rs2_direct, links_only(mesh(4, 1e9, 0.0)), 1'000'000, 2);
static_assert(rs2_seconds > 2e-3 && rs2_seconds < 2e-3 + 1e-9);
}  // namespace
