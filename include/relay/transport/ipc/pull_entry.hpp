// The pull form's entry record (transport/ipc/pull.hpp) as self-identifying words: each 64-bit
// word carries the call it belongs to in its upper half and 32 bits of the record in its lower.
//
// Why. The plan's kernels announce a call with a record and then a mark: a reader waits for the
// mark, fences, and only then loads the record, a second dependent trip to the peer's memory (and
// the writer fences between the two). Words that name their call need neither: the reader polls
// the words themselves, and has the record the moment every word names this call; each word is
// whole on its own (one store), so no order among them is needed. The writer fences first only
// where something written before must be seen with the record (its reason text, its staged part).
//
// A word names the call's lower 32 bits. That is enough: a rank's words for call s sit in the
// slot of s's parity, and a rank writes call s + 2's words there only once every rank has entered
// s + 1 (it judged their records), so a slot holds s or s +- 2 and never a call 2^32 apart.
//
// Plain functions, compiled for the host too (unit-tested there).
#pragma once

#include <cstdint>

#include "relay/core/config.hpp"
#include "relay/transport/agreement.hpp"

namespace relay::ipc {

inline constexpr int pull_entry_words = 5;

// What a rank announces in the pull form: its record (its sequence is the call) and where its
// input is (registration slot + 1, 0: staged; offset from that allocation's start).
struct pull_entry {
  entry_record record;
  std::uint64_t in_slot = 0;
  std::uint64_t in_offset = 0;
};

// The largest slot and offset the words carry (8 bits of slot, 56 of offset).
inline constexpr std::uint64_t pull_entry_max_slot = 0xFF;
inline constexpr std::uint64_t pull_entry_max_offset = (std::uint64_t{1} << 56) - 1;

RELAY_HOST_DEVICE constexpr std::uint64_t pull_word(std::uint64_t call, std::uint64_t payload) {
  return (call & 0xFFFFFFFFu) << 32 | (payload & 0xFFFFFFFFu);
}
RELAY_HOST_DEVICE constexpr bool pull_word_is(std::uint64_t word, std::uint64_t call) {
  return word >> 32 == (call & 0xFFFFFFFFu);
}

// Words: fingerprint low, fingerprint high, code | placement << 8 | slot << 16 | offset bits
// 48..55 << 24, offset low, offset bits 32..47.
RELAY_HOST_DEVICE constexpr void pull_entry_encode(std::uint64_t call, const pull_entry& e,
                                                   std::uint64_t* words) {
  const std::uint64_t fp = e.record.fingerprint, off = e.in_offset;
  words[0] = pull_word(call, fp);
  words[1] = pull_word(call, fp >> 32);
  words[2] = pull_word(call, std::uint64_t{e.record.code} | std::uint64_t{e.record.placement} << 8 |
                                 (e.in_slot & 0xFF) << 16 | (off >> 48 & 0xFF) << 24);
  words[3] = pull_word(call, off);
  words[4] = pull_word(call, off >> 32 & 0xFFFF);
}

// True when every word names `call`; then `e` is the record they carry.
RELAY_HOST_DEVICE constexpr bool pull_entry_decode(std::uint64_t call, const std::uint64_t* words,
                                                   pull_entry& e) {
  for (int i = 0; i < pull_entry_words; ++i)
    if (!pull_word_is(words[i], call)) return false;
  const auto low = [&](int i) { return words[i] & 0xFFFFFFFFu; };
  e.record.sequence = call;
  e.record.fingerprint = low(0) | low(1) << 32;
  e.record.code = static_cast<std::uint8_t>(low(2) & 0xFF);
  e.record.placement = static_cast<std::uint8_t>(low(2) >> 8 & 0xFF);
  e.in_slot = low(2) >> 16 & 0xFF;
  e.in_offset = low(3) | (low(4) & 0xFFFF) << 32 | (low(2) >> 24 & 0xFF) << 48;
  return true;
}

// A captured input's place (transport/ipc/graph_inputs.hpp): one word of device memory that a
// replayed pull kernel reads instead of a fixed place: 0 while the input is staged, else the
// registration slot + 1 in the upper 8 bits and the offset from that allocation's start in the
// lower 56, as the entry words carry them.
RELAY_HOST_DEVICE constexpr std::uint64_t graph_input_word(std::uint64_t slot,
                                                           std::uint64_t offset) {
  return (slot + 1) << 56 | (offset & pull_entry_max_offset);
}
RELAY_HOST_DEVICE constexpr std::uint64_t graph_input_slot(std::uint64_t word) {
  return word >> 56;  // slot + 1; 0: staged
}
RELAY_HOST_DEVICE constexpr std::uint64_t graph_input_offset(std::uint64_t word) {
  return word & pull_entry_max_offset;
}

}  // namespace relay::ipc
