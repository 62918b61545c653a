// The control plane's shared memory: one memfd per communicator, made by rank 0 and handed to
// every rank over an abstract Unix-domain socket (transport/shm/fd_passing.hpp), as the shm
// transport's segment is, so it has no name anywhere and goes with the last process that maps it.
// It serves every transport (the plane is host-side: shm, ipc and nccl alike), on one host.
//
// Layout: a header; one block per rank (its process id, its role, whether it closed the plane,
// how far it has read each stream, the failure it gave up with, if it did, and on the publisher
// whether its last step was a stop); then two rings of slots: the call stream's (`depth` slots
// of `record_bytes`) and the plan stream's (`plan_depth` slots of `plan_bytes`). A slot is a
// sequence word and a record:
//   word = 2 * index + 1 while record `index` is written, 2 * index + 2 once it is whole;
// one writer per ring (the plane's publisher), which reuses a slot only after every reader has
// taken the record it held (serve/ring.hpp).
#pragma once

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "relay/bootstrap/bootstrap.hpp"
#include "relay/transport/shm/fd_passing.hpp"

namespace relay::serve {

inline constexpr std::uint64_t plane_magic = 0x72656c61792d6370ull;  // "relay-cp"

enum class plane_role : std::uint32_t {
  call = 1,   // makes its own calls (an active rank; the publisher is the lowest of these)
  serve = 2,  // learns every call from the plane (serve/serve.hpp)
};

// The plane's sizes are rank 0's (its values win); control_max_calls is each rank's own.
struct plane_geometry {
  std::uint32_t depth = 8;         // call-stream slots: how far the publisher runs ahead
  std::uint32_t record_bytes = 0;  // 0: enough for any shape of the job's size
  std::uint32_t plan_depth = 4;    // plan-stream slots (forwards published ahead)
  // A plan's record, at most: 65,536 bytes hold 8,186 counts of a torchcomms plan, or 1,023
  // calls of one group of 2 (serve/plan_limits.hpp).
  std::uint32_t plan_bytes = 1 << 16;
  // The most counts a torchcomms plan may have (publish_control); 0: NCCL_RELAY_CONTROL_MAX_CALLS
  // where set, else 128. Every rank's must be the same, and the plan slots must hold it.
  std::uint32_t control_max_calls = 0;
};

struct plane_header {
  std::uint64_t magic = 0;
  std::uint32_t ranks = 0;
  std::uint32_t depth = 0;
  std::uint32_t record_bytes = 0;
  std::uint32_t plan_depth = 0;
  std::uint32_t plan_bytes = 0;
  std::uint32_t pad = 0;
};

struct alignas(128) plane_rank {
  std::int64_t pid = 0;
  std::uint32_t role = 0;
  std::uint32_t left = 0;         // atomic_ref only: non-zero once the rank closed the plane
  std::uint64_t calls_taken = 0;  // atomic_ref only: call-stream records this rank has read
  std::uint64_t plans_taken = 0;  // atomic_ref only: 0 never consumed, 1 consuming, e + 2 done
  // atomic_ref only; the publisher's: 1 + the calls made before its stop while that stop is the
  // last record it published (the ranks that serve returned), else 0.
  std::uint64_t stopped = 0;
  std::uint32_t gave_up = 0;       // atomic_ref only: the errc of the failure it gave up with
  std::int32_t gave_up_root = -1;  // the rank that failure names first
  char gave_up_reason[240] = {};   // written before gave_up (release)
};

// A slot's head; the record follows.
struct alignas(64) slot_head {
  std::uint64_t word = 0;  // atomic_ref only
  std::uint32_t bytes = 0;
  std::uint32_t pad = 0;
};

constexpr std::size_t plane_round_up(std::size_t x, std::size_t to) {
  return (x + to - 1) / to * to;
}

// Bytes a call record of a job of `ranks` may need: a head, the options, N groups of N ranks at
// most and N counts, or a refusal's reason.
constexpr std::uint32_t default_record_bytes(int ranks) {
  const auto n = static_cast<std::size_t>(ranks);
  return static_cast<std::uint32_t>(plane_round_up(128 + 8 * n + 4 * n + 8 * n + 512, 64));
}

class plane_segment {
 public:
  plane_segment() = default;
  plane_segment(const plane_segment&) = delete;
  plane_segment& operator=(const plane_segment&) = delete;
  ~plane_segment() {
    if (base_ != nullptr) ::munmap(base_, bytes_);
  }

