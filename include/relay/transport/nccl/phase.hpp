// What one rank does over NCCL in one transfer phase of its slice (nccl/transport.hpp): plain
// data, no GPU runtime and no NCCL types, so that CPU tests check every decision the transport
// makes (tests/unit/transport/nccl/test_phase.cpp) and the transport only executes the list.
//
// In the order the transport runs them on its stream:
//   1. quantizes    every copy this rank issues that crosses an fp8 wire (plan::crosses_wire):
//                   its source elements into the wire image in this rank's scratch, at the op's
//                   wire_slot::send;
//   2. sends        in one ncclGroupStart/End with the receives: each copy into a peer, the
//                   image from the send slot (fp8_wire_bytes(count) bytes) or natively the
//                   elements from the source operand (count times the copy's width, partial sums
//                   being wider than elements);
//      receives     each copy a peer pushes into this rank: the image into this rank's scratch at
//                   wire_slot::recv, or natively the elements into the destination operand;
//   3. copies       the copies within this rank's memory, never quantized (they cross no link);
//   4. dequantizes  each received image into its destination (a plain store, no accumulation:
//                   the plan's reductions add arrived data in a later reduce phase).
// Sends and receives are each in plan order. Both ranks of a pair derive their lists from the
// same plan, so rank a's sends to b and rank b's receives from a are the same copies in the same
// order: the order NCCL matches point-to-point operations of one pair in.
//
// A wire slot is an operand of this rank's scratch at the slot's offset, so a send or receive is
// one shape whether it moves elements or an image. make_plan lays the slots out inside
// plan::scratch_bytes (validate_plan checks it), which the transport reserves as it does for
// native plans.
#pragma once

#include <cstdint>
#include <vector>

#include "relay/plan/plan.hpp"
#include "relay/plan/slice.hpp"

namespace relay {

// `count` elements at `src` quantized into the image at `slot` (bytes into this rank's scratch).
// `wide`: the elements are floats (float32 data or fp32 partial sums), else the plan's 16-bit
// type.
struct nccl_quantize {
  std::uint32_t op = 0;  // plan::ops index
  plan_operand src{};
  std::uint64_t slot = 0;
  std::uint64_t count = 0;
  bool wide = false;
  friend constexpr bool operator==(const nccl_quantize&, const nccl_quantize&) = default;
};

// An ncclSend to, or ncclRecv from, `peer` of `bytes` bytes (ncclUint8) at `at` in this rank's
// memory: a user or scratch operand, or a wire slot (buffer::scratch at the slot's offset).
struct nccl_transfer {
  std::uint32_t op = 0;
  int peer = 0;
  plan_operand at{};
  std::uint64_t bytes = 0;
  friend constexpr bool operator==(const nccl_transfer&, const nccl_transfer&) = default;
};

// `bytes` bytes from `src` to `dst`, both in this rank's memory.
struct nccl_local_copy {
  std::uint32_t op = 0;
  plan_operand src{}, dst{};
  std::uint64_t bytes = 0;
  friend constexpr bool operator==(const nccl_local_copy&, const nccl_local_copy&) = default;
};

// The image at `slot` (bytes into this rank's scratch) dequantized into `count` elements at `dst`.
struct nccl_dequantize {
  std::uint32_t op = 0;
  std::uint64_t slot = 0;
  plan_operand dst{};
  std::uint64_t count = 0;
  bool wide = false;
  friend constexpr bool operator==(const nccl_dequantize&, const nccl_dequantize&) = default;
};

struct nccl_phase_work {
  std::vector<nccl_quantize> quantizes;        // before ncclGroupStart
  std::vector<nccl_transfer> sends, receives;  // inside the group, each in plan order
  std::vector<nccl_local_copy> copies;         // after ncclGroupEnd
  std::vector<nccl_dequantize> dequantizes;    // after ncclGroupEnd
};

// What `rank` does in transfer phase `sp` of its slice of `p` (a plan validate_plan accepts).
// Operations of no elements are left out on both ends alike. A reduce phase has none of this
// work (the transport runs its reductions as one batched kernel): empty lists.
inline nccl_phase_work nccl_phase(const plan& p, const slice_phase& sp, int rank) {
  nccl_phase_work w;
  if (sp.kind != phase::transfer) return w;
  const auto me = static_cast<std::uint16_t>(rank);
  auto slot_at = [&](std::uint64_t offset) { return plan_operand{me, buffer::scratch, offset}; };
  for (std::uint32_t i : sp.issued) {
    const plan_op& o = p.ops[i];
    if (o.count == 0) continue;
    const plan_operand& src = p.sources_of(o)[0];
    if (o.dst.rank == me) {
      w.copies.push_back({i, src, o.dst, o.count * static_cast<std::uint64_t>(p.dst_width(o))});
    } else if (p.crosses_wire(o)) {
      const std::uint64_t slot = p.wire_slots[i].send;
      w.quantizes.push_back({i, src, slot, o.count, p.source_width(o, 0) == 4});
      w.sends.push_back({i, o.dst.rank, slot_at(slot), p.link_bytes(o)});
    } else {
      w.sends.push_back({i, o.dst.rank, src, p.link_bytes(o)});
    }
  }
  for (const slice_receive& rc : sp.receives) {
    const plan_op& o = p.ops[rc.op];
    if (rc.count == 0) continue;
    if (p.crosses_wire(o)) {
      const std::uint64_t slot = p.wire_slots[rc.op].recv;
      w.receives.push_back({rc.op, rc.peer, slot_at(slot), p.link_bytes(o)});
      w.dequantizes.push_back({rc.op, slot, rc.dst, rc.count, p.dst_width(o) == 4});
    } else {
      w.receives.push_back({rc.op, rc.peer, rc.dst, p.link_bytes(o)});
    }
  }
  return w;
}

}  // namespace relay
