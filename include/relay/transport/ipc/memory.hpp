// The ipc transport's memory (transport/ipc/transport.hpp): per rank two allocations, each
// exported with cudaIpcGetMemHandle / hipIpcGetMemHandle and opened by every peer, plus the host
// block (transport/ipc/report.hpp: host memory mapped into the device, coherent) where its
// kernels write their report and poll the host's flag.
//
//   the control block  (kernels.hpp, ipc_control) what peers write while this rank's kernels poll
//                      it: their signal words, entry records and words, pull flags, alarms and
//                      reason texts; and the rank's call counter and where its current call's
//                      output is. An allocation of its own that AMD keeps coherent while kernels
//                      run: uncached where the HIP headers have hipDeviceMallocUncached, else
//                      fine-grained (gpu::rt::malloc_uncached); plain device memory on NVIDIA.
//   the area           [outbox | controls | registrations | data]: the outbox the peers'
//                      addresses of this rank's signal word in their control blocks; controls
//                      every rank's control block as this process maps it; the registrations
//                      table where every rank's registered user allocations start in this
//                      process (register_buffer); the data the plan's input, output and scratch
//                      of this rank (plan/area_layout.hpp), where peers push: fine-grained on AMD
//                      (gpu::rt::malloc_fine_grained; docs/amd.md says why).
//
// Opening is collective and all-or-nothing: every rank all-gathers its handle, opens every
// peer's, and all-gathers whether it could; one failure anywhere fails every rank, so no rank
// runs calls with peers that never mapped it. Ranks in one process (threads) use each other's
// pointers directly: a process cannot open its own handle.
//
// Only memory from a plain device allocation can be exported. relay allocates its areas itself;
// user buffers are exported only when the caller registers them (register_buffer, collective,
// like NCCL's ncclCommRegister), and export_check() refuses memory that cannot be exported, with
// a message saying so.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "relay/bootstrap/exchange.hpp"
#include "relay/core/no_copy.hpp"
#include "relay/core/status.hpp"
#include "relay/gpu/handles.hpp"
#include "relay/gpu/runtime.hpp"
#include "relay/transport/ipc/kernels.hpp"
#include "relay/transport/ipc/report.hpp"
#include "relay/transport/ipc/user_memory.hpp"

namespace relay::ipc {

inline constexpr std::size_t control_bytes = (sizeof(ipc_control) + 255) / 256 * 256;
inline constexpr std::size_t outbox_at = 0;
inline constexpr std::size_t controls_at = outbox_at + sizeof(std::uint64_t*) * max_ranks;
inline constexpr std::size_t registrations_at = controls_at + sizeof(void*) * max_ranks;
inline constexpr std::size_t tables_bytes =
    (registrations_at + sizeof(std::uint64_t) * max_ranks * max_registrations + 255) / 256 * 256;

// Whether `p` can be exported to other processes: a status naming why not. Stream-ordered pool
// allocations (cudaMallocAsync) and virtual-memory mappings without a shareable handle cannot be.
inline status export_check(void* p, int device, gpu::rt::ipc_handle_t* handle) {
  if (gpu::rt::error_t e = gpu::rt::ipc_get_handle(handle, p); e != gpu::rt::success) {
    (void)gpu::rt::get_last_error();
    return {errc::invalid_buffer,
            "memory at " + std::to_string(reinterpret_cast<std::uintptr_t>(p)) + " on device " +
                std::to_string(device) + " cannot be exported to other processes (" +
                gpu::rt::describe(e) +
                "): only plain device allocations (cudaMalloc / hipMalloc) can be; stream-ordered "
                "pool and virtual-memory allocations cannot"};
  }
  return {};
}

class area : no_copy {
 public:
  ~area() { close(); }

