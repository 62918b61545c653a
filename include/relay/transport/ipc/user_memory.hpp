// The ipc transport's user-memory decisions (ipc/transport.hpp), host-only so that they are
// unit-tested without a device: where a call's plan operands live, and, per call, whether this
// rank's input and output are used where the caller keeps them or staged through its
// registered area.
//
// Why only the output needs registering. In a plan every operation reads memory of the rank that
// issues it (a copy is pushed by its source's rank; a reduction's sources lie on its own rank) and
// no operation writes an input (plan_allows_user_memory checks both). So a rank's input is read by
// that rank alone: it may stay in the caller's buffer, registered or not. Its output is written by
// the peers that push into it, which must be able to address it: it may stay in the caller's buffer
// only when that lies in memory this rank registered (comm.register_buffer), which every peer has
// opened.
//
// The decision is this rank's own, per call (choose_user_memory): peers learn where its output is
// on the device, not on the host. The rank's entry stage writes the output's place (registration
// slot and offset, or "staged") into its control block before it publishes "entered", and a peer
// reads it after its entry wait on the rank, which the slice makes before its first push into the
// rank (plan/slice.hpp). So ranks need not agree on anything, a graph replays the places its
// calls were captured with, and no host exchange happens per call.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "relay/plan/plan.hpp"
#include "relay/plan/rank_buffers.hpp"
#include "relay/transport/ipc/pull_entry.hpp"

namespace relay::ipc {

// Registrations per rank (slots of the device-side table every rank keeps of every peer's).
inline constexpr int max_registrations = 16;

// Descriptors are built once per plan against the staged addresses and moved by a per-call delta
// (ipc/kernels.hpp). A delta keeps the operands' misalignment modulo 16, which the
// descriptors' vector widths were chosen for, only when it is a multiple of 16: the staged places
// are 256-byte aligned, so a user buffer qualifies when its address is 16-byte aligned.
inline constexpr std::uintptr_t user_alignment = 16;
inline bool user_aligned(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % user_alignment == 0;
}

// What an operand of a descriptor is moved by at run time: nothing (scratch, or a peer's memory
// other than its output), this rank's input or output delta, or peer q's output delta.
inline constexpr std::uint8_t tag_fixed = 0, tag_my_input = 1, tag_my_output = 2,
                              tag_peer_output = 3;  // + q
inline std::uint8_t operand_tag(const plan_operand& o, int me) {
  if (o.buf == buffer::scratch) return tag_fixed;
  if (o.rank == me) return o.buf == buffer::input ? tag_my_input : tag_my_output;
  return o.buf == buffer::output ? static_cast<std::uint8_t>(tag_peer_output + o.rank) : tag_fixed;
}

// Whether `p` keeps the two rules above, so that a rank may use its input in place and its output
// in user memory. Every plan make_plan builds does (a unit test runs them all); a plan that did
// not would run staged.
inline bool plan_allows_user_memory(const plan& p) {
  for (const plan_op& o : p.ops) {
    if (o.dst.buf == buffer::input) return false;
    if (o.phase == phase::reduce)
      for (const plan_operand& s : p.sources_of(o))
        if (s.rank != o.dst.rank) return false;
  }
  return true;
}

// One registration of this rank: [begin, end) of its address space.
struct registration {
  std::uintptr_t begin = 0, end = 0;
};

// The slot whose registration holds [p, p + bytes), or -1.
inline int find_registration(std::span<const registration> slots, const void* p,
                             std::size_t bytes) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  for (std::size_t i = 0; i < slots.size(); ++i)
    if (slots[i].end > slots[i].begin && a >= slots[i].begin && a <= slots[i].end &&
        bytes <= slots[i].end - a)
      return static_cast<int>(i);
  return -1;
}

struct user_memory_choice {
  bool input = false;   // read the input from the caller's buffer (no copy in)
  bool output = false;  // reductions and peers write the caller's output (no copy out)
  int slot = -1;        // the output's registration (when output)
};

// This rank's choice for one call. `output_slot`: find_registration of its output (-1: none).
// In place (the input and output overlap in the caller's memory) only one of them may stay there:
// the plan is the out-of-place one, whose waits assume the input is not written during the call.
// The output is preferred (it needs the registration; the input does not).
inline user_memory_choice choose_user_memory(bool plan_ok, placement where, buffer_view send,
                                             std::uint64_t in_bytes, buffer_view recv,
                                             std::uint64_t out_bytes, int output_slot) {
  user_memory_choice c;
  if (!plan_ok) return c;
  c.output = out_bytes > 0 && output_slot >= 0 && user_aligned(recv.data);
  c.slot = c.output ? output_slot : -1;
  c.input = in_bytes > 0 && user_aligned(send.data) && !(c.output && where == placement::in_place);
  return c;
}

// The pull form's choice for this rank's input (ipc/pull.hpp), made per call like
// choose_user_memory: the registration slot its peers read it from where the caller keeps it, or -1
// (the kernel stages it). In place only where it lies in one registration (which every peer has
// opened), is aligned as above (the sum's vectors), and is not also the output: in place, peers
// would read what this rank overwrites, so the staged copy is read. Peers address it by the
// registration's allocation and an offset, which must fit the entry's words (pull_entry.hpp): the
// caller checks that.
inline int choose_pull_input(placement where, buffer_view send, std::uint64_t in_bytes,
                             std::span<const registration> slots) {
  if (in_bytes == 0 || where == placement::in_place) return -1;
  if (!user_aligned(send.data)) return -1;
  return find_registration(slots, send.data, in_bytes);
}

// The pull form's place of this rank's input in one call, as its entry words carry it to the
// peers: the registration slot + 1 and the offset from the start of that registration's
// allocation (`start`), or slot 0, staged. `slot`: choose_pull_input's. The offset must fit the
// words' 56 bits: no allocation comes near, and beyond, the input is staged, with the same result.
struct pull_input_place {
  std::uint64_t slot = 0, offset = 0;
};
inline pull_input_place pull_input_of(int slot, const void* input, std::uintptr_t start) {
  if (slot < 0) return {};
  const std::uint64_t offset = reinterpret_cast<std::uintptr_t>(input) - start;
  if (offset > pull_entry_max_offset) return {};
  return {static_cast<std::uint64_t>(slot) + 1, offset};
}

}  // namespace relay::ipc
