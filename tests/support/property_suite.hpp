// A randomized property suite, written once for every executor: random collective, A, N, mode,
// route, dtype, operator, in/out of place, per-group counts (0, 1, odd, primes, around chunk
// boundaries, large) and group layouts, each checked against the naive reference. Buffers are
// poisoned before the run and framed by canary bytes; inputs must come back untouched out of
// place. Every case carries its seed, and describe() prints everything needed to replay it.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "relay/api/collectives.hpp"
#include "relay/check/reference.hpp"
#include "relay/check/wire_reference.hpp"
#include "support/exact_sums.hpp"

namespace relay::testing {

struct property_case {
  collective coll = collective::allreduce;
  int active = 2, ranks = 8;
  relay::mode mode = mode::fused;
  relay::route route = route::relay;
  dtype type = dtype::float32;
  reduce_op op = reduce_op::sum;
  bool in_place = false;
  std::int64_t alignment = 128;
  int tiles = 0;
  std::vector<std::vector<int>> groups;
  std::vector<std::int64_t> counts;
  std::uint64_t seed = 0;  // the data's seed (and the case's, when drawn by random_case)
  relay::precision precision = precision::fp32_partials;
  // fp16/bf16 reductions: inputs from support/exact_sums.hpp, every output checked bit for bit
  // against the exact sum (instead of random data within a rounding bound).
  bool exact_sums = false;
  bool bound_only = false;  // exact-sum data, checked against the precision's bound instead
  // An fp8 wire, forced at every count (wire_threshold 0), checked against the fp8
  // bound (check/wire_reference.hpp) with data of kind `wire_data` (fp8_data).
  wire_format wire = wire_format::native;
  int wire_data = 0;