  // Collective: allocates this rank's area of `data_bytes`, exports it and opens every peer's.
  status open(bootstrap& boot, int device, std::size_t data_bytes,
              std::chrono::milliseconds timeout) {
    device_ = device;
    me_ = boot.rank();
    const int R = boot.size();
    if (R > max_ranks)
      return {errc::invalid_argument, "the ipc transport serves at most " +
                                          std::to_string(max_ranks) + " ranks, not " +
                                          std::to_string(R)};
    const gpu::device_guard keep;
    status mine = allocate(device, data_bytes);
    area_record rec;
    rec.pid = static_cast<std::uint64_t>(::getpid());
    rec.bytes = data_bytes;
    rec.pointer = reinterpret_cast<std::uintptr_t>(base_);
    rec.control_pointer = reinterpret_cast<std::uintptr_t>(control_);
    rec.device = device;
    if (mine) (void)(mine = export_check(base_, device, &rec.handle));
    if (mine) (void)(mine = export_check(control_, device, &rec.control_handle));
    rec.ok = mine.ok() ? 1 : 0;
    std::vector<area_record> all;
    if (status s = exchange(boot, rec, all, timeout, "ipc area record"); !s) return s;
    smallest_bytes_ = data_bytes;
    for (const area_record& r : all)
      smallest_bytes_ = std::min<std::size_t>(smallest_bytes_, r.bytes);
    if (mine) (void)(mine = map_areas(all, rec));
    if (mine) (void)(mine = write_outbox(R));
    // All or nothing: every rank learns whether every rank is ready.
    if (status s = all_ready(boot, mine, timeout); !s) return s;
    ranks_ = R;
    table_.assign(static_cast<std::size_t>(R) * max_registrations, 0);
    return {};
  }

  // Every rank's process id, as its set-up record gave it.
  std::span<const std::uint64_t> pids() const { return pids_; }

  // Collective: registers this rank's [p, p + bytes) (p null or bytes 0: nothing this time) and
  // maps every peer's of the same round. The allocation holding the buffer is exported (a handle
  // names an allocation; peers map it from its start) unless an earlier registration of this rank
  // exported it already. A registration is kept only if every peer mapped it. The status is this
  // rank's own: ok when its buffer is registered (or it passed none), else why not, with nothing
  // kept; a peer's refusal is that peer's (its buffer stays unregistered). Synchronizes the device:
  // not during graph capture. `used`: the slot this rank's buffer was kept in, or -1.
  status register_buffer(bootstrap& boot, void* p, std::size_t bytes,
                         std::chrono::milliseconds timeout, int* used = nullptr) {
    in_step_ = false;
    if (used != nullptr) *used = -1;
    const gpu::device_guard keep;
    if (gpu::rt::error_t e = gpu::rt::set_device(device_); e != gpu::rt::success)
      return gpu::failure("selecting the device", device_, e);
    registration_record rec;
    rec.pid = static_cast<std::uint64_t>(::getpid());
    status mine;
    if (p != nullptr && bytes > 0)
      (void)(mine = prepare(p, bytes, rec.slot, rec.start, rec.alias, rec.handle));
    if (!mine) rec.slot = -1;
    std::vector<registration_record> all;
    if (status s = exchange(boot, rec, all, timeout, "registration"); !s) return s;
    registration_round r;
    if (status s = map_round(all, rec.pid, r); !s) return s;
    std::vector<std::uint64_t> failed;  // every rank's bits of the registrations it could not map
    if (status s = exchange(boot, r.failed, failed, timeout, "mapping outcome"); !s) return s;
    std::uint64_t unmapped = 0;  // bit q: some rank could not map rank q's registration
    for (std::uint64_t f : failed)
      unmapped |= f;
    const int kept = keep_round(r, unmapped, p, bytes);
    if (used != nullptr) *used = kept;
    if (rec.slot >= 0 && kept < 0)
      mine = {errc::peer_error, "rank(s) " + ranks_with_bit(failed, me_) +
                                    " could not map this rank's registered buffer"};
    if (status s = upload_table(); !s) return s;
    in_step_ = true;
    return mine;
  }

