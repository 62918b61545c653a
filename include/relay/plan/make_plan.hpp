// From a caller's request to a plan: validation (once, for every executor), the schedule made
// concrete at the caller's counts, canonical ranks mapped onto the caller's groups, offsets in
// bytes, scratch laid out per rank.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "relay/core/status.hpp"
#include "relay/cost/route.hpp"
#include "relay/cost/wire.hpp"
#include "relay/plan/plan.hpp"
#include "relay/schedule/evaluate.hpp"
#include "relay/schedule/generate.hpp"

namespace relay {

struct plan_request {
  collective coll = collective::allreduce;
  relay::mode mode = mode::fused;
  // route::automatic: the one the cost model predicts fastest on `machine` for this call
  // (with_chosen_route); `tiles` is then chosen too.
  relay::route route = route::relay;
  int permille = 0;
  int tiles = 0;  // pipeline depth of the pipelined route
  int ranks = 8;
  // The active ranks of each group, in active order. Fused: N/A groups covering every rank once.
  // Single: one group; the ranks outside it help.
  std::vector<std::vector<int>> groups;
  std::vector<std::int64_t> counts;  // per group: count, recvCount, sendCount or segmentCount
  dtype type = dtype::float32;
  reduce_op op = reduce_op::sum;
  bool in_place = false;
  std::int64_t alignment = default_alignment;  // elements; chunk sizes are multiples of it
  relay::precision precision = precision::fp32_partials;  // how partial sums are stored
  const topology* machine = nullptr;  // what route::automatic prices; nullptr: mi300x
  // How data crosses links (core/wire.hpp): fp8 where the call's largest group holds at least
  // `wire_threshold` bytes (-1: the cost model's threshold on `machine`, fp8_threshold_bytes),
  // natively below; plan::wire says which and why.
  wire_format wire = wire_format::native;
  std::int64_t wire_threshold = -1;
};

// A request for schedule `s` (collective, mode, route, permille, tiles, N) over `groups`, one
// count per group; dtype, operator, in-place form, alignment and precision are the defaults until
// the caller sets them.
inline plan_request request_for(const schedule_spec& s, std::vector<std::vector<int>> groups,
                                std::vector<std::int64_t> counts) {
  plan_request r;
  r.coll = s.coll;
  r.mode = s.mode;
  r.route = s.route;
  r.permille = s.permille;
  r.tiles = s.tiles;
  r.ranks = s.ranks;
  r.groups = std::move(groups);
  r.counts = std::move(counts);
  return r;
}

// The request make_plan made `p` from (with the route it took): make_plan(request_of(p)) == p.
inline plan_request request_of(const plan& p) {
  plan_request r = request_for(p.spec, p.groups, p.counts);
  r.type = p.type;
  r.op = p.op;
  r.in_place = p.in_place;
  r.alignment = p.alignment;
  r.precision = p.precision;
  r.wire = p.wire.requested;
  // The threshold the plan was decided with, as a number: the same decision again.
  if (p.wire.requested != wire_format::native)
    r.wire_threshold = p.wire.threshold_bytes == fp8_never
                           ? std::numeric_limits<std::int64_t>::max()
                           : static_cast<std::int64_t>(p.wire.threshold_bytes);
  return r;
}

// `r` with route::automatic made concrete: the spec choose_schedule predicts fastest on
// r.machine (mi300x where null) at the largest of the counts (the group that finishes last),
// with r's element and partial-sum widths. That is direct or relay (relay with r.permille, for
// an allreduce), and for a single group also the pipelined route at its best depth; A = N
// is direct, the only route there. A request the relay route refuses (A not a power of two, a
// permille outside an allreduce, ...) keeps route relay, so make_plan names the problem. Any
// other route: `r` as it is.
inline plan_request with_chosen_route(plan_request r) {
  if (r.route != route::automatic || r.groups.empty()) return r;
  const int A = static_cast<int>(r.groups.front().size());
  r.tiles = 0;
  if (A == r.ranks) {
    r.route = route::direct;
    return r;
  }
  r.route = route::relay;
  const schedule_spec relay_spec{r.coll, A, r.ranks, r.mode, route::relay, r.permille, 0};
  const bool known_widths =
      static_cast<unsigned>(r.type) < all_dtypes.size() &&
      (r.precision == precision::fp32_partials || r.precision == precision::native_partials);
  if (spec_error(relay_spec) != nullptr || !known_widths) return r;
  std::int64_t n = 0;
  for (const std::int64_t count : r.counts)
    n = std::max(n, count);
  const schedule_spec best = choose_schedule(relay_spec, r.machine ? *r.machine : mi300x, n,
                                             size_of(r.type), widths_of(r.type, r.precision));
  r.route = best.route;
  r.permille = best.permille;
  r.tiles = best.tiles;
  return r;
}

// Bytes from one scratch area to the next on a rank, so every area starts 256-byte aligned.
inline constexpr std::uint64_t scratch_area_alignment = 256;

namespace detail {

inline status check_request(const plan_request& r) {
  auto fail = [](errc code, std::string message) { return status{code, std::move(message)}; };
  if (r.ranks < 2 || r.ranks > max_ranks)
    return fail(errc::invalid_group,
                "the node size N must be 2..64, not " + std::to_string(r.ranks));
  if (r.groups.empty()) return fail(errc::invalid_group, "no groups were given");
  const std::size_t A = r.groups.front().size();
  std::vector<int> owner(static_cast<std::size_t>(r.ranks), -1);
  for (std::size_t g = 0; g < r.groups.size(); ++g) {
    if (r.groups[g].size() != A)
      return fail(errc::invalid_group,
                  "group " + std::to_string(g) + " has " + std::to_string(r.groups[g].size()) +
                      " ranks; every group needs the same active count A = " + std::to_string(A));
    for (int rank : r.groups[g]) {
      if (rank < 0 || rank >= r.ranks)
        return fail(errc::invalid_group, "rank " + std::to_string(rank) + " in group " +
                                             std::to_string(g) + " is outside 0.." +
                                             std::to_string(r.ranks - 1));
      int& o = owner[static_cast<std::size_t>(rank)];
      if (o == static_cast<int>(g))
        return fail(errc::invalid_group, "rank " + std::to_string(rank) +
                                             " appears twice in group " + std::to_string(g));
      if (o >= 0)
        return fail(errc::invalid_group, "rank " + std::to_string(rank) +
                                             " is active in two groups (" + std::to_string(o) +
                                             " and " + std::to_string(g) + ")");
      o = static_cast<int>(g);
    }
  }
  const schedule_spec spec{r.coll,  static_cast<int>(A), r.ranks, r.mode,
                           r.route, r.permille,          r.tiles};
  if (const char* why = spec_error(spec)) return fail(errc::invalid_schedule, why);
  if (r.mode == mode::single && r.groups.size() != 1)
    return fail(errc::invalid_group,
                "single mode takes exactly one group, not " + std::to_string(r.groups.size()));
  if (r.mode == mode::fused && r.groups.size() * A != static_cast<std::size_t>(r.ranks))
    return fail(errc::invalid_group, "fused mode needs N/A = " + std::to_string(r.ranks / A) +
                                         " groups covering every rank, not " +
                                         std::to_string(r.groups.size()));
  if (r.counts.size() != r.groups.size())
    return fail(errc::invalid_count, std::to_string(r.counts.size()) + " counts for " +
                                         std::to_string(r.groups.size()) +
                                         " groups; give one count per group");
  if (static_cast<unsigned>(r.type) >= all_dtypes.size())
    return fail(errc::unsupported, "unknown dtype " + std::to_string(static_cast<int>(r.type)));
  if (r.precision != precision::fp32_partials && r.precision != precision::native_partials)
    return fail(errc::unsupported, "unknown precision " +
                                       std::to_string(static_cast<int>(r.precision)) +
                                       " (fp32_partials or native_partials)");
  if (r.op != reduce_op::sum && r.op != reduce_op::avg)
    return fail(errc::unsupported, "unknown reduction operator " +
                                       std::to_string(static_cast<int>(r.op)) + " (sum or avg)");
  if (r.wire != wire_format::native && !is_fp8(r.wire))
    return fail(errc::unsupported, "unknown wire format " +
                                       std::to_string(static_cast<int>(r.wire)) +
                                       " (native, fp8, fp8_e4m3 or fp8_e4m3_fnuz)");
  if (is_fp8(r.wire) && !fp8_wire_dtype(r.type))
    return fail(errc::unsupported, "the fp8 wire (" + std::string(name(r.wire)) +
                                       ") takes float32, float16 or bfloat16 data, not " +
                                       std::string(name(r.type)) + "; use wire_format::native");
  if (r.wire_threshold < -1)
    return fail(errc::invalid_argument,
                "the wire threshold must be -1 (the model's) or a byte count, not " +
                    std::to_string(r.wire_threshold));
  if (r.in_place && !has_in_place(r.coll))
    return fail(errc::unsupported, "all-to-all has no in-place form (as in NCCL)");
  if (r.alignment < 1 || r.alignment > (std::int64_t{1} << 30))
    return fail(errc::invalid_argument,
                "the alignment must be 1..2^30 elements, not " + std::to_string(r.alignment));
  for (std::size_t g = 0; g < r.counts.size(); ++g)
    if (r.counts[g] < 0 || r.counts[g] > max_plan_count)
      return fail(errc::invalid_count, "count " + std::to_string(r.counts[g]) + " of group " +
                                           std::to_string(g) + " is negative or too large");
  return {};
}

// Canonical rank (the schedule's numbering) -> physical rank (the caller's).
inline std::vector<int> physical_ranks(const plan_request& r) {
  const int A = static_cast<int>(r.groups.front().size());
  std::vector<int> physical(static_cast<std::size_t>(r.ranks), -1);
  std::vector<bool> active(static_cast<std::size_t>(r.ranks), false);
  for (std::size_t g = 0; g < r.groups.size(); ++g)
    for (int j = 0; j < A; ++j) {
      const int rank = r.groups[g][static_cast<std::size_t>(j)];
      physical[g * static_cast<std::size_t>(A) + static_cast<std::size_t>(j)] = rank;
      active[static_cast<std::size_t>(rank)] = true;
    }
  // Single mode: canonical helpers A..N-1 are the remaining ranks, in increasing order.
  std::size_t next = r.groups.size() * static_cast<std::size_t>(A);
  for (int rank = 0; rank < r.ranks; ++rank)
    if (!active[static_cast<std::size_t>(rank)]) physical[next++] = rank;
  return physical;
}

// The wire `r` takes for `spec` (its route already chosen): what was asked, made concrete
// (wire_format::fp8 is the machine's encoding), where the largest group reaches the threshold.
inline wire_choice choose_wire(const plan_request& r, const schedule_spec& spec) {
  wire_choice w;
  if (r.wire == wire_format::native) return w;
  const topology& machine = r.machine ? *r.machine : mi300x;
  w.requested = r.wire == wire_format::fp8 ? wire_of(machine.fp8) : r.wire;
  std::int64_t n = 0;
  for (const std::int64_t count : r.counts)
    n = std::max(n, count);
  w.bytes = static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(size_of(r.type));
  w.threshold_bytes = r.wire_threshold >= 0
                          ? static_cast<std::uint64_t>(r.wire_threshold)
                          : fp8_threshold_bytes(spec, machine, r.type, r.precision);
  w.taken = w.bytes >= w.threshold_bytes ? w.requested : wire_format::native;
  return w;
}

// Where the encoded bytes of `p`'s fp8 transfers lie: per rank, a wire area after its other
// scratch, as large as the most it sends plus receives in one phase (phases run one after
// another, so each reuses the area); within a phase every transfer has its own slot on both
// ends, 16-byte aligned.
inline void lay_out_wire(plan& p) {
  if (p.wire.taken == wire_format::native) return;
  const auto R = static_cast<std::size_t>(p.ranks());
  p.wire_slots.assign(p.ops.size(), wire_slot{});
  std::vector<std::uint64_t> area(R, 0), used(R, 0);
  auto take = [&](std::size_t rank, std::uint64_t bytes) {
    const std::uint64_t at = used[rank];
    used[rank] += (bytes + 15) / 16 * 16;
    area[rank] = std::max(area[rank], used[rank]);
    return at;
  };
  for (const plan_phase& ph : p.phases) {
    std::fill(used.begin(), used.end(), 0);
    for (std::uint32_t i = ph.first; i < ph.first + ph.size; ++i) {
      const plan_op& o = p.ops[i];
      if (!p.crosses_wire(o)) continue;
      const std::uint64_t bytes = fp8_wire_bytes(o.count);
      p.wire_slots[i].send = take(p.sources[o.first_source].rank, bytes);
      p.wire_slots[i].recv = take(o.dst.rank, bytes);
    }
  }
  std::vector<std::uint64_t> base(R, 0);
  for (std::size_t rank = 0; rank < R; ++rank) {
    base[rank] = p.scratch_bytes[rank];  // a multiple of scratch_area_alignment already
    p.scratch_bytes[rank] +=
        (area[rank] + scratch_area_alignment - 1) / scratch_area_alignment * scratch_area_alignment;
  }
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    if (!p.crosses_wire(p.ops[i])) continue;
    p.wire_slots[i].send += base[p.sources[p.ops[i].first_source].rank];
    p.wire_slots[i].recv += base[p.ops[i].dst.rank];
  }
}

}  // namespace detail