  std::string describe() const {
    std::string s = std::string(name(coll)) + " A=" + std::to_string(active) +
                    " N=" + std::to_string(ranks) + " " + std::string(name(mode)) + " " +
                    std::string(name(route)) + (tiles ? " tiles=" + std::to_string(tiles) : "") +
                    " " + std::string(name(type)) + " " + std::string(name(op)) +
                    (in_place ? " in-place" : " out-of-place") +
                    " alignment=" + std::to_string(alignment) + " counts=";
    for (std::size_t g = 0; g < counts.size(); ++g)
      s.append(g ? "," : "").append(std::to_string(counts[g]));
    s += " groups=";
    for (std::size_t g = 0; g < groups.size(); ++g) {
      s += g ? "|" : "";
      for (std::size_t k = 0; k < groups[g].size(); ++k)
        s.append(k ? "," : "").append(std::to_string(groups[g][k]));
    }
    return s + " seed=" + std::to_string(seed) + " " + std::string(name(precision)) +
           (exact_sums ? " exact-sums" : "") + (bound_only ? " (bound only)" : "") +
           (wire != wire_format::native
                ? " wire=" + std::string(name(wire)) + " data=" + std::to_string(wire_data)
                : "");
  }
};

struct property_result {
  bool ok = true;
  std::string failure;  // empty when ok
};

// A count that exercises one branch of the chunking rules.
inline std::int64_t random_count(std::mt19937_64& rng, const property_case& c) {
  constexpr std::int64_t primes[] = {2, 3, 5, 7, 13, 127, 131, 1021, 4093, 65521};
  const std::int64_t a = c.alignment, N = c.ranks;
  std::uniform_int_distribution<int> pick(0, 99);
  const int p = pick(rng);
  if (p < 6) return 0;
  if (p < 12) return 1;
  if (p < 27) return 2 * std::uniform_int_distribution<std::int64_t>(0, 600)(rng) + 1;  // odd
  if (p < 37) return primes[std::uniform_int_distribution<int>(0, 9)(rng)];
  if (p < 80) {  // just below, at and above one aligned chunk per rank (and per relay piece)
    const std::int64_t unit = (pick(rng) % 2 ? N : N + c.active - 2) * a;
    const std::int64_t m = std::uniform_int_distribution<std::int64_t>(1, 3)(rng);
    return std::max<std::int64_t>(
        0, m * unit + std::uniform_int_distribution<std::int64_t>(-2, 2)(rng));
  }
  if (p < 99) return std::uniform_int_distribution<std::int64_t>(1, 20 * N * a)(rng);
  return std::uniform_int_distribution<std::int64_t>(100'000, 400'000)(rng);  // large
}

// How many cases a random suite runs. RELAY_PROPERTY_CASES, where set, is the host property
// suite's count (its own default is 10,000); every other suite runs the same share of its own
// `full` count, at least `least` (or `full`, where smaller). The sanitizer presets and the quick
// loop set it, so that every suite shrinks alike; unset, every suite runs its full count.
inline int property_cases(int full, int least = 20) {
  const char* v = std::getenv("RELAY_PROPERTY_CASES");
  if (v == nullptr) return full;
  const double share = std::strtod(v, nullptr) / 10'000.0;
  return std::max(static_cast<int>(full * share), std::min(least, full));
}

// A random valid case; `rng` advances, so a sequence of cases replays from its first seed.
inline property_case random_case(std::mt19937_64& rng) {
  property_case c;
  c.seed = rng();
  std::mt19937_64 r(c.seed);
  auto one_of = [&](auto... xs) {
    const std::array values{xs...};
    return values[std::uniform_int_distribution<std::size_t>(0, values.size() - 1)(r)];
  };
  c.coll = all_collectives[std::uniform_int_distribution<std::size_t>(0, 3)(r)];
  c.ranks = one_of(4, 8, 16);
  c.active = one_of(2, 4);
  if (c.active >= c.ranks) c.active = 2;
  c.mode = one_of(mode::fused, mode::single);
  c.route = one_of(route::relay, route::relay, route::relay, route::direct, route::legacy);
  if (c.route == route::legacy && c.active != 2) c.route = route::relay;
  // Any single group may pipeline (A=2 and A=4: a draw more).
  if (c.mode == mode::single && one_of(false, false, true)) {
    c.route = route::pipelined;
    c.tiles = one_of(2, 3, 4, 7);
  }
  c.type = all_dtypes[std::uniform_int_distribution<std::size_t>(0, all_dtypes.size() - 1)(r)];
  c.op = one_of(reduce_op::sum, reduce_op::avg);
  c.in_place = has_in_place(c.coll) && one_of(false, true);
  c.alignment = one_of(std::int64_t{128}, std::int64_t{128}, std::int64_t{1}, std::int64_t{16});
  // Groups: canonical, or the ranks shuffled into groups (any layout must work).
  std::vector<int> ranks(static_cast<std::size_t>(c.ranks));
  std::iota(ranks.begin(), ranks.end(), 0);
  if (one_of(false, true)) std::shuffle(ranks.begin(), ranks.end(), r);
  const int groups = c.mode == mode::fused ? c.ranks / c.active : 1;
  for (int g = 0; g < groups; ++g)
    c.groups.emplace_back(ranks.begin() + g * c.active, ranks.begin() + (g + 1) * c.active);
  for (int g = 0; g < groups; ++g)
    c.counts.push_back(random_count(r, c));
  // From the seed, not the stream: the cases drawn before precision existed stay the same.
  if ((c.seed >> 7) % 4 == 0) c.precision = precision::native_partials;
  return c;
}

// Whether random_case draws cases of a job of `ranks` (4, 8 or 16 ranks).
constexpr bool drawn_job_size(int ranks) {
  return ranks == 4 || ranks == 8 || ranks == 16;
}

// `c` made a case of a job of `ranks` that random_case does not draw (2 ranks: no helper for a
// relay): one group of every rank on the direct route, with c's collective, dtype, operator,
// alignment, placement and precision, the group's order and count drawn from c's seed.
inline property_case whole_job_case(property_case c, int ranks) {
  std::mt19937_64 r(c.seed ^ 0x9e3779b97f4a7c15ULL);
  c.ranks = ranks;
  c.active = ranks;
  c.mode = mode::single;
  c.route = route::direct;
  c.tiles = 0;
  std::vector<int> order(static_cast<std::size_t>(ranks));
  std::iota(order.begin(), order.end(), 0);
  if (r() % 2) std::shuffle(order.begin(), order.end(), r);
  c.groups.assign(1, order);
  c.counts.assign(1, random_count(r, c));
  return c;
}

// `c` made an fp8 wire case, from its seed: a floating dtype, one of the two encodings, one of
// the five data kinds (detail::fill_fp8).
inline void make_fp8(property_case& c) {
  std::mt19937_64 r(c.seed);
  c.type = std::array{dtype::float32, dtype::float16, dtype::bfloat16}[r() % 3];
  c.wire = r() % 2 ? wire_format::fp8_e4m3 : wire_format::fp8_e4m3_fnuz;
  c.wire_data = static_cast<int>(r() % 5);
}

// Every reducing collective (allreduce, reduce-scatter) x (A, N) in {2, 4} x {4, 8, 16} and
// A=8 at N=16 x fused and single x every route the spec allows (relay, direct, legacy at A=2,
// pipelined for a single group) x fp16 and bf16 x SUM and AVG, with exact-sum data
// (support/exact_sums.hpp) and partial sums stored as `p` says. Counts give every relay piece
// at least one element; groups are shuffled in every other case; a fixed seed per case.
inline std::vector<property_case> exact_sum_cases(precision p, std::uint64_t seed) {
  std::vector<property_case> cases;
  std::mt19937_64 rng(seed);
  const std::array<std::pair<int, int>, 7> shapes{
      {{2, 4}, {2, 8}, {2, 16}, {4, 8}, {4, 16}, {8, 16}, {2, 3}}};
  for (collective coll : {collective::allreduce, collective::reduce_scatter})
    for (auto [A, N] : shapes)
      for (mode m : {mode::fused, mode::single})
        for (route rt : {route::relay, route::direct, route::legacy, route::pipelined})
          for (dtype t : {dtype::float16, dtype::bfloat16})
            for (reduce_op op : {reduce_op::sum, reduce_op::avg}) {
              property_case c;
              c.coll = coll, c.active = A, c.ranks = N, c.mode = m, c.route = rt, c.type = t;
              c.op = op;
              c.tiles = rt == route::pipelined ? 3 : 0;
              c.precision = p;
              c.exact_sums = true;
              const schedule_spec spec{coll, A, N, m, rt, 0, c.tiles};
              if (spec_error(spec) != nullptr) continue;
              c.seed = rng();
              std::mt19937_64 r(c.seed);
              c.in_place = r() % 2 == 0;
              c.alignment = std::array<std::int64_t, 3>{1, 16, 128}[r() % 3];
              std::vector<int> ranks(static_cast<std::size_t>(N));
              std::iota(ranks.begin(), ranks.end(), 0);
              if (cases.size() % 2) std::shuffle(ranks.begin(), ranks.end(), r);
              const int groups = m == mode::fused ? N / A : 1;
              for (int g = 0; g < groups; ++g) {
                c.groups.emplace_back(ranks.begin() + g * A, ranks.begin() + (g + 1) * A);
                // At least one aligned chunk per relay piece (pipelined: per tile), plus a rest.
                const std::int64_t unit = (N + A) * 4 * c.alignment;
                c.counts.push_back(unit * static_cast<std::int64_t>(1 + r() % 3) +
                                   static_cast<std::int64_t>(r() % 7));
              }
              cases.push_back(c);
            }
  return cases;
}

namespace detail {

inline constexpr std::size_t canary = 64;
inline constexpr std::byte canary_byte{0xC3};
inline constexpr std::byte poison_byte{0xA5};

template <class T>
void fill_random(std::vector<std::byte>& bytes, std::mt19937_64& rng) {
  const std::size_t n = bytes.size() / sizeof(T);
  for (std::size_t i = 0; i < n; ++i) {
    T x{};
    if constexpr (std::is_integral_v<T>) {
      x = static_cast<T>(rng());  // every bit pattern: sums wrap
    } else {
      // Nonzero values in [-1, 1], exactly representable in T.
      const float v = std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng);
      if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>)
        x = T::from_float(v == 0.0f ? 0.5f : v);
      else
        x = static_cast<T>(v == 0.0f ? 0.5f : v);
    }
    std::memcpy(bytes.data() + i * sizeof(T), &x, sizeof(T));
  }
}

