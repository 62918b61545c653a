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
// slice_plan is pure: no transport, no memory, the same on every rank for the same plan.
#pragma once

#include <cstdint>
#include <vector>

#include "relay/plan/plan.hpp"

namespace relay {

// The phase index of an entry wait: "the peer has entered this call".
inline constexpr std::int32_t call_entry = -1;

// Before running, wait until `peer` has finished phase `phase` (an index into plan::phases) of
// this call, or, for phase == call_entry, until it has entered this call.
struct slice_wait {
  std::uint16_t peer = 0;
  std::int32_t phase = call_entry;
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
  std::vector<slice_wait> waits;        // before any operation in `issued` starts
  std::vector<std::uint32_t> issued;    // indices into plan::ops, in plan order
  std::vector<slice_receive> receives;  // copies that land in this rank's memory in this phase
};

struct plan_slice {
  int rank = 0;
  std::vector<slice_phase> phases;
  std::vector<slice_wait> exit_waits;  // before this rank reads its output at the end of the call
  std::vector<int> sends_to;           // peers this rank pushes into, sorted (connection set-up)
  std::vector<int> receives_from;      // peers that push into this rank, sorted
};

// This rank's slice of `p` (rank in 0..p.ranks()-1).
inline plan_slice slice_plan(const plan& p, int rank);

}  // namespace relay
