// The shared-memory segment of the shm transport: its layout, and creating and mapping it across
// the processes of a job (shm/transport.hpp runs calls on it).
//
// The segment has no name at any moment: rank 0 makes it with memfd_create and hands the
// descriptor to the other ranks over a Unix-domain socket in the abstract namespace
// (shm/fd_passing.hpp), so a job killed at any point, set-up included, leaves nothing in
// /dev/shm; the memory goes with the last process that maps it. The ranks are on one host by
// construction of the transport.
//
// A process maps a segment once, however many of its ranks use it (hosted helpers,
// docs/hosted-helpers.md): a rank whose process maps the file already shares that mapping.
//
// Layout: a header page; one control block per rank (its own cache lines: a phase counter that
// only its rank writes, its process id, and two call records used alternately by call parity,
// so a rank that entered call k+1 never overwrites what a peer may still be reading of call k);
// then one data area per rank of bytes_per_rank, page-aligned.
#pragma once

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "relay/bootstrap/exchange.hpp"
#include "relay/bootstrap/socket.hpp"
#include "relay/transport/shm/fd_passing.hpp"
#include "relay/transport/transport.hpp"

namespace relay::shm {

inline constexpr std::uint64_t segment_magic = 0x72656c61792d736dull;  // "relay-sm"
inline constexpr std::size_t page = 4096;

// What a rank says about one call when it enters it: its word in the call's agreement
// (transport/agreement.hpp) and, when it refused, the start of its reason.
struct call_record {
  entry_record word;
  char reason[200] = {};
};

// The counters are shared between processes: only lock-free atomics work across address spaces.
static_assert(std::atomic_ref<std::uint64_t>::is_always_lock_free);

struct alignas(256) control {
  std::uint64_t counter = 0;  // sequence << 32 | phases finished (+1); atomic_ref only
  std::int64_t pid = 0;
  call_record calls[2];
  // Non-zero once this rank gave up (a timeout, a peer gone, an abort): every peer's waits see
  // it, whoever they wait on. What it gave up on is written before the flag (release): the
  // failure's root cause (the rank it names and its text) and the rank that found it, so a rank
  // that learns of it from here passes on the cause itself, never a chain of ranks that gave up.
  std::uint32_t broken = 0;          // atomic_ref only; the errc of the failure
  std::uint32_t left = 0;            // atomic_ref only; non-zero once the rank closed its transport
  std::uint32_t broken_code = 0;     // the errc of the failure recorded below
  std::int32_t broken_root = -1;     // the rank the failure names as its cause; -1: none
  std::int32_t broken_seen_by = -1;  // the rank that found it
  std::uint64_t broken_call = 0;     // the call it gave up in (abort: the next it would make)
  char broken_reason[460] = {};
};

struct header {
  std::uint64_t magic = 0;
  std::uint64_t ranks = 0;
  std::uint64_t bytes_per_rank = 0;
  // How the entry of the latest call decided so far ended (atomic_ref only): the call's sequence
  // << 16, and 0x8000 | the rank that failed it, or 0 where every rank entered. The first rank
  // to see every rank enter and the first to give up waiting compare-and-swap it from an earlier
  // call's value, so exactly one of them decides each call, for every rank (shm/transport.hpp).
  alignas(64) std::uint64_t entry_outcome = 0;
};
static_assert(sizeof(header) <= page);

constexpr std::size_t round_up(std::size_t x, std::size_t to) {
  return (x + to - 1) / to * to;
}

// One mapping of a segment's file, unmapped with its last user.
struct mapping {
  std::byte* base = nullptr;
  std::size_t bytes = 0;
  mapping(std::byte* b, std::size_t n) : base(b), bytes(n) {}
  mapping(const mapping&) = delete;
  mapping& operator=(const mapping&) = delete;
  ~mapping() { ::munmap(base, bytes); }
};

// The segments this process maps, by file (device and inode): what its other ranks share.
class mapped_files {
 public:
  static mapped_files& of_process() {
    static mapped_files m;
    return m;
  }
  std::mutex lock;
  // The live mapping of the file `fd` names, or null (under `lock`).
  std::shared_ptr<mapping> find(int fd) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return nullptr;
    for (const auto& [id, m] : maps_)
      if (id == std::pair{st.st_dev, st.st_ino})
        if (std::shared_ptr<mapping> live = m.lock()) return live;
    return nullptr;
  }
  // `m` is the mapping of `fd`'s file (under `lock`); expired entries go.
  void add(int fd, const std::shared_ptr<mapping>& m) {
    std::erase_if(maps_, [](const auto& e) { return e.second.expired(); });
    struct stat st {};
    if (::fstat(fd, &st) == 0) maps_.emplace_back(std::pair{st.st_dev, st.st_ino}, m);
  }

 private:
  std::vector<std::pair<std::pair<dev_t, ino_t>, std::weak_ptr<mapping>>> maps_;
};

// A mapped segment; unmapped with the last segment of this process that maps its file.
class segment {
 public:
  segment() = default;
  segment(const segment&) = delete;
  segment& operator=(const segment&) = delete;

