// Binding: where a plan's operands live, made memory. A plan names each operand by rank, area
// (input, output or scratch; partial sums and the fp8 wire's slots lie in scratch) and byte
// offset, and holds no address; whoever runs it knows where each rank's three areas begin
// (rank_areas). address_of is the one rule that joins the two, for every executor and transport.
#pragma once

#include <cstddef>

#include "relay/plan/area_layout.hpp"
#include "relay/plan/plan.hpp"

namespace relay {

// Where one rank's input, output and scratch begin.
template <class Byte>
struct rank_areas {
  Byte* input = nullptr;
  Byte* output = nullptr;
  Byte* scratch = nullptr;
  friend bool operator==(const rank_areas&, const rank_areas&) = default;
};

// The memory of operand `o`, its rank's areas at `at`.
template <class Byte>
constexpr Byte* address_of(const plan_operand& o, const rank_areas<Byte>& at) {
  Byte* base = o.buf == buffer::input ? at.input : o.buf == buffer::output ? at.output : at.scratch;
  return base + o.offset;
}

// A rank's areas as area_layout places them in one region beginning at `base` (the transports
// that stage every call: shm, ipc).
template <class Byte>
constexpr rank_areas<Byte> areas_at(Byte* base, const area_layout& a) {
  return {base + a.input, base + a.output, base + a.scratch};
}

// The two ends of operation i's fp8 image (plan::wire_slots): the sender's slot and the
// receiver's, as operands in their ranks' scratch.
inline plan_operand wire_send_end(const plan& p, std::size_t i) {
  return {p.sources[p.ops[i].first_source].rank, buffer::scratch, p.wire_slots[i].send};
}
inline plan_operand wire_recv_end(const plan& p, std::size_t i) {
  return {p.ops[i].dst.rank, buffer::scratch, p.wire_slots[i].recv};
}

}  // namespace relay