  // Collective: ends this rank's registration that begins at `p` (null: none this time) and every
  // peer's of the same round, after every rank's device is idle (no call in flight uses them).
  // `hidden`: slots (bit k) that are not looked at for `p`.
  status deregister_buffer(bootstrap& boot, void* p, std::chrono::milliseconds timeout,
                           std::uint32_t hidden = 0) {
    in_step_ = false;
    const gpu::device_guard keep;
    if (gpu::rt::error_t e = gpu::rt::set_device(device_); e != gpu::rt::success)
      return gpu::failure("selecting the device", device_, e);
    status mine;
    std::int32_t slot = -1;
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    for (std::size_t i = 0; i < ranges_.size() && p != nullptr; ++i)
      if (ranges_[i].end > ranges_[i].begin && ranges_[i].begin == a && ((hidden >> i) & 1) == 0)
        slot = static_cast<int>(i);
    if (p != nullptr && slot < 0)
      mine = {errc::invalid_argument,
              "memory at " + std::to_string(a) + " is not a registered buffer of this rank"};
    // Before the exchange: once every rank contributed, no rank has work in flight.
    if (gpu::rt::error_t e = gpu::rt::device_synchronize(); e != gpu::rt::success)
      return gpu::failure("waiting before a deregistration", device_, e);
    std::vector<std::int32_t> slots;
    if (status s = exchange(boot, slot, slots, timeout, "deregistered slot"); !s) return s;
    for (int q = 0; q < ranks_; ++q) {
      const std::int32_t k = slots[static_cast<std::size_t>(q)];
      if (k < 0 || k >= max_registrations) continue;
      table_[static_cast<std::size_t>(q) * max_registrations + static_cast<std::size_t>(k)] = 0;
      if (q == me_) {
        ranges_[static_cast<std::size_t>(k)] = {};
        starts_[static_cast<std::size_t>(k)] = 0;
        continue;
      }
      const auto it = std::find_if(theirs_.begin(), theirs_.end(), [&](const peer_registration& r) {
        return r.rank == q && r.slot == k;
      });
      if (it == theirs_.end()) continue;
      if (it->opened) {
        // Another registration of the same allocation keeps the mapping.
        const auto heir =
            std::find_if(theirs_.begin(), theirs_.end(), [&](const peer_registration& r) {
              return &r != &*it && r.rank == q && r.start == it->start;
            });
        if (heir != theirs_.end())
          heir->opened = true;
        else
          (void)gpu::rt::ipc_close(reinterpret_cast<void*>(it->start));
      }
      theirs_.erase(it);
    }
    if (status s = upload_table(); !s) return s;
    in_step_ = true;
    return mine;
  }

  // Whether the last registration or deregistration ran to its end on this rank: its rounds
  // completed and the device's table holds them. Where one did not (a round timed out, a peer
  // never came, a runtime call failed), this rank's rounds and its peers' are out of step: a
  // later round would pair this rank's records with another round's, so the transport leaves.
  bool in_step() const { return in_step_; }

  // This rank's registrations, as registered (find_registration), and where the allocation of
  // registration `slot` starts (the origin of the offset its calls publish).
  std::span<const registration> registered() const { return ranges_; }
  std::uintptr_t registered_start(int slot) const {
    return starts_[static_cast<std::size_t>(slot)];
  }

  // Unmaps the peers' areas and frees this rank's (after the device is idle).
  void close() {
    const gpu::device_guard keep;
    (void)gpu::rt::set_device(device_);
    (void)gpu::rt::device_synchronize();
    for (peer_registration& r : theirs_)
      if (r.opened) (void)gpu::rt::ipc_close(reinterpret_cast<void*>(r.start));
    theirs_.clear();
    ranges_ = {};
    starts_ = {};
    table_.clear();
    if (leave_ != nullptr) (void)gpu::rt::stream_destroy(leave_);
    leave_ = nullptr;
    for (std::size_t q = 0; q < peers_.size(); ++q)
      if (opened_[q]) {
        (void)gpu::rt::ipc_close(peers_[q]);
        (void)gpu::rt::ipc_close(controls_[q]);
      }
    peers_.clear();
    controls_.clear();
    opened_.clear();
    if (base_ != nullptr) (void)gpu::rt::free(base_);
    if (control_ != nullptr) (void)gpu::rt::free(control_);
    if (host_ != nullptr) (void)gpu::rt::host_free(host_);
    base_ = nullptr;
    control_ = nullptr;
    host_ = nullptr;
    host_device_ = nullptr;
    ranks_ = 0;
  }