  int ranks() const { return static_cast<int>(header().ranks); }
  // The geometry (a copy of the segment's header, which rank 0 wrote and nobody changes).
  const plane_header& header() const { return header_; }
  plane_rank& rank_block(int r) const {
    return reinterpret_cast<plane_rank*>(base_ + head_bytes())[r];
  }
  // Slot i of ring 0 (calls) or 1 (plans): its head, and the record's room after it.
  slot_head& slot(int ring, std::uint64_t index) const {
    const plane_header& h = header();
    const std::size_t stride = slot_stride(ring == 0 ? h.record_bytes : h.plan_bytes);
    const std::size_t first =
        ring == 0 ? rings_offset() : rings_offset() + h.depth * slot_stride(h.record_bytes);
    const std::uint64_t n = ring == 0 ? h.depth : h.plan_depth;
    return *reinterpret_cast<slot_head*>(base_ + first +
                                         static_cast<std::size_t>(index % n) * stride);
  }
  std::span<std::byte> room(slot_head& s, int ring) const {
    return {reinterpret_cast<std::byte*>(&s + 1),
            ring == 0 ? header().record_bytes : header().plan_bytes};
  }

  // Collective over `boot`: rank 0 makes the segment with `geometry` (its values win), every rank
  // maps it, each within `timeout`. Fails on every rank, naming the rank that could not.
  status open(bootstrap& boot, plane_geometry geometry, std::chrono::milliseconds timeout) {
    ranks_ = boot.size();
    if (boot.rank() == 0 && geometry.record_bytes == 0)
      geometry.record_bytes = default_record_bytes(ranks_);
    return relay::detail::share_memory_file(
        boot, "the control plane's segment", "relay-plane",
        [&](relay::detail::unique_fd& memory) { return create(memory, geometry); },
        [&](int fd) { return attach(fd); }, timeout);
  }

 private:
  std::size_t head_bytes() const { return plane_round_up(sizeof(plane_header), 128); }
  std::size_t rings_offset() const {
    return head_bytes() + sizeof(plane_rank) * static_cast<std::size_t>(ranks_);
  }
  static std::size_t slot_stride(std::uint32_t record_bytes) {
    return plane_round_up(sizeof(slot_head) + record_bytes, 64);
  }
  std::size_t total_bytes(const plane_header& h) const {
    return rings_offset() + h.depth * slot_stride(h.record_bytes) +
           h.plan_depth * slot_stride(h.plan_bytes);
  }

  std::string map(int fd) {
    void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return std::string("mmap: ") + std::strerror(errno);
    base_ = static_cast<std::byte*>(p);
    return {};
  }

  std::string create(relay::detail::unique_fd& memory, const plane_geometry& g) {
    if (g.depth < 2 || g.plan_depth < 2 || g.record_bytes < 256 || g.plan_bytes < 256)
      return "a control plane needs rings of 2 slots or more, of 256 bytes or more";
    plane_header h;
    h.ranks = static_cast<std::uint32_t>(ranks_);
    h.depth = g.depth;
    h.record_bytes = g.record_bytes;
    h.plan_depth = g.plan_depth;
    h.plan_bytes = g.plan_bytes;
    bytes_ = total_bytes(h);
    memory = relay::detail::unique_fd(::memfd_create("relay-plane", MFD_CLOEXEC));
    if (memory.get() < 0) return std::string("memfd_create: ") + std::strerror(errno);
    if (::ftruncate(memory.get(), static_cast<off_t>(bytes_)) != 0)
      return "ftruncate(" + std::to_string(bytes_) + "): " + std::strerror(errno);
    if (std::string why = map(memory.get()); !why.empty()) return why;
    for (int r = 0; r < ranks_; ++r)
      new (&rank_block(r)) plane_rank{};
    auto* at = new (base_) plane_header{h};
    std::atomic_ref<std::uint64_t>(at->magic).store(plane_magic, std::memory_order_release);
    header_ = h;
    header_.magic = plane_magic;
    return {};
  }

  std::string attach(int fd) {
    struct stat st {};
    plane_header h;
    if (::fstat(fd, &st) != 0 || static_cast<std::size_t>(st.st_size) < sizeof h ||
        ::pread(fd, &h, sizeof h, 0) != static_cast<ssize_t>(sizeof h))
      return "the control plane rank 0 handed over is too small";
    if (h.magic != plane_magic || h.ranks != static_cast<std::uint32_t>(ranks_))
      return "the control plane rank 0 handed over is not this job's (" + std::to_string(h.ranks) +
             " ranks, this job has " + std::to_string(ranks_) + ")";
    bytes_ = total_bytes(h);
    if (static_cast<std::size_t>(st.st_size) < bytes_)
      return "the control plane rank 0 handed over holds " + std::to_string(st.st_size) +
             " bytes, its header says " + std::to_string(bytes_);
    header_ = h;
    return map(fd);
  }

  std::byte* base_ = nullptr;
  std::size_t bytes_ = 0;
  int ranks_ = 0;
  plane_header header_;
};

}  // namespace relay::serve
