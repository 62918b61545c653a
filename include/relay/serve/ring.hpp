// One ring of the control plane (serve/segment.hpp): records written by one rank and read by
// others, each slot guarded by its sequence word, as a seqlock.
//
//   writer: word = 2i + 1 (an exchange, acquire); the record; word = 2i + 2 (release)
//   reader: word == 2i + 2 (acquire); the record, copied out; word unchanged (a fetch_add of 0,
//           release)
//
// The read-modify-writes stand where a seqlock has fences (no later write rises above the
// writer's acquire; no earlier read sinks below the reader's release), so that ThreadSanitizer,
// which knows no fences, checks the ring as it is.
//
// The writer reuses a slot only once every reader has taken the record it held (the plane waits
// for that before it writes), so a reader that finds its record whole reads it whole; the second
// look at the word catches the one case the plane cannot rule out: a reader that had not said yet
// that it reads the plan stream (serve/plane.hpp), overtaken by a full ring.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "relay/serve/segment.hpp"

namespace relay::serve {

inline constexpr std::uint64_t word_writing(std::uint64_t index) {
  return 2 * index + 1;
}
inline constexpr std::uint64_t word_written(std::uint64_t index) {
  return 2 * index + 2;
}
// The record index a word belongs to (0 for a slot never written).
inline constexpr std::uint64_t index_of_word(std::uint64_t word) {
  return word < 2 ? 0 : (word - 1) / 2;
}

inline std::uint64_t load_word(const slot_head& s) {
  return std::atomic_ref<const std::uint64_t>(s.word).load(std::memory_order_acquire);
}

// Writes record `index` (its bytes fit the slot: the caller checked) into `s`.
inline void write_slot(slot_head& s, std::span<std::byte> room, std::uint64_t index,
                       std::span<const std::byte> record) {
  std::atomic_ref<std::uint64_t> word(s.word);
  (void)word.exchange(word_writing(index), std::memory_order_acquire);
  std::memcpy(room.data(), record.data(), record.size());
  s.bytes = static_cast<std::uint32_t>(record.size());
  word.store(word_written(index), std::memory_order_release);
}

enum class slot_read { whole, not_yet, overtaken, torn };

// Copies record `index` out of `s` into `out` where it is whole.
inline slot_read read_slot(const slot_head& s, std::span<const std::byte> room, std::uint64_t index,
                           std::vector<std::byte>& out) {
  const std::uint64_t before = load_word(s);
  if (before < word_written(index)) return slot_read::not_yet;
  if (before > word_written(index)) return slot_read::overtaken;
  const std::uint32_t bytes = s.bytes;
  if (bytes > room.size()) return slot_read::torn;
  out.assign(room.begin(), room.begin() + bytes);
  // The slot lies in memory every rank maps writable; adding 0 leaves the word as it is.
  const std::uint64_t after = std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(s.word))
                                  .fetch_add(0, std::memory_order_release);
  return after == before ? slot_read::whole : slot_read::torn;
}

}  // namespace relay::serve