  int ranks() const { return ranks_; }
  std::size_t data_bytes() const { return data_bytes_; }
  // The smallest data area of any rank (their set-up records'): one number for the job.
  std::size_t smallest_data_bytes() const { return smallest_bytes_; }
  // Rank q's control block as this process addresses it.
  ipc_control* control_of(int q) const { return controls_[static_cast<std::size_t>(q)]; }
  // Rank q's data area as this process addresses it.
  unsigned char* data(int q) const { return peers_[static_cast<std::size_t>(q)] + tables_bytes; }

  ipc_env env(std::uint64_t timeout_ticks, std::uint64_t ticks_per_ms) const {
    ipc_env e;
    e.me = control_;
    e.outbox = reinterpret_cast<std::uint64_t* const*>(base_ + outbox_at);
    e.controls = reinterpret_cast<ipc_control* const*>(base_ + controls_at);
    e.registrations = reinterpret_cast<const std::uint64_t*>(base_ + registrations_at);
    e.host = host_device_;
    e.ranks = static_cast<std::uint32_t>(ranks_);
    e.rank = static_cast<std::uint32_t>(me_);
    e.timeout_ticks = timeout_ticks;
    e.scan_ticks = std::max<std::uint64_t>(1, ticks_per_ms / 50);  // 20 us
    e.host_ticks = std::max<std::uint64_t>(1, ticks_per_ms);       // 1 ms
    return e;
  }
  // The pull form's device trace (ipc::host_block::trace) as the device last wrote it.
  void trace(std::uint64_t (&out)[ipc::trace_calls][ipc::trace_points]) const {
    for (int c = 0; c < ipc::trace_calls; ++c)
      for (int i = 0; i < ipc::trace_points; ++i)
        out[c][i] =
            host_ == nullptr ? 0 : *static_cast<const volatile std::uint64_t*>(&host_->trace[c][i]);
  }
  // The report as the device last wrote it (code first; see ipc::report).
  ipc::report report() const { return host_ == nullptr ? ipc::report{} : settled(host_->rep); }
  // The failed calls the device recorded so far (ipc::host_block::failed_written), and the
  // record of failed call `n` (0, 1, ...: the ring's [n % slots]) as it is now: `kept` false where
  // the device has written over it since (the reader fell more than the ring behind).
  std::uint64_t failed_written() const {
    if (host_ == nullptr) return 0;
    const std::uint64_t n = *static_cast<const volatile std::uint64_t*>(&host_->failed_written);
    std::atomic_thread_fence(std::memory_order_acquire);  // the records it counts
    return n;
  }
  ipc::failed_call failed(std::uint64_t n, bool& kept) const {
    ipc::failed_call f;
    std::memcpy(&f, const_cast<const ipc::failed_call*>(&host_->failed[n % ipc::failed_call_slots]),
                sizeof f);
    std::atomic_thread_fence(std::memory_order_acquire);
    kept = failed_written() < n + ipc::failed_call_slots;
    return f;
  }
  // What this rank's host raised for its kernels (code report_ok: nothing).
  ipc::alarm_record raised() const {
    return host_ == nullptr ? ipc::alarm_record{} : settled(host_->raised);
  }
  // Tells this rank's kernels to give up (they poll it while they wait): the fields, then the
  // code. One writer at a time (the transport serializes its watchdog and abort()).
  void raise(const ipc::alarm_record& a) {
    if (host_ == nullptr) return;
    ipc::alarm_record fields = a;
    fields.code = ipc::report_ok;
    std::memcpy(const_cast<ipc::alarm_record*>(&host_->raised), &fields, sizeof fields);
    std::atomic_thread_fence(std::memory_order_release);
    static_cast<volatile ipc::alarm_record*>(&host_->raised)->code = a.code;
  }
  // The text a refused call's entry passes to every peer (written before its launch).
  void set_own_text(std::string_view text) {
    if (host_ != nullptr) ipc::put_text(host_->own_text, text);
  }