// fp8 wire data (property_case::wire_data), exactly representable in T:
//   0 uniform in [-1, 1]; 1 a wide dynamic range in every block (exponents over most of the
//   type's range, sums of 8 still finite); 2 the type's subnormals among its smallest normals;
//   3 uniform with NaN, +Inf and -Inf at 2% of the elements each; 4 magnitudes near the type's
//   largest (divided by 2A where the collective reduces, so sums stay finite).
template <class T>
void fill_fp8(std::vector<std::byte>& bytes, std::mt19937_64& rng, int kind, int reduce_by) {
  const bool half = std::is_same_v<T, float16>, brain = std::is_same_v<T, bfloat16>;
  // Exponent ranges of normal values and of subnormals, per type.
  const int min_normal = half ? -14 : -126, min_sub = half ? -24 : brain ? -133 : -149;
  const float largest = half ? 65504.0f : brain ? 0x1.fep127f : 3.4028234663852886e38f;
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f), mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> percent(0, 99), sign(0, 1);
  const std::size_t n = bytes.size() / sizeof(T);
  for (std::size_t i = 0; i < n; ++i) {
    const float s = sign(rng) ? -1.0f : 1.0f;
    float v = unit(rng);
    if (kind == 1) {
      const int hi = half ? 11 : 60, lo = half ? -24 : -60;
      v = s * std::ldexp(mant(rng), std::uniform_int_distribution<int>(lo, hi)(rng));
    } else if (kind == 2) {
      v = s *
          std::ldexp(mant(rng), std::uniform_int_distribution<int>(min_sub, min_normal + 8)(rng));
    } else if (kind == 3) {
      const int p = percent(rng);
      if (p < 2) v = std::numeric_limits<float>::quiet_NaN();
      if (p >= 2 && p < 4) v = s * std::numeric_limits<float>::infinity();
    } else if (kind == 4) {
      v = s * largest / static_cast<float>(reduce_by) * (percent(rng) < 50 ? 1.0f : mant(rng) / 2);
    }
    T x{};
    if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>)
      x = T::from_float(v);
    else
      x = static_cast<T>(v);
    std::memcpy(bytes.data() + i * sizeof(T), &x, sizeof(T));
  }
}

}  // namespace detail

