// The ipc transport's captured inputs (communicator::register_graph_inputs), vLLM's
// register_graph_buffers done by the library.
//
// Why. The pull form (ipc/pull.hpp) lets peers read a rank's input where the caller keeps it only
// when that lies in registered memory; otherwise the kernel first copies it into the rank's area
// and raises a ready flag per block, about 1 us of a small call. A graph's inputs stay at the
// addresses it was captured with, so they can be registered once after capture, but a captured
// kernel's arguments cannot change. So a call captured with a staged input is given one word of
// device memory to read at each replay instead (pull_entry.hpp's graph_input_word): 0 until
// register_graph_inputs registers the allocations the captured inputs lie in (collectively) and
// writes each word, so replays stage as captured until then and read in place after.
//
// Why words are never reused: a graph captured earlier may be replayed later and read its word,
// which must never come to name another call's input. When all are taken, later captures stay
// staged (right, only slower). deregister_graph_inputs writes every word back to 0 before it
// ends the registrations, so every graph stages again: right either way.
//
// Registrations made here serve these words only, never an eager call's lookup (the transport
// hides them): an eager buffer's lifetime is not the graph's, and an address freed and reused
// would be read through a peer's stale mapping.
//
// Only code compiled by nvcc or hipcc may include this header (the runtime's calls).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "relay/core/status.hpp"
#include "relay/gpu/handles.hpp"
#include "relay/gpu/runtime.hpp"

namespace relay::ipc {

// Words per transport: calls of the pull form captured with a staged input, ever (512 KB).
inline constexpr std::size_t graph_input_capacity = std::size_t{1} << 16;

class graph_inputs {
 public:
  // One captured input not yet resolved: its word and where the caller keeps the input.
  struct pending_input {
    std::size_t word = 0;
    const void* data = nullptr;
    std::size_t bytes = 0;
  };

  graph_inputs() = default;
  graph_inputs(const graph_inputs&) = delete;
  graph_inputs& operator=(const graph_inputs&) = delete;
  ~graph_inputs() { close(); }
  void close() {
    if (words_ != nullptr) (void)gpu::rt::free(words_);
    words_ = nullptr;
  }

  // The words, all 0, on the current device.
  status open(int device) {
    void* p = nullptr;
    if (gpu::rt::error_t e = gpu::rt::malloc(&p, graph_input_capacity * sizeof(std::uint64_t));
        e != gpu::rt::success)
      return gpu::failure("allocating the captured inputs' words", device, e);
    words_ = static_cast<std::uint64_t*>(p);
    return zero(graph_input_capacity, device);
  }

  // The word for a call being captured whose input [data, data + bytes) is staged, or null when
  // every word is taken (the call then stages at every replay).
  const std::uint64_t* take(const void* data, std::size_t bytes) {
    if (words_ == nullptr || next_ == graph_input_capacity) return nullptr;
    pending_.push_back({next_, data, bytes});
    return words_ + next_++;
  }

  // Inputs captured since the last resolve.
  const std::vector<pending_input>& pending() const { return pending_; }

  // Writes each pending input's word: `place(data, bytes)` gives it (0: stays staged), all in
  // one upload (the pending words are consecutive: taken in order since the last resolve).
  // Returns how many came to be read in place. The device must be idle (no replay reads a word).
  template <class Place>
  status resolve(Place&& place, int device, std::size_t& in_place) {
    in_place = 0;
    if (pending_.empty()) return {};
    const std::size_t first = pending_.front().word;
    std::vector<std::uint64_t> w(pending_.back().word + 1 - first, 0);
    for (const pending_input& p : pending_) {
      w[p.word - first] = place(p.data, p.bytes);
      in_place += w[p.word - first] != 0 ? 1 : 0;
    }
    pending_.clear();
    if (gpu::rt::error_t e = gpu::rt::upload(words_ + first, w.data(), w.size() * sizeof w[0]);
        e != gpu::rt::success)
      return gpu::failure("writing the captured inputs' words", device, e);
    return {};
  }

  // Every word back to 0 (every graph stages again). The device must be idle.
  status clear(int device) {
    if (words_ == nullptr || next_ == 0) return {};
    return zero(next_, device);
  }

 private:
  // The first n words 0, landed before it returns (memset runs on the legacy stream, which a
  // non-blocking stream's replay does not wait for).
  status zero(std::size_t n, int device) {
    gpu::rt::error_t e = gpu::rt::memset(words_, 0, n * sizeof *words_);
    if (e == gpu::rt::success) e = gpu::rt::device_synchronize();
    if (e != gpu::rt::success)
      return gpu::failure("clearing the captured inputs' words", device, e);
    return {};
  }

  std::uint64_t* words_ = nullptr;
  std::size_t next_ = 0;
  std::vector<pending_input> pending_;
};

}  // namespace relay::ipc
