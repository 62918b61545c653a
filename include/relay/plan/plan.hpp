// A plan: one call of a collective made concrete. Physical ranks, byte offsets, scratch sizes;
// every input validated. Executors run plans and know nothing about collectives.
//
// A plan does not hold buffer addresses, so one plan serves every call with the same groups,
// counts, dtype, operator and in-place form: executors bind the caller's buffers when they run.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "relay/core/dtype.hpp"
#include "relay/core/fp8_block.hpp"
#include "relay/core/reduction.hpp"
#include "relay/core/wire.hpp"
#include "relay/schedule/schedule.hpp"

namespace relay {

// A plan's operations are the library's one operation type (schedule/schedule.hpp) with offsets
// in bytes and counts in elements:
//   - an operand's `offset` is in bytes from the start of that rank's input, output or scratch
//     area (the schedule's partial areas lie in the scratch area too). In place, every operand of
//     an active rank names one user buffer (input for allreduce and reduce-scatter, output for
//     all-gather), so equal operands mean equal addresses;
//   - a copy (one source, `count` elements) is issued by its source's rank, a reduction (1..16
//     sources on the destination's rank) by that rank; `finalize`: divide by the plan's divisor;
//   - `partial_mask` marks the operands stored as accumulators: a copy has both bits or neither
//     and moves count * plan::partial_size bytes.
using plan_operand = basic_operand<std::uint64_t>;
using plan_op = basic_operation<std::uint64_t>;
// One phase of one step: plan::ops [first, first + size).
using plan_phase = phase_range;

// What a plan puts on the wire, and why. Every rank derives it from the call's
// arguments alone (make_plan), so every rank of a call takes the same one.
struct wire_choice {
  wire_format requested = wire_format::native;  // as asked; wire_format::fp8 made concrete
  wire_format taken = wire_format::native;      // native, fp8_e4m3 or fp8_e4m3_fnuz
  std::uint64_t bytes = 0;  // what the threshold is compared with: the largest count * dtype size
  // fp8 pays from this many bytes on (the cost model's, or the caller's); 0 where native was
  // asked, UINT64_MAX where fp8 never pays.
  std::uint64_t threshold_bytes = 0;
  friend constexpr bool operator==(const wire_choice&, const wire_choice&) = default;
};

// One line for a person: "wire: fp8_e4m3_fnuz", "wire: native (fp8_e4m3_fnuz asked; below the
// threshold of 9311847 bytes at 65536)", "wire: native".
inline std::string describe(const wire_choice& w) {
  std::string s = "wire: " + std::string(name(w.taken));
  if (w.taken != w.requested) {
    s += " (" + std::string(name(w.requested)) + " asked; ";
    s += w.threshold_bytes == std::numeric_limits<std::uint64_t>::max()
             ? std::string("the model says it never pays for this call)")
             : "below the threshold of " + std::to_string(w.threshold_bytes) + " bytes at " +
                   std::to_string(w.bytes) + ")";
  }
  return s;
}

// Where one fp8 transfer's encoded bytes (fp8_wire_bytes(count): the codes, padded to a multiple
// of 4, then a 4-byte scale per block) lie: in the sender's scratch, where it quantizes them, and
// in the receiver's, where they arrive and it dequantizes them. Byte offsets into each rank's
// scratch area.
struct wire_slot {
  std::uint64_t send = 0, recv = 0;
  friend constexpr bool operator==(const wire_slot&, const wire_slot&) = default;
};

struct plan {
  schedule_spec spec{};
  dtype type = dtype::float32;
  reduce_op op = reduce_op::sum;
  bool in_place = false;
  std::int64_t alignment = 128;
  int divisor = 1;  // what a finalizing reduction divides by: A for AVG, 1 for SUM
  relay::precision precision = precision::fp32_partials;
  int partial_size = 4;  // bytes of one partial-sum element: relay::partial_size(type, precision)