  // abort(): this rank's alarm, its text and its dead mark into every peer's control block, by
  // copies on a stream of its own (no kernel: a peer is told also when this rank runs nothing and
  // its device is full). Waits for them up to `wait`; best effort.
  void tell_peers(const ipc::alarm_record& a, std::string_view text,
                  std::chrono::milliseconds wait) {
    if (host_ == nullptr || ranks_ == 0) return;
    const gpu::device_guard keep;
    if (gpu::rt::set_device(device_) != gpu::rt::success) return;
    if (leave_ == nullptr && gpu::rt::stream_create(&leave_) != gpu::rt::success) {
      leave_ = nullptr;
      return;
    }
    host_->leaving = a;
    ipc::put_text(host_->leaving_text, text);
    host_->dead = signal_dead;
    const auto until = std::chrono::steady_clock::now() + wait;
    auto landed = [&] {  // what was copied so far is in place (copies in order may land out of it)
      while (gpu::rt::stream_query(leave_) == gpu::rt::not_ready &&
             std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::microseconds(20));
    };
    auto control = [&](int q) { return controls_[static_cast<std::size_t>(q)]; };
    // The alarm and the text, landed, before the mark that makes the peer read them.
    for (int q = 0; q < ranks_; ++q)
      if (q != me_) {
        (void)gpu::rt::memcpy_async(&control(q)->alarms[me_], &host_->leaving,
                                    sizeof(ipc::alarm_record), leave_);
        (void)gpu::rt::memcpy_async(control(q)->texts[me_], host_->leaving_text, ipc::text_bytes,
                                    leave_);
      }
    landed();
    for (int q = 0; q < ranks_; ++q)
      if (q != me_)
        (void)gpu::rt::memcpy_async(&control(q)->signal[me_], &host_->dead, sizeof(std::uint64_t),
                                    leave_);
    landed();
    (void)gpu::rt::get_last_error();
  }

 private:
  // What every peer needs of a rank's area: who it is, the size, the pointer (for ranks in this
  // process) and the handle.
  struct area_record {
    std::uint64_t pid = 0, bytes = 0, pointer = 0, control_pointer = 0;
    std::int32_t device = 0, ok = 0;
    gpu::rt::ipc_handle_t handle{}, control_handle{};
  };

  // Every rank's area mapped here from its record in `all` (`mine`: this rank's own).
  status map_areas(const std::vector<area_record>& all, const area_record& mine) {
    const std::size_t R = all.size();
    peers_.assign(R, nullptr);
    controls_.assign(R, nullptr);
    opened_.assign(R, false);
    pids_.assign(R, 0);
    std::string failed;
    for (std::size_t q = 0; q < R; ++q) {
      const area_record& r = all[q];
      pids_[q] = r.pid;
      if (r.ok == 0) {
        failed += (failed.empty() ? "" : ", ") + std::to_string(q);
        continue;
      }
      if (r.bytes != mine.bytes)
        return {errc::mismatch, "rank " + std::to_string(q) + " registered " +
                                    std::to_string(r.bytes) + " bytes per rank; this rank " +
                                    std::to_string(mine.bytes)};
      if (static_cast<int>(q) == me_) {
        peers_[q] = base_;
        controls_[q] = control_;
      } else if (r.pid == mine.pid) {
        if (status s = reach(r.device, static_cast<int>(q)); !s) return s;
        peers_[q] = reinterpret_cast<unsigned char*>(r.pointer);
        controls_[q] = reinterpret_cast<ipc_control*>(r.control_pointer);
      } else {
        void* p = nullptr;
        void* c = nullptr;
        gpu::rt::error_t e = gpu::rt::ipc_open(&p, r.handle);
        if (e == gpu::rt::success &&
            (e = gpu::rt::ipc_open(&c, r.control_handle)) != gpu::rt::success)
          (void)gpu::rt::ipc_close(p);
        if (e != gpu::rt::success)
          return gpu::failure(("opening rank " + std::to_string(q) +
                               "'s registered memory (device " + std::to_string(r.device) + ")")
                                  .c_str(),
                              device_, e);
        peers_[q] = static_cast<unsigned char*>(p);
        controls_[q] = static_cast<ipc_control*>(c);
        opened_[q] = true;
      }
    }
    if (!failed.empty())
      return {errc::peer_error, "rank(s) " + failed + " could not register their ipc memory"};
    return {};
  }

