// One rank's share of a plan: what a rank-local transport runs when every rank is its own process.
//
// A plan describes every rank's operations. A rank-local transport needs, per phase, the
// operations this rank issues (the copies it pushes, whose source is its own memory, and the
// reductions on its memory), the copies it receives (for receive-based transports such as NCCL,
// which post a recv into this rank's memory), and the waits that make the push model safe:
// which peers must have finished which phase before this rank may run its operations.
//
// Waits cover every hazard between ranks (a transport keeps its own operations in phase order):
//   RAW  this rank reads memory a peer wrote earlier (a copy the peer pushed into it);
//   WAR  this rank writes a peer's memory that the peer (or a third rank) read earlier;
//   WAW  this rank writes a peer's memory that another rank wrote earlier;
//   entry  before this rank first pushes into a peer in a call, the peer must have entered the
//          call (it no longer uses its memory for the previous call, and its input is in place);
//   exit   before this rank reads its output (returns it, or copies it out), every peer that
//          writes into this rank's memory must have finished its last phase that does.
// A wait names the peer's latest relevant phase only: a peer runs its phases in order, so
// "finished phase p" implies every earlier phase. Waits implied by an earlier wait of this
// rank's slice are dropped.
//
// The fp8 wire. A copy that crosses it (plan::crosses_wire) has two ends: quantize at
// the sender, dequantize at the receiver. Who runs the receiving end is the transport's choice:
//   fp8_ends::sender    the sender runs both (it can write the receiver's memory at full width
//                       anyway: the shm transport, whose "link" is shared host memory);
//   fp8_ends::receiver  the sender quantizes straight into the receiver's wire slot, and the
//                       receiver dequantizes from it in an arrival of its own after the phase, so
//                       only the fp8 image crosses the link (the ipc transport). Each plan phase
//                       then has two marks: the phase proper, then its arrivals; a rank publishes
//                       and waits for marks (slice_mark), and the hazards above are found between
//                       marks, with the destination written by the receiver at its arrival.
//
// slice_plan is pure: no transport, no memory, the same on every rank for the same plan.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "relay/plan/bind.hpp"
#include "relay/plan/plan.hpp"

