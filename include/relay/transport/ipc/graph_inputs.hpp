// The ipc transport's graph-input registration (communicator::register_graph_inputs and
// deregister_graph_inputs), vLLM's register_graph_buffers done by the library: the words captured
// calls read their input's place from, and the registrations that serve them, kept apart from
// the caller's own (register_buffer).
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
// Registrations made here serve these words only, never an eager call's lookup (eager() hides
// them): an eager buffer's lifetime is not the graph's, and an address freed and reused would be
// read through a peer's stale mapping.
//
// Only code compiled by nvcc or hipcc may include this header (the runtime's calls).
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <utility>
#include <vector>

#include "relay/bootstrap/exchange.hpp"
#include "relay/core/status.hpp"
#include "relay/gpu/handles.hpp"
#include "relay/gpu/runtime.hpp"
#include "relay/transport/ipc/memory.hpp"
#include "relay/transport/ipc/pull_entry.hpp"
#include "relay/transport/ipc/user_memory.hpp"

namespace relay::ipc {

// Words per transport: calls of the pull form captured with a staged input, ever (512 KB).
inline constexpr std::size_t graph_input_capacity = std::size_t{1} << 16;

class graph_inputs {
 public:
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

  // The registrations as calls look them up: the caller's (what register_buffer made) apart from
  // the graphs' (what register_pending made), after any change of the area's (sort).
  std::span<const registration> eager() const { return eager_; }
  std::uint32_t graph_slots() const { return graph_slots_; }  // bit k: slot k is a graph's
  void sort(std::span<const registration> all) {
    for (std::size_t k = 0; k < all.size() && k < eager_.size(); ++k) {
      const bool graph = ((graph_slots_ >> k) & 1) != 0;
      eager_[k] = graph ? registration{} : all[k];
      graph_[k] = graph ? all[k] : registration{};
    }
  }

  // Collective (communicator::register_graph_inputs): the allocations of the inputs captured
  // since the last time registered in `a`, as many rounds as the rank with the most, then each
  // pending word written, so that replays read those inputs in place; `in_place`: how many.
  // An allocation that cannot be registered (no slot left, not exportable, a peer cannot map it)
  // leaves its inputs staged, right either way. Not during capture; synchronizes the device.
  // A failure leaves this rank out of step with its peers (the transport then leaves).
  status register_pending(area& a, bootstrap& boot, int device, std::chrono::milliseconds timeout,
                          std::size_t& in_place) {
    in_place = 0;
    const gpu::device_guard keep;
    if (gpu::rt::error_t e = gpu::rt::set_device(device); e != gpu::rt::success)
      return gpu::failure("selecting the device", device, e);
    const std::vector<std::pair<void*, std::size_t>> todo = unregistered();
    std::uint64_t rounds = 0;
    if (status s = most_of_all(boot, todo.size(), rounds, timeout); !s) return s;
    for (std::uint64_t i = 0; i < rounds; ++i) {
      const bool mine = i < todo.size();
      int slot = -1;
      const status s = a.register_buffer(boot, mine ? todo[i].first : nullptr,
                                         mine ? todo[i].second : 0, timeout, &slot);
      if (!a.in_step()) return s;
      if (slot >= 0) graph_slots_ |= std::uint32_t{1} << slot;
    }
    sort(a.registered());
    const auto place = [&](const void* p, std::size_t bytes) -> std::uint64_t {
      const int slot = find_registration(graph_, p, bytes);
      if (slot < 0) return 0;
      const std::uint64_t offset = reinterpret_cast<std::uintptr_t>(p) - a.registered_start(slot);
      return offset <= pull_entry_max_offset
                 ? graph_input_word(static_cast<std::uint64_t>(slot), offset)
                 : 0;
    };
    return resolve(place, device, in_place);
  }

  // Collective (communicator::deregister_graph_inputs): every captured input staged again (its
  // word 0, once the device is idle), then the graphs' registrations in `a` ended: after it,
  // graphs still replay right (staged), and their buffers may be freed. A failure leaves this
  // rank out of step, as register_pending's.
  status deregister_all(area& a, bootstrap& boot, int device, std::chrono::milliseconds timeout) {
    const gpu::device_guard keep;
    if (gpu::rt::error_t e = gpu::rt::set_device(device); e != gpu::rt::success)
      return gpu::failure("selecting the device", device, e);
    if (gpu::rt::error_t e = gpu::rt::device_synchronize(); e != gpu::rt::success)
      return gpu::failure("waiting before the graphs' deregistration", device, e);
    if (status s = clear(device); !s) return s;
    std::vector<void*> mine;
    for (int k = 0; k < max_registrations; ++k)
      if (((graph_slots_ >> k) & 1) != 0)
        mine.push_back(reinterpret_cast<void*>(graph_[static_cast<std::size_t>(k)].begin));
    std::uint64_t rounds = 0;
    if (status s = most_of_all(boot, mine.size(), rounds, timeout); !s) return s;
    for (std::uint64_t i = 0; i < rounds; ++i) {
      const status s =
          a.deregister_buffer(boot, i < mine.size() ? mine[i] : nullptr, timeout, ~graph_slots_);
      if (!a.in_step()) return s;
    }
    graph_slots_ = 0;
    sort(a.registered());
    return {};
  }

 private:
  // One captured input not yet resolved: its word and where the caller keeps the input.
  struct pending_input {
    std::size_t word = 0;
    const void* data = nullptr;
    std::size_t bytes = 0;
  };

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

  // The allocations of the pending inputs not yet in a graph's registration, each once (an input
  // whose allocation the runtime cannot name stays staged).
  std::vector<std::pair<void*, std::size_t>> unregistered() const {
    std::vector<std::pair<void*, std::size_t>> todo;
    for (const pending_input& in : pending_) {
      if (find_registration(graph_, in.data, in.bytes) >= 0) continue;
      void* base = nullptr;
      std::size_t size = 0;
      if (gpu::rt::address_range(&base, &size, in.data) != gpu::rt::success) {
        (void)gpu::rt::get_last_error();
        continue;
      }
      if (std::find(todo.begin(), todo.end(), std::pair{base, size}) == todo.end())
        todo.emplace_back(base, size);
    }
    return todo;
  }

  // The largest `n` of any rank (collective).
  static status most_of_all(bootstrap& boot, std::uint64_t n, std::uint64_t& most,
                            std::chrono::milliseconds timeout) {
    std::vector<std::uint64_t> all;
    if (status s = exchange(boot, n, all, timeout, "count of registrations"); !s) return s;
    most = *std::max_element(all.begin(), all.end());
    return {};
  }

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
  std::uint32_t graph_slots_ = 0;  // bit k: registration slot k is a graph's
  std::array<registration, max_registrations> eager_{}, graph_{};
};

}  // namespace relay::ipc