  // This rank's kernels write rank q's memory on `device` (a rank of this process: hosted
  // helpers, docs/hosted-helpers.md) through its pointer: peer access from this rank's device to
  // that one, enabled here, or why it cannot be.
  status reach(int device, int q) const {
    if (device == device_) return {};
    int can = 0;
    if (gpu::rt::error_t e = gpu::rt::can_access_peer(&can, device_, device); e != gpu::rt::success)
      return gpu::failure("asking for peer access", device_, e);
    if (can == 0)
      return {errc::unsupported,
              "device " + std::to_string(device_) + " cannot reach device " +
                  std::to_string(device) + " (rank " + std::to_string(q) +
                  "'s, in this process) by peer access: ranks of one process must be on devices "
                  "that reach each other"};
    if (gpu::rt::error_t e = gpu::rt::enable_peer_access(device); e != gpu::rt::success)
      return gpu::failure(("enabling peer access to device " + std::to_string(device)).c_str(),
                          device_, e);
    return {};
  }

  // Collective: `mine`, else whether every rank is ready (each rank's `mine` was ok).
  static status all_ready(bootstrap& boot, const status& mine, std::chrono::milliseconds timeout) {
    const std::int32_t ready = mine.ok() ? 1 : 0;
    std::vector<std::int32_t> all;
    if (status s = exchange(boot, ready, all, timeout, "readiness"); !s) return s;
    if (!mine) return mine;
    std::string unready;
    for (std::size_t q = 0; q < all.size(); ++q) {
      if (all[q] == 0) unready += (unready.empty() ? "" : ", ") + std::to_string(q);
    }
    if (!unready.empty())
      return {errc::peer_error, "rank(s) " + unready + " could not map their peers' ipc memory"};
    return {};
  }

  // One rank's part of a registration round (register_buffer).
  struct registration_record {
    std::uint64_t pid = 0, start = 0;
    std::int32_t slot = -1, alias = -1;  // alias: the slot that exported this allocation
    gpu::rt::ipc_handle_t handle{};
  };
  // A round as this rank saw it: every rank's record, each peer's registration as mapped here
  // (0: not), whether this process opened it, and which it could not map (bit q: rank q's).
  struct registration_round {
    std::vector<registration_record> recs;
    std::vector<std::uintptr_t> mapped;
    std::vector<bool> opened;
    std::uint64_t failed = 0;
  };

  // Every peer's registration of the round in `all` mapped here: through the allocation an
  // earlier slot of it exported, directly in this process, or by opening its handle.
  status map_round(const std::vector<registration_record>& all, std::uint64_t pid,
                   registration_round& r) {
    const std::size_t R = all.size();
    r.recs = all;
    r.mapped.assign(R, 0);
    r.opened.assign(R, false);
    for (std::size_t i = 0; i < R; ++i) {
      const registration_record& x = r.recs[i];
      if (x.slot < 0 || static_cast<int>(i) == me_) continue;
      if (x.alias >= 0) {
        r.mapped[i] = table_[i * max_registrations + static_cast<std::size_t>(x.alias)];
      } else if (x.pid == pid) {
        r.mapped[i] = x.start;
      } else {
        void* local = nullptr;
        if (gpu::rt::ipc_open(&local, x.handle) == gpu::rt::success) {
          r.mapped[i] = reinterpret_cast<std::uintptr_t>(local);
          r.opened[i] = true;
        } else {
          (void)gpu::rt::get_last_error();
        }
      }
      if (r.mapped[i] == 0) r.failed |= std::uint64_t{1} << i;
    }
    return {};
  }

  // The round's registrations that every rank mapped (bit q of `unmapped` clear) kept, the others
  // let go; this rank's own is [p, p + bytes). Returns the slot it was kept in, or -1.
  int keep_round(const registration_round& r, std::uint64_t unmapped, void* p, std::size_t bytes) {
    int kept = -1;
    for (std::size_t i = 0; i < r.recs.size(); ++i) {
      const registration_record& x = r.recs[i];
      if (x.slot < 0) continue;
      const bool live = ((unmapped >> i) & 1) == 0;
      const auto k = static_cast<std::size_t>(x.slot);
      if (static_cast<int>(i) == me_) {
        if (!live) continue;
        const auto a = reinterpret_cast<std::uintptr_t>(p);
        ranges_[k] = {a, a + bytes};
        starts_[k] = x.start;
        table_[i * max_registrations + k] = x.start;
        kept = x.slot;
      } else if (live) {
        table_[i * max_registrations + k] = r.mapped[i];
        theirs_.push_back({static_cast<int>(i), x.slot, r.mapped[i], r.opened[i]});
      } else if (r.opened[i]) {
        (void)gpu::rt::ipc_close(reinterpret_cast<void*>(r.mapped[i]));
      }
    }
    return kept;
  }