namespace relay {

// The phase index of an entry wait: "the peer has entered this call".
inline constexpr std::int32_t call_entry = -1;

// Who runs the receiving end of an fp8 copy (see the top of this file).
enum class fp8_ends : unsigned char { sender, receiver };

// Before running, wait until `peer` has finished phase `phase` (an index into plan::phases) of
// this call (with `arrival`: that phase's fp8 arrivals too), or, for phase == call_entry, until
// it has entered this call.
struct slice_wait {
  std::uint16_t peer = 0;
  std::int32_t phase = call_entry;
  bool arrival = false;
  friend constexpr bool operator==(const slice_wait&, const slice_wait&) = default;
};

// A copy another rank pushes into this rank's memory: plan::ops[op], issued by `peer`, reading
// `src` in the peer's memory and writing `count` elements at `dst` in this rank's memory.
struct slice_receive {
  std::uint32_t op = 0;
  std::uint16_t peer = 0;
  plan_operand src{}, dst{};
  std::uint64_t count = 0;
  friend constexpr bool operator==(const slice_receive&, const slice_receive&) = default;
};

// One phase of the plan as this rank sees it. Only phases in which the rank issues or receives
// something appear in a slice.
struct slice_phase {
  std::uint32_t index = 0;  // into plan::phases
  std::uint16_t step = 0;
  relay::phase kind = phase::transfer;
  // fp8_ends::receiver only: this rank's arrivals of phase `index` (dequantizing the fp8 copies
  // that land in its wire slots: `issued` lists those copies); no receives.
  bool arrival = false;
  std::vector<slice_wait> waits;        // before any operation in `issued` starts
  std::vector<std::uint32_t> issued;    // indices into plan::ops, in plan order
  std::vector<slice_receive> receives;  // copies that land in this rank's memory in this phase
};

struct plan_slice {
  int rank = 0;
  // Marks per plan phase: 2 where arrivals are phases of their own (fp8_ends::receiver on an fp8
  // wire), else 1. See slice_mark.
  int marks_per_phase = 1;
  std::vector<slice_phase> phases;
  std::vector<slice_wait> exit_waits;  // before this rank reads its output at the end of the call
  std::vector<int> sends_to;           // peers this rank pushes into, sorted (connection set-up)
  std::vector<int> receives_from;      // peers that push into this rank, sorted
};

// The ordinal of what a wait names among a rank's marks: entering the call is 0, finishing
// phase p is p + 1 (one mark per phase), or 2p + 1 and, after its arrivals, 2p + 2. A rank
// publishes the mark of each slice phase it finishes (slice_mark(s, {rank, index, arrival})).
constexpr std::uint64_t slice_mark(const plan_slice& s, const slice_wait& w) {
  if (w.phase < 0) return 0;
  return static_cast<std::uint64_t>(w.phase) * static_cast<std::uint64_t>(s.marks_per_phase) + 1 +
         (w.arrival ? 1 : 0);
}

namespace detail {

// One operation's read or write of one rank's memory: [begin, end) bytes of (rank, buf).
struct slice_access {
  std::uint64_t begin = 0, end = 0;
  std::int32_t mark = 0;  // of the issuer's phase (or arrival): marks_per_phase * phase + arrival
  std::uint16_t issuer = 0;
  bool write = false;
};

inline std::tuple<int, int> space_of(const plan_operand& o) {
  return {o.rank, static_cast<int>(o.buf)};
}

// Calls f(operand, write, bytes) for every access of op i: its sources read and its destination
// written (partial sums may be wider than elements), and on an fp8 wire the encoded image
// written into the sender's send slot and the receiver's receive slot, both in scratch and
// reused phase after phase, so a rank must not fill a slot a slower peer still uses.
template <class F>
void for_each_access(const plan& p, std::uint32_t i, F&& f) {
  const plan_op& op = p.ops[i];
  const auto sources = p.sources_of(op);
  for (std::size_t s = 0; s < sources.size(); ++s)
    f(sources[s], false, op.count * p.source_width(op, s));
  f(op.dst, true, op.count * p.dst_width(op));
  if (!p.crosses_wire(op)) return;
  const std::uint64_t image = fp8_wire_bytes(op.count);
  f(wire_send_end(p, i), true, image);
  f(wire_recv_end(p, i), true, image);
}

// fp8_ends::receiver: the accesses of one end of a copy that crosses the wire. The sender's end
// reads the sources and writes the image into the receiver's wire slot; the receiver's arrival
// reads the image there and writes the destination.
template <class F>
void for_each_end_access(const plan& p, std::uint32_t i, bool arrival, F&& f) {
  const plan_op& op = p.ops[i];
  const plan_operand slot = wire_recv_end(p, i);
  const std::uint64_t image = fp8_wire_bytes(op.count);
  if (arrival) {
    f(slot, false, image);
    f(op.dst, true, op.count * p.dst_width(op));
    return;
  }
  const auto sources = p.sources_of(op);
  for (std::size_t s = 0; s < sources.size(); ++s)
    f(sources[s], false, op.count * p.source_width(op, s));
  f(slot, true, image);
}

}  // namespace detail

// This rank's slice of `p` (rank in 0..p.ranks()-1); `ends` matters on an fp8 wire only.
//
// Hazards are found per memory space (one rank's input, output or scratch): every earlier
// access by another rank that overlaps one of this operation's accesses, with at least one of
// the two a write, becomes a wait for that rank's mark. Quadratic in the accesses of one space,
// which a plan has few of; the communicator caches the result per call shape.
inline plan_slice slice_plan(const plan& p, int rank, fp8_ends ends = fp8_ends::sender) {
  const auto me = static_cast<std::uint16_t>(rank);
  const bool arrivals = ends == fp8_ends::receiver && p.wire.taken != wire_format::native;
  plan_slice out;
  out.rank = rank;
  out.marks_per_phase = arrivals ? 2 : 1;
  std::map<std::tuple<int, int>, std::vector<detail::slice_access>> spaces;
  // Marks are compared as marks_per_phase * phase + arrival (call_entry: below every phase's).
  auto mark_of = [&](std::int32_t phase, bool arrival) {
    return phase < 0 ? phase : phase * out.marks_per_phase + (arrival ? 1 : 0);
  };
  auto wait_of = [&](std::size_t peer, std::int32_t mark) {
    const auto q = static_cast<std::uint16_t>(peer);
    return mark < 0 ? slice_wait{q, call_entry, false}
                    : slice_wait{q, mark / out.marks_per_phase, mark % out.marks_per_phase != 0};
  };
  constexpr std::int32_t none = call_entry - 1;
  std::vector<std::int32_t> waited(static_cast<std::size_t>(p.ranks()), none);
  // The last mark in which each peer writes into this rank's memory (none: below call_entry).
  std::vector<std::int32_t> last_write_into_me(static_cast<std::size_t>(p.ranks()), none);
  std::vector<bool> sends(static_cast<std::size_t>(p.ranks()), false);

  for (std::uint32_t ph = 0; ph < p.phases.size(); ++ph) {
    const plan_phase& phase = p.phases[ph];
    for (const bool arrival : {false, true}) {
      if (arrival && !arrivals) break;
      // Op i's end in this mark: its issuer, and its accesses (none: the op has no end here).
      auto issuer_of = [&](const plan_op& op) {
        return static_cast<std::uint16_t>(arrival ? op.dst.rank : op.issuer(p.sources));
      };
      auto in_mark = [&](std::uint32_t i) {
        return !arrival || (arrivals && p.crosses_wire(p.ops[i]));
      };
      auto accesses = [&](std::uint32_t i, auto&& f) {
        if (arrivals && p.crosses_wire(p.ops[i]))
          detail::for_each_end_access(p, i, arrival, f);
        else
          detail::for_each_access(p, i, f);
      };
      const std::int32_t mark = mark_of(static_cast<std::int32_t>(ph), arrival);
      slice_phase mine{ph, phase.step, phase.phase, arrival, {}, {}, {}};
      std::vector<std::int32_t> need(static_cast<std::size_t>(p.ranks()), none);
      auto require = [&](std::size_t peer, std::int32_t m) {
        need[peer] = std::max(need[peer], m);
      };
      for (std::uint32_t i = phase.first; i < phase.first + phase.size; ++i) {
        if (!in_mark(i)) continue;
        const plan_op& op = p.ops[i];
        const auto sources = p.sources_of(op);
        const auto issuer = issuer_of(op);
        if (!arrival && op.phase == phase::transfer && op.dst.rank == me && issuer != me)
          mine.receives.push_back({i, issuer, sources[0], op.dst, op.count});
        if (issuer != me) continue;
        mine.issued.push_back(i);
        if (!arrival && op.dst.rank != me) {
          sends[op.dst.rank] = true;
          require(op.dst.rank, call_entry);
        }
        accesses(i, [&](const plan_operand& o, bool write, std::uint64_t bytes) {
          const std::uint64_t begin = o.offset, end = o.offset + bytes;
          if (begin == end) return;
          for (const detail::slice_access& a : spaces[detail::space_of(o)])
            if (a.issuer != me && (a.write || write) && a.begin < end && begin < a.end)
              require(a.issuer, a.mark);
        });
      }
      // Record every rank's accesses of this mark (after computing its waits: the operations of
      // one phase never conflict, nor do the arrivals of one phase).
      for (std::uint32_t i = phase.first; i < phase.first + phase.size; ++i) {
        const plan_op& op = p.ops[i];
        if (op.count == 0 || !in_mark(i)) continue;
        const auto issuer = issuer_of(op);
        accesses(i, [&](const plan_operand& o, bool write, std::uint64_t bytes) {
          spaces[detail::space_of(o)].push_back({o.offset, o.offset + bytes, mark, issuer, write});
          if (write && o.rank == me && issuer != me)
            last_write_into_me[issuer] = std::max(last_write_into_me[issuer], mark);
        });
      }
      for (std::size_t peer = 0; peer < need.size(); ++peer)
        if (need[peer] > waited[peer]) {
          // An entry wait is implied by any phase wait on the same peer in this call.
          if (need[peer] == call_entry && waited[peer] >= call_entry) continue;
          mine.waits.push_back(wait_of(peer, need[peer]));
          waited[peer] = need[peer];
        }
      if (!mine.issued.empty() || !mine.receives.empty()) out.phases.push_back(std::move(mine));
    }
  }
  for (std::size_t peer = 0; peer < last_write_into_me.size(); ++peer) {
    if (last_write_into_me[peer] < call_entry) {
      if (sends[peer]) out.sends_to.push_back(static_cast<int>(peer));
      continue;
    }
    out.receives_from.push_back(static_cast<int>(peer));
    if (sends[peer]) out.sends_to.push_back(static_cast<int>(peer));
    if (last_write_into_me[peer] > waited[peer])
      out.exit_waits.push_back(wait_of(peer, last_write_into_me[peer]));
  }
  return out;
}

}  // namespace relay
