// The ll form's rules (transport/ipc/ll.hpp), host-only so that they are unit-tested without a
// device: which calls it runs, how a member's input lies in its peers' slots as words, and what
// one launch of it is given.
//
// The ll form runs the calls of the pull form (pull_plan.hpp: an allreduce on the native wire,
// its groups within one reduction's sources) whose largest group's input fits a slot: every
// member pushes its input to every other member of its group as words that carry the call
// (4 bytes of data in the lower half of a 64-bit word, the call's lower 32 bits in the upper,
// as NCCL's LL protocol does), and sums, in group order, its own input and the words that landed
// in its slots, straight into its output. The read is the wait: no flag, no barrier, no staged
// input, one device-side trip. (The name is NCCL's: low latency.)
//
// Why this is the pull form's result: the same sum of the same inputs, in the same order, with the
// same arithmetic (core/reduction.hpp), so the same bits.
#pragma once

#include <algorithm>
#include <cstdint>

#include "relay/core/config.hpp"
#include "relay/plan/plan.hpp"
#include "relay/transport/ipc/pull_plan.hpp"

namespace relay::ipc {

// The most input bytes a member pushes in one call (its slot in each peer holds that many data
// bytes, as twice as many bytes of words), and the words of a slot. Each rank's control block
// holds a slot per sender and call parity: 2 x max_ranks x 512 KiB (8 MiB).
inline constexpr std::uint64_t ll_capacity = std::uint64_t{256} << 10;
inline constexpr std::uint64_t ll_slot_words = ll_capacity / 4;

// The ll kernel's sizes (ipc_ll_kernel's Most: the members its loops are unrolled for): a pair's
// own, a node's GPUs, and the most members a reduction takes. Each launch runs the smallest that
// holds its group (ll_kernel_members).
inline constexpr std::uint32_t ll_node_members = 8;
static_assert(ll_node_members <= max_reduce_inputs);
RELAY_HOST_DEVICE constexpr std::uint32_t ll_kernel_members(std::uint32_t members) {
  constexpr auto most = static_cast<std::uint32_t>(max_reduce_inputs);
  return members <= 2 ? 2 : members <= ll_node_members ? ll_node_members : most;
}

// The 16-byte vectors of an input of `bytes` (the last one zero-padded).
RELAY_HOST_DEVICE constexpr std::uint64_t ll_vectors(std::uint64_t bytes) {
  return (bytes + 15) / 16;
}

// Where word j (0..3: bytes 4j..4j+3) of vector v of a call of `vectors` vectors lies in a slot:
// word j of every vector together, so that a warp's stores and loads of one j are contiguous.
RELAY_HOST_DEVICE constexpr std::uint64_t ll_word(std::uint64_t v, int j, std::uint64_t vectors) {
  return static_cast<std::uint64_t>(j) * vectors + v;
}

// A word of call `call` carrying `data`, and whether a word is one of `call` (the call's lower 32
// bits: a slot holds call s or s +- 2, never one 2^32 apart, as the pull form's entry words).
RELAY_HOST_DEVICE constexpr std::uint64_t ll_word_of(std::uint64_t call, std::uint32_t data) {
  return (call & 0xFFFFFFFFu) << 32 | data;
}
RELAY_HOST_DEVICE constexpr bool ll_word_is(std::uint64_t word, std::uint64_t call) {
  return word >> 32 == (call & 0xFFFFFFFFu);
}

// Whether the ll form can run `p`: the pull form's calls whose every group's input fits a slot.
inline bool ll_applies(const plan& p) {
  if (!pull_applies(p)) return false;
  const auto width = static_cast<std::uint64_t>(p.element_size());
  for (std::int64_t n : p.counts)
    if (n > 0 && static_cast<std::uint64_t>(n) * width > ll_capacity) return false;
  return true;
}

// One launch of the ll kernel: this rank's role (the pull program's: pull_role_of) and this
// call's buffers, the caller's own: only this rank reads its input and writes its output.
struct ipc_ll {
  const void* in = nullptr;
  void* out = nullptr;
  std::uint64_t count = 0;    // elements of the input and of the output
  std::int32_t divisor = 1;   // AVG: A
  std::uint32_t members = 0;  // 0: this rank sums nothing (a helper, a group of count 0)
  std::uint32_t mine = 0;     // this rank's index among them
  std::uint16_t member[max_reduce_inputs] = {};
};

}  // namespace relay::ipc