  // The ranks whose word in `words` has bit `bit` set, as "1, 3".
  static std::string ranks_with_bit(const std::vector<std::uint64_t>& words, int bit) {
    std::string who;
    for (std::size_t q = 0; q < words.size(); ++q) {
      if (((words[q] >> bit) & 1) != 0) who += (who.empty() ? "" : ", ") + std::to_string(q);
    }
    return who;
  }

  status allocate(int device, std::size_t data_bytes) {
    if (gpu::rt::error_t e = gpu::rt::set_device(device); e != gpu::rt::success)
      return gpu::failure("selecting the device", device, e);
    void* p = nullptr;
    if (gpu::rt::error_t e = gpu::rt::malloc_fine_grained(&p, tables_bytes + data_bytes);
        e != gpu::rt::success)
      return gpu::failure(("allocating " + std::to_string(tables_bytes + data_bytes) +
                           " bytes of registered memory")
                              .c_str(),
                          device, e);
    base_ = static_cast<unsigned char*>(p);
    data_bytes_ = data_bytes;
    void* c = nullptr;
    if (gpu::rt::error_t e = gpu::rt::malloc_uncached(&c, control_bytes); e != gpu::rt::success)
      return gpu::failure(
          ("allocating the control block (" + std::string(gpu::rt::uncached_kind) + ")").c_str(),
          device, e);
    control_ = static_cast<ipc_control*>(c);
    // Signal words start at 0 (no call entered), and the tables empty (no registration), before
    // any peer can see them.
    if (gpu::rt::error_t e = gpu::rt::memset(control_, 0, control_bytes); e != gpu::rt::success)
      return gpu::failure("clearing the control block", device, e);
    if (gpu::rt::error_t e = gpu::rt::memset(base_, 0, tables_bytes); e != gpu::rt::success)
      return gpu::failure("clearing the registrations table", device, e);
    void* host = nullptr;
    if (gpu::rt::error_t e = gpu::rt::host_alloc_mapped(&host, sizeof(ipc::host_block));
        e != gpu::rt::success)
      return gpu::failure("allocating the mapped host block", device, e);
    host_ = new (host) ipc::host_block{};
    void* d = nullptr;
    if (gpu::rt::error_t e = gpu::rt::device_address(&d, host); e != gpu::rt::success)
      return gpu::failure("mapping the host block", device, e);
    host_device_ = static_cast<ipc::host_block*>(d);
    if (gpu::rt::error_t e = gpu::rt::device_synchronize(); e != gpu::rt::success)
      return gpu::failure("clearing the control block", device, e);
    return {};
  }

  // outbox[q] = the address of signal[me] in rank q's control block: where this rank publishes
  // to q; controls[q] = rank q's control block.
  status write_outbox(int R) {
    std::vector<std::uint64_t*> outbox(static_cast<std::size_t>(R), nullptr);
    std::vector<void*> controls(static_cast<std::size_t>(R), nullptr);
    for (int q = 0; q < R; ++q) {
      ipc_control* c = controls_[static_cast<std::size_t>(q)];
      controls[static_cast<std::size_t>(q)] = c;
      if (q != me_) outbox[static_cast<std::size_t>(q)] = &c->signal[me_];
    }
    if (gpu::rt::error_t e = gpu::rt::upload(base_ + outbox_at, outbox.data(),
                                             outbox.size() * sizeof(std::uint64_t*));
        e != gpu::rt::success)
      return gpu::failure("writing the outbox", device_, e);
    if (gpu::rt::error_t e =
            gpu::rt::upload(base_ + controls_at, controls.data(), controls.size() * sizeof(void*));
        e != gpu::rt::success)
      return gpu::failure("writing the peers' control blocks", device_, e);
    return {};
  }