// Runs one case on `ex` and checks everything the case promises.
template <executor E>
property_result run_case(E& ex, const property_case& c) {
  const auto R = static_cast<std::size_t>(c.ranks);
  const auto es = static_cast<std::size_t>(size_of(c.type));
  std::mt19937_64 rng(c.seed ^ 0x9e3779b97f4a7c15ull);
  std::vector<std::vector<std::byte>> input(R), expected_frame(R);
  std::vector<std::size_t> in_bytes(R, 0), out_bytes(R, 0), frame_bytes(R, 0), out_offset(R, 0),
      in_offset(R, 0);
  // Each active rank gets one frame: canary | buffer(s) | canary. In place, input and output
  // share it in NCCL's layout; out of place, the output follows the input.
  for (std::size_t g = 0; g < c.groups.size(); ++g)
    for (std::size_t k = 0; k < c.groups[g].size(); ++k) {
      const auto r = static_cast<std::size_t>(c.groups[g][k]);
      const std::int64_t n = c.counts[g];
      in_bytes[r] = static_cast<std::size_t>(input_elements(c.coll, c.active, n)) * es;
      out_bytes[r] = static_cast<std::size_t>(output_elements(c.coll, c.active, n)) * es;
      input[r].resize(in_bytes[r]);
      visit_dtype(c.type, [&](auto zero) { detail::fill_random<decltype(zero)>(input[r], rng); });
      if (c.in_place) {
        const in_place_offsets at = in_place_layout(c.coll, static_cast<int>(k), n);
        in_offset[r] = detail::canary + static_cast<std::size_t>(at.input) * es;
        out_offset[r] = detail::canary + static_cast<std::size_t>(at.output) * es;
      } else {
        in_offset[r] = detail::canary;
        out_offset[r] = detail::canary + in_bytes[r];
      }
      frame_bytes[r] =
          std::max(in_offset[r] + in_bytes[r], out_offset[r] + out_bytes[r]) + detail::canary;
    }
  if (c.exact_sums) fill_exact_sums(c.coll, c.type, c.groups, c.counts, input, c.seed);
  if (c.wire != wire_format::native && fp8_wire_dtype(c.type))
    for (std::size_t r = 0; r < R; ++r)
      visit_dtype(c.type, [&](auto zero) {
        using T = decltype(zero);
        if constexpr (fp8_wire_type<T>)
          detail::fill_fp8<T>(input[r], rng, c.wire_data, reduces(c.coll) ? 2 * c.active : 1);
      });
  // Host images of the frames: canaries, poison, then the inputs on top.
  std::vector<std::vector<std::byte>> frame(R);
  std::vector<void*> device(R, nullptr);
  std::vector<buffer_view> send(R), recv(R);
  property_result result;
  auto fail = [&](std::string why) {
    result.ok = false;
    result.failure = c.describe() + ": " + why;
  };
  for (std::size_t r = 0; r < R && result.ok; ++r) {
    if (frame_bytes[r] == 0) continue;
    frame[r].assign(frame_bytes[r], detail::poison_byte);
    std::fill_n(frame[r].begin(), detail::canary, detail::canary_byte);
    std::fill_n(frame[r].end() - detail::canary, detail::canary, detail::canary_byte);
    std::copy(input[r].begin(), input[r].end(),
              frame[r].begin() + static_cast<std::ptrdiff_t>(in_offset[r]));
    device[r] = ex.allocate(static_cast<int>(r), frame_bytes[r]);
    if (device[r] == nullptr) {
      fail("could not allocate " + std::to_string(frame_bytes[r]) + " bytes");
      break;
    }
    if (status s = ex.write(static_cast<int>(r), device[r], frame[r].data(), frame_bytes[r]); !s)
      fail("write: " + s.to_string());
    auto* base = static_cast<std::byte*>(device[r]);
    send[r] = {base + in_offset[r], in_bytes[r]};
    recv[r] = {base + out_offset[r], out_bytes[r]};
  }
  if (result.ok) {
    options opt;
    opt.route = c.route;
    opt.alignment = c.alignment;
    opt.tiles = c.tiles;
    opt.precision = c.precision;
    opt.wire = c.wire;
    opt.wire_threshold = 0;
    const status s = run_collective(ex, c.coll, c.groups, send, recv, c.counts, c.type, c.op, opt);
    if (!s) fail("the call failed: " + s.to_string());
  }
  std::vector<std::vector<std::byte>> output(R);
  for (std::size_t r = 0; r < R && result.ok; ++r) {
    if (frame_bytes[r] == 0) continue;
    std::vector<std::byte> back(frame_bytes[r]);
    if (status s = ex.read(static_cast<int>(r), back.data(), device[r], frame_bytes[r]); !s) {
      fail("read: " + s.to_string());
      break;
    }
    const bool front_ok = std::all_of(back.begin(), back.begin() + detail::canary,
                                      [](std::byte b) { return b == detail::canary_byte; });
    const bool back_ok = std::all_of(back.end() - detail::canary, back.end(),
                                     [](std::byte b) { return b == detail::canary_byte; });
    if (!front_ok || !back_ok) fail("a canary byte around rank " + std::to_string(r) + " changed");
    const auto in_at = back.begin() + static_cast<std::ptrdiff_t>(in_offset[r]);
    if (!c.in_place && !std::equal(input[r].begin(), input[r].end(), in_at))
      fail("the input of rank " + std::to_string(r) + " changed out of place");
    const auto out_at = back.begin() + static_cast<std::ptrdiff_t>(out_offset[r]);
    output[r].assign(out_at, out_at + static_cast<std::ptrdiff_t>(out_bytes[r]));
  }
  const bool exact = c.exact_sums && !c.bound_only && reduces(c.coll) &&
                     (c.type == dtype::float16 || c.type == dtype::bfloat16);
  if (result.ok && c.wire != wire_format::native) {
    const reference::wire_check m = reference::check_outputs_fp8(
        {c.coll, c.type, c.op, c.groups, c.counts, input, output}, fp8_format_of(c.wire),
        reference::wire_hops(c.coll, c.route, c.active));
    if (m.wrong != 0)
      fail(std::to_string(m.wrong) + " elements outside the fp8 bound; first: " + m.first);
  } else if (result.ok) {
    const reference::mismatch_report m = reference::check_outputs(
        {c.coll, c.type, c.op, c.groups, c.counts, input, output}, c.precision, exact);
    if (m.wrong > 0) fail(std::to_string(m.wrong) + " wrong elements; first: " + m.first);
  }
  for (std::size_t r = 0; r < R; ++r)
    if (device[r] != nullptr) ex.deallocate(static_cast<int>(r), device[r]);
  return result;
}

}  // namespace relay::testing