  int ranks() const { return ranks_; }
  // Whether open() mapped it (a segment whose set-up failed may not be).
  bool mapped() const { return base_ != nullptr; }
  std::size_t bytes_per_rank() const { return per_rank_; }
  control& control_of(int rank) const { return reinterpret_cast<control*>(base_ + page)[rank]; }
  header& shared_header() const { return *reinterpret_cast<header*>(base_); }
  std::byte* data_of(int rank) const {
    return base_ + data_offset(ranks_) + static_cast<std::size_t>(rank) * per_rank_;
  }

  static std::size_t data_offset(int ranks) {
    return round_up(page + sizeof(control) * static_cast<std::size_t>(ranks), page);
  }

  // Collective over `boot`: rank 0 creates and initializes the segment and hands it to every
  // rank, each within `timeout`. Fails on every rank, naming the rank that could not map it.
  status open(bootstrap& boot, std::size_t bytes_per_rank, std::chrono::milliseconds timeout) {
    ranks_ = boot.size();
    per_rank_ = round_up(bytes_per_rank, page);
    bytes_ = data_offset(ranks_) + per_rank_ * static_cast<std::size_t>(ranks_);
    // Each rank that has the segment says so in its control block (its pid) before the last
    // exchange, so every rank sees every peer's pid once open returns.
    const int me = boot.rank();
    auto made = [&](detail::unique_fd& memory) {
      std::string why = create(memory);
      if (why.empty()) control_of(me).pid = ::getpid();
      return why;
    };
    auto mapped = [&](int fd) {
      std::string why = attach(fd);
      if (why.empty()) control_of(me).pid = ::getpid();
      return why;
    };
    return detail::share_memory_file(boot, "the shared-memory segment", "relay-shm", made, mapped,
                                     timeout);
  }

 private:
  // Maps `fd` (bytes_ of it) for this process's ranks to share (under mapped_files' lock).
  std::string map(int fd) {
    void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return std::string("mmap: ") + std::strerror(errno);
    base_ = static_cast<std::byte*>(p);
    mapped_ = std::make_shared<mapping>(base_, bytes_);
    mapped_files::of_process().add(fd, mapped_);
    return {};
  }

  // Rank 0: the segment in `memory`, mapped and initialized; or why not.
  std::string create(detail::unique_fd& memory) {
    memory = detail::unique_fd(::memfd_create("relay-shm", MFD_CLOEXEC));
    if (memory.get() < 0) return std::string("memfd_create: ") + std::strerror(errno);
    if (::ftruncate(memory.get(), static_cast<off_t>(bytes_)) != 0)
      return "ftruncate(" + std::to_string(bytes_) + "): " + std::strerror(errno);
    {
      const std::lock_guard<std::mutex> hold(mapped_files::of_process().lock);
      if (std::string why = map(memory.get()); !why.empty()) return why;
    }
    for (int r = 0; r < ranks_; ++r)
      new (&control_of(r)) control{};
    auto* h = new (base_) header{};
    h->ranks = static_cast<std::uint64_t>(ranks_);
    h->bytes_per_rank = per_rank_;
    std::atomic_ref<std::uint64_t>(h->magic).store(segment_magic, std::memory_order_release);
    return {};
  }

  // Another rank: maps the segment rank 0 handed over as `fd`, or shares the mapping of it that
  // another rank of this process made.
  std::string attach(int fd) {
    mapped_files& files = mapped_files::of_process();
    const std::lock_guard<std::mutex> hold(files.lock);
    if (std::shared_ptr<mapping> m = files.find(fd)) {
      const header& h = *reinterpret_cast<const header*>(m->base);
      if (h.ranks != static_cast<std::uint64_t>(ranks_))
        return "the segment rank 0 handed over is not this job's";
      per_rank_ = h.bytes_per_rank;
      bytes_ = m->bytes;
      base_ = m->base;
      mapped_ = std::move(m);
      return {};
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || static_cast<std::size_t>(st.st_size) < page)
      return "the segment rank 0 handed over is too small";
    // The size comes from rank 0 (its RELAY_SHM_BYTES wins over this rank's).
    const auto* probe =
        static_cast<const header*>(::mmap(nullptr, page, PROT_READ, MAP_SHARED, fd, 0));
    if (probe == MAP_FAILED) return std::string("mmap: ") + std::strerror(errno);
    const header h = *probe;
    ::munmap(const_cast<header*>(probe), page);
    if (h.magic != segment_magic || h.ranks != static_cast<std::uint64_t>(ranks_))
      return "the segment rank 0 handed over is not this job's (" + std::to_string(h.ranks) +
             " ranks, this job has " + std::to_string(ranks_) + ")";
    per_rank_ = h.bytes_per_rank;
    bytes_ = data_offset(ranks_) + per_rank_ * static_cast<std::size_t>(ranks_);
    if (static_cast<std::size_t>(st.st_size) < bytes_)
      return "the segment rank 0 handed over holds " + std::to_string(st.st_size) +
             " bytes, its header says " + std::to_string(bytes_);
    return map(fd);
  }

  std::byte* base_ = nullptr;  // mapped_'s
  std::shared_ptr<mapping> mapped_;
  std::size_t bytes_ = 0, per_rank_ = 0;
  int ranks_ = 0;
};

}  // namespace relay::shm