  // A free slot for [p, p + bytes), its allocation's start, and either the earlier slot that
  // exported that allocation or a fresh handle; else why the buffer cannot be registered.
  status prepare(void* p, std::size_t bytes, std::int32_t& slot, std::uint64_t& start,
                 std::int32_t& alias, gpu::rt::ipc_handle_t& handle) const {
    const std::string at = "memory at " + std::to_string(reinterpret_cast<std::uintptr_t>(p));
    for (std::size_t i = 0; i < ranges_.size() && slot < 0; ++i)
      if (ranges_[i].end == 0) slot = static_cast<std::int32_t>(i);
    if (slot < 0)
      return {errc::invalid_argument, "this rank has " + std::to_string(max_registrations) +
                                          " registered buffers, the most it may; deregister one"};
    int device = -1;
    if (gpu::rt::classify(p, &device) != gpu::rt::pointer_kind::device || device != device_)
      return {errc::invalid_buffer,
              at + " is not device memory of device " + std::to_string(device_) +
                  " (this rank's): only memory of the rank's own device can be registered"};
    void* base = nullptr;
    std::size_t size = 0;
    if (gpu::rt::error_t e = gpu::rt::address_range(&base, &size, p); e != gpu::rt::success) {
      (void)gpu::rt::get_last_error();
      return {errc::invalid_buffer, at + " has no allocation the runtime can name (" +
                                        gpu::rt::describe(e) + "), so it cannot be exported"};
    }
    start = reinterpret_cast<std::uintptr_t>(base);
    if (reinterpret_cast<std::uintptr_t>(p) + bytes > start + size)
      return {errc::invalid_buffer,
              at + ": " + std::to_string(bytes) + " bytes run past the end of its allocation (" +
                  std::to_string(size) + " bytes from " + std::to_string(start) + ")"};
    for (std::size_t i = 0; i < starts_.size(); ++i)
      if (ranges_[i].end != 0 && starts_[i] == start) {
        alias = static_cast<std::int32_t>(i);
        return {};
      }
    return export_check(base, device_, &handle);
  }

  // A struct of the host block whose writer sets `code` last: empty until it does, then all of it.
  template <class T>
  static T settled(const T& field) {
    T out;
    if (static_cast<const volatile T&>(field).code == ipc::report_ok) return out;
    std::atomic_thread_fence(std::memory_order_acquire);
    std::memcpy(&out, &field, sizeof out);
    return out;
  }

  status upload_table() {
    if (table_.empty()) return {};
    if (gpu::rt::error_t e = gpu::rt::device_synchronize(); e != gpu::rt::success)
      return gpu::failure("waiting before updating the registrations", device_, e);
    if (gpu::rt::error_t e = gpu::rt::upload(base_ + registrations_at, table_.data(),
                                             table_.size() * sizeof(std::uint64_t));
        e != gpu::rt::success)
      return gpu::failure("writing the registrations table", device_, e);
    return {};
  }

  struct peer_registration {
    int rank = 0;
    std::int32_t slot = 0;
    std::uintptr_t start = 0;  // mapped here
    bool opened = false;       // this process opened the handle (and closes it)
  };

  int device_ = 0, me_ = 0, ranks_ = 0;
  std::size_t data_bytes_ = 0;
  std::size_t smallest_bytes_ = 0;
  std::array<registration, max_registrations> ranges_{};  // this rank's; empty: a free slot
  std::array<std::uintptr_t, max_registrations> starts_{};
  std::vector<peer_registration> theirs_;
  bool in_step_ = true;
  std::vector<std::uint64_t> table_;    // [ranks][max_registrations], as at registrations_at
  unsigned char* base_ = nullptr;       // this rank's area: the tables, then the data
  ipc_control* control_ = nullptr;      // this rank's control block
  std::vector<unsigned char*> peers_;   // every rank's area as this process maps it
  std::vector<ipc_control*> controls_;  // every rank's control block as this process maps it
  std::vector<bool> opened_;            // this process opened rank q's handles (and closes them)
  std::vector<std::uint64_t> pids_;
  ipc::host_block* host_ = nullptr;         // as the host addresses it
  ipc::host_block* host_device_ = nullptr;  // as the device does
  gpu::rt::stream_t leave_ = nullptr;       // abort()'s copies
};

}  // namespace relay::ipc