// Builds `out` for `r`, or returns the first problem and leaves `out` as it was.
inline status make_plan(const plan_request& r, plan& out) {
  if (r.route == route::automatic && !r.groups.empty()) return make_plan(with_chosen_route(r), out);
  if (status s = detail::check_request(r); !s) return s;
  const int A = static_cast<int>(r.groups.front().size());
  const schedule_spec spec{r.coll, A, r.ranks, r.mode, r.route, r.permille, r.tiles};
  const schedule sched = *build_schedule(spec);
  const concrete_schedule concrete = evaluate(sched, r.counts, r.alignment);
  const std::vector<int> physical = detail::physical_ranks(r);
  const auto es = static_cast<std::uint64_t>(size_of(r.type));
  const auto ps = static_cast<std::uint64_t>(partial_size(r.type, r.precision));
  const auto R = static_cast<std::size_t>(r.ranks);

  plan p;
  p.spec = spec;
  p.type = r.type;
  p.op = r.op;
  p.in_place = r.in_place;
  p.alignment = r.alignment;
  p.divisor = r.op == reduce_op::avg ? A : 1;
  p.precision = r.precision;
  p.partial_size = static_cast<int>(ps);
  p.groups = r.groups;
  p.counts = r.counts;
  p.input_bytes.assign(R, 0);
  p.output_bytes.assign(R, 0);
  p.scratch_bytes.assign(R, 0);

  // Per physical rank: its home group and active index, and where each group's scratch starts.
  std::vector<int> home(R, -1), index(R, -1);
  for (std::size_t g = 0; g < r.groups.size(); ++g)
    for (int j = 0; j < A; ++j) {
      const auto rank = static_cast<std::size_t>(r.groups[g][static_cast<std::size_t>(j)]);
      home[rank] = static_cast<int>(g);
      index[rank] = j;
      const std::int64_t n = r.counts[g];
      p.input_bytes[rank] = static_cast<std::uint64_t>(input_elements(r.coll, A, n)) * es;
      p.output_bytes[rank] = static_cast<std::uint64_t>(output_elements(r.coll, A, n)) * es;
    }
  // Per rank and group: the scratch area (elements), then the partial area (ps-byte elements),
  // each starting 256-byte aligned.
  auto rounded = [](std::uint64_t bytes) {
    return (bytes + scratch_area_alignment - 1) / scratch_area_alignment * scratch_area_alignment;
  };
  std::vector<std::uint64_t> area(R * r.groups.size(), 0), partial_area(R * r.groups.size(), 0);
  for (std::size_t rank = 0; rank < R; ++rank)
    for (std::size_t g = 0; g < r.groups.size(); ++g) {
      const bool is_active = home[rank] == static_cast<int>(g);
      const auto elements = static_cast<std::uint64_t>(
          scratch_elements(sched.header, is_active, r.counts[g], r.alignment));
      const auto partials = static_cast<std::uint64_t>(
          partial_elements(sched.header, is_active, r.counts[g], r.alignment));
      area[rank * r.groups.size() + g] = p.scratch_bytes[rank];
      p.scratch_bytes[rank] += rounded(elements * es);
      partial_area[rank * r.groups.size() + g] = p.scratch_bytes[rank];
      p.scratch_bytes[rank] += rounded(partials * ps);
    }

  // In place, an active rank's input and output are one buffer: name it once (input for
  // allreduce and reduce-scatter, output for all-gather) so equal operands are equal addresses.
  auto convert = [&](const concrete_operand& o, int group) {
    const auto rank = static_cast<std::size_t>(physical[o.rank]);
    plan_operand x{static_cast<std::uint16_t>(rank), o.buf, static_cast<std::uint64_t>(o.offset)};
    const std::size_t at_area = rank * r.groups.size() + static_cast<std::size_t>(group);
    if (o.buf == buffer::scratch) {
      x.offset = area[at_area] + x.offset * es;
      return x;
    }
    if (o.buf == buffer::partial) {  // executors see scratch bytes; partial_mask says how wide
      x.buf = buffer::scratch;
      x.offset = partial_area[at_area] + x.offset * ps;
      return x;
    }
    if (r.in_place) {
      const in_place_offsets at =
          in_place_layout(r.coll, index[rank], r.counts[static_cast<std::size_t>(group)]);
      const buffer user = r.coll == collective::all_gather ? buffer::output : buffer::input;
      if (x.buf != user)
        x.offset += static_cast<std::uint64_t>(x.buf == buffer::input ? at.input : at.output);
      x.buf = user;
    }
    x.offset *= es;
    return x;
  };

  const bool wide = ps != es;  // otherwise a partial is stored exactly like an element
  std::vector<plan_operand> srcs;
  for (const concrete_op& op : concrete.ops) {
    plan_op q{.step = op.step,
              .phase = op.phase,
              .dst = convert(op.dst, op.group),
              .count = static_cast<std::uint64_t>(op.count),
              .finalize = op.finalize,
              .group = op.group};
    if (wide && op.dst.buf == buffer::partial) q.partial_mask |= partial_dst_bit;
    srcs.clear();
    std::uint32_t bit = 1;
    for (const concrete_operand& src : concrete.sources_of(op)) {
      if (wide && src.buf == buffer::partial) q.partial_mask |= bit;
      bit <<= 1;
      srcs.push_back(convert(src, op.group));
    }
    if (op.phase == phase::transfer && srcs.front() == q.dst) continue;  // in place: nothing to do
    p.append(q, srcs);
  }
  p.wire = detail::choose_wire(r, spec);
  detail::lay_out_wire(p);
  out = std::move(p);
  return {};
}

}  // namespace relay