  std::vector<std::vector<int>> groups;  // physical ranks, group by group, in active order
  std::vector<std::int64_t> counts;      // per group
  std::vector<plan_phase> phases;
  std::vector<plan_op> ops;
  std::vector<plan_operand> sources;
  // Per physical rank: bytes of input and output it must provide (0 where it is no group's
  // active rank), and bytes of scratch the executor provides.
  std::vector<std::uint64_t> input_bytes, output_bytes, scratch_bytes;
  // The wire. Where it is fp8, every copy between two ranks (crosses_wire) travels
  // quantized through the wire slot of the same index (one per op; empty on a native wire).
  wire_choice wire{};
  std::vector<wire_slot> wire_slots;

  // Equal plans issue the same operations on the same memory: what lets an executor reuse what
  // it prepared for one (exec/gpu/program_cache.hpp).
  friend bool operator==(const plan&, const plan&) = default;

  int ranks() const { return spec.ranks; }
  int element_size() const { return size_of(type); }
  // Bytes per element of an operation's destination, and of its source s.
  int dst_width(const plan_op& o) const {
    return (o.partial_mask & partial_dst_bit) != 0 ? partial_size : element_size();
  }
  int source_width(const plan_op& o, std::size_t s) const {
    return ((o.partial_mask >> s) & 1u) != 0 ? partial_size : element_size();
  }
  std::span<const plan_operand> sources_of(const plan_op& o) const {
    return std::span<const plan_operand>(sources).subspan(o.first_source, o.source_count);
  }
  std::span<const plan_op> ops_of(const plan_phase& p) const {
    return std::span<const plan_op>(ops).subspan(p.first, p.size);
  }
  // Whether `o` travels as fp8: a copy from one rank to another on an fp8 wire.
  bool crosses_wire(const plan_op& o) const {
    return wire.taken != wire_format::native && o.phase == phase::transfer &&
           sources[o.first_source].rank != o.dst.rank;
  }
  // Bytes `o` puts on the link between its ranks: none for a local copy or a reduction;
  // fp8_wire_bytes(count) (a code each, a 4-byte scale per block) on an fp8 wire; natively its
  // count at its width.
  std::uint64_t link_bytes(const plan_op& o) const {
    if (o.phase != phase::transfer || sources[o.first_source].rank == o.dst.rank) return 0;
    return crosses_wire(o) ? fp8_wire_bytes(o.count)
                           : o.count * static_cast<std::uint64_t>(dst_width(o));
  }
  // Appends `o` with its sources (it names them in order: first_source is set here), in a new
  // phase where its step or phase differs from the last operation's. Every plan is built through
  // it, so `phases` always covers `ops` in (step, phase) order.
  void append(plan_op o, std::span<const plan_operand> srcs) {
    o.first_source = static_cast<std::uint32_t>(sources.size());
    o.source_count = static_cast<std::uint8_t>(srcs.size());
    sources.insert(sources.end(), srcs.begin(), srcs.end());
    if (phases.empty() || phases.back().step != o.step || phases.back().phase != o.phase)
      phases.push_back({o.step, o.phase, static_cast<std::uint32_t>(ops.size()), 0});
    ++phases.back().size;
    ops.push_back(o);
  }
};

// Bytes per link direction over the whole call, [from * ranks + to]: what the cost model's link
// loads predict for this call's counts (the fp8 scales rounded up per transfer).
inline std::vector<std::uint64_t> link_bytes(const plan& p) {
  const auto R = static_cast<std::size_t>(p.ranks());
  std::vector<std::uint64_t> bytes(R * R, 0);
  for (const plan_op& o : p.ops)
    bytes[p.sources[o.first_source].rank * R + o.dst.rank] += p.link_bytes(o);
  return bytes;
}

// The largest count of one group a plan takes. Offsets are affine in n with coefficients up to
// about A*N (64 * 64), times 16 bytes at most per element and partial: below this bound every
// byte offset, and every product of a count, an active index and an element size, fits
// std::int64_t.
inline constexpr std::int64_t max_plan_count =
    std::numeric_limits<std::int64_t>::max() / (64 * 64 * 8 * 16);

// A caller's buffer: device or host memory, by executor.
struct buffer_view {
  void* data = nullptr;
  std::size_t bytes = 0;
  friend bool operator==(const buffer_view&, const buffer_view&) = default;
};
// One buffer per rank, rank r's at [r]: what the collective calls and executors take.
using buffer_views = std::span<const buffer_view>;

}  // namespace relay
