// The fp8 wire's bytes, proved by the compiler: this file builds only if each holds.
#include "relay/cost/link_cost.hpp"
#include "relay/gpu/fp8_desc.hpp"
#include "relay/schedule/generate.hpp"

namespace {
using namespace relay;
using C = collective;

// A code per element, zeros to a multiple of 4, and a 4-byte scale per started block of 128.
static_assert(fp8_wire_bytes(0) == 0 && fp8_wire_bytes(1) == 8 && fp8_wire_bytes(32) == 36);
static_assert(fp8_wire_bytes(127) == 132 && fp8_wire_bytes(128) == 132);
static_assert(fp8_wire_bytes(129) == 140 && fp8_wire_bytes(1000) == 1032);
// Whole blocks cost 33/32 bytes an element, as the model prices them.
static_assert(fp8_wire_bytes(std::uint64_t{1} << 30) == (std::uint64_t{1} << 30) + (1 << 25));

// The fp8 kernels' tiles (gpu/fp8_desc.hpp): 256 threads of 16-byte accesses, 4 times over, are
// 32 blocks of 128 floats (32 lanes a block) or 64 of 128 16-bit elements (16 lanes a block).
static_assert(gpu::fp8_tile_blocks(4) == 32 && gpu::fp8_tile_blocks(2) == 64);
static_assert(gpu::fp8_tile_blocks(2, 1) == 16);

// Every element that crosses a link is 33/32 bytes: per element width, 33/64 of a bf16 element
// and 33/128 of a float32 one, partial sums (fp32, 4 bytes natively) included.
static_assert(fp8_wire_widths(dtype::bfloat16).element == ratio{33, 64});
static_assert(fp8_wire_widths(dtype::bfloat16).partial == ratio{33, 64});
static_assert(fp8_wire_widths(dtype::float32).element == ratio{33, 128});

// A=2 fused allreduce on mi300x: n/8 per link direction in each of 2 steps, n/4 natively.
// On fp8 each chunk is n/8 * 33/32 bytes: in bf16 element widths 33n/512 per step, 33n/256 in
// all (1.94x fewer link bytes), in float32 widths 33n/512 in all (3.88x).
constexpr auto& ar_2_8 = schedule_v<C::allreduce, 2, 8>;
static_assert(beta_cost(ar_2_8, mi300x, fp8_wire_widths(dtype::bfloat16)) == ratio{33, 256});
static_assert(beta_cost(ar_2_8, mi300x, fp8_wire_widths(dtype::float32)) == ratio{33, 512});
static_assert(step_beta(ar_2_8, mi300x, 1, fp8_wire_widths(dtype::bfloat16)) == ratio{33, 512});

// A=4 fused reduce-scatter, bf16: natively 5n/8 (step 2 returns a partial of c = n/8 as fp32, 2
// element widths). On fp8 the partial is 33/32 bytes an element like the rest: step 1
// (A-1)c = 3n/8 and step 2 c = n/8, both at 33/64: 33n/128.
constexpr auto& rs_4_8 = schedule_v<C::reduce_scatter, 4, 8>;
static_assert(beta_cost(rs_4_8, mi300x, dtype::bfloat16) == ratio{5, 8});
static_assert(beta_cost(rs_4_8, mi300x, fp8_wire_widths(dtype::bfloat16)) == ratio{33, 128});

// The calls without widths keep pricing elements at their own width.
static_assert(beta_cost(ar_2_8, mi300x) == ratio{1, 4});
static_assert(element_widths{} == widths_of(dtype::float32));

}  // namespace
