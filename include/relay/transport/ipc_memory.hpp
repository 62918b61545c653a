// The ipc transport's memory (transport/ipc.hpp): one registered area per rank, exported with
// cudaIpcGetMemHandle / hipIpcGetMemHandle and opened by every peer, plus the host-mapped report
// its kernels write when they give up.
//
// An area is [control block | outbox | data]: the control block (gpu/ipc_kernels.hpp,
// ipc_control) holds the signal words that peers write and the rank's call counter; the outbox
// the peers' addresses of this rank's signal word in their areas; the data the plan's input,
// output and scratch of this rank (plan/area_layout.hpp), where peers push.
//
// Opening is collective and all-or-nothing: every rank all-gathers its handle, opens every
// peer's, and all-gathers whether it could; one failure anywhere fails every rank, so no rank
// runs calls with peers that never mapped it. Ranks in one process (threads) use each other's
// pointers directly: a process cannot open its own handle.
//
// Only memory from a plain device allocation can be exported. relay allocates its areas itself,
// so user buffers never need to be (they are staged through the area, see transport/ipc.hpp);
// export_check() below is what refuses memory that cannot be exported, with a message saying so.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "relay/bootstrap/bootstrap.hpp"
#include "relay/core/status.hpp"
#include "relay/gpu/handles.hpp"
#include "relay/gpu/ipc_kernels.hpp"
#include "relay/gpu/runtime.hpp"

namespace relay::ipc {

inline constexpr std::size_t control_bytes =
    (sizeof(gpu::ipc_control) + sizeof(std::uint64_t*) * max_ranks + 255) / 256 * 256;

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

class area {
 public:
  area() = default;
  area(const area&) = delete;
  area& operator=(const area&) = delete;
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
    // What every peer needs: who we are, the size, the pointer (for ranks in this process) and
    // the handle.
    struct record {
      std::uint64_t pid = 0, bytes = 0, pointer = 0;
      std::int32_t device = 0, ok = 0;
      gpu::rt::ipc_handle_t handle{};
    } rec;
    rec.pid = static_cast<std::uint64_t>(::getpid());
    rec.bytes = data_bytes;
    rec.pointer = reinterpret_cast<std::uintptr_t>(base_);
    rec.device = device;
    if (mine) (void)(mine = export_check(base_, device, &rec.handle));
    rec.ok = mine.ok() ? 1 : 0;
    std::vector<std::vector<std::byte>> all;
    if (status s = boot.all_gather(std::as_bytes(std::span(&rec, 1)), all, timeout); !s) return s;
    peers_.assign(static_cast<std::size_t>(R), nullptr);
    opened_.assign(static_cast<std::size_t>(R), false);
    std::string failed;
    for (int q = 0; q < R && mine; ++q) {
      record r;
      if (all[static_cast<std::size_t>(q)].size() != sizeof r) {
        mine = {errc::mismatch, "rank " + std::to_string(q) + " sent a malformed ipc record"};
        break;
      }
      std::memcpy(&r, all[static_cast<std::size_t>(q)].data(), sizeof r);
      if (r.ok == 0) {
        failed += (failed.empty() ? "" : ", ") + std::to_string(q);
        continue;
      }
      if (r.bytes != data_bytes) {
        mine = {errc::mismatch, "rank " + std::to_string(q) + " registered " +
                                    std::to_string(r.bytes) + " bytes per rank; this rank " +
                                    std::to_string(data_bytes)};
        break;
      }
      if (q == me_) {
        peers_[static_cast<std::size_t>(q)] = base_;
      } else if (r.pid == rec.pid) {
        peers_[static_cast<std::size_t>(q)] = reinterpret_cast<unsigned char*>(r.pointer);
      } else {
        void* p = nullptr;
        if (gpu::rt::error_t e = gpu::rt::ipc_open(&p, r.handle); e != gpu::rt::success) {
          mine = gpu::failure(("opening rank " + std::to_string(q) +
                               "'s registered memory (device " + std::to_string(r.device) + ")")
                                  .c_str(),
                              device, e);
          break;
        }
        peers_[static_cast<std::size_t>(q)] = static_cast<unsigned char*>(p);
        opened_[static_cast<std::size_t>(q)] = true;
      }
    }
    if (mine && !failed.empty())
      mine = {errc::peer_error, "rank(s) " + failed + " could not register their ipc memory"};
    if (mine) (void)(mine = write_outbox(R));
    // All or nothing: every rank learns whether every rank is ready.
    const std::int32_t ready = mine.ok() ? 1 : 0;
    if (status s = boot.all_gather(std::as_bytes(std::span(&ready, 1)), all, timeout); !s) return s;
    if (!mine) return mine;
    std::string unready;
    for (int q = 0; q < R; ++q) {
      std::int32_t v = 0;
      if (all[static_cast<std::size_t>(q)].size() == sizeof v)
        std::memcpy(&v, all[static_cast<std::size_t>(q)].data(), sizeof v);
      if (v == 0) unready += (unready.empty() ? "" : ", ") + std::to_string(q);
    }
    if (!unready.empty())
      return {errc::peer_error, "rank(s) " + unready + " could not map their peers' ipc memory"};
    ranks_ = R;
    return {};
  }

  // Unmaps the peers' areas and frees this rank's (after the device is idle).
  void close() {
    const gpu::device_guard keep;
    (void)gpu::rt::set_device(device_);
    (void)gpu::rt::device_synchronize();
    for (std::size_t q = 0; q < peers_.size(); ++q)
      if (opened_[q]) (void)gpu::rt::ipc_close(peers_[q]);
    peers_.clear();
    opened_.clear();
    if (base_ != nullptr) (void)gpu::rt::free(base_);
    if (report_host_ != nullptr) (void)gpu::rt::host_free(report_host_);
    base_ = nullptr;
    report_host_ = nullptr;
    report_device_ = nullptr;
    ranks_ = 0;
  }

  int ranks() const { return ranks_; }
  std::size_t data_bytes() const { return data_bytes_; }
  // Rank q's data area as this process addresses it.
  unsigned char* data(int q) const { return peers_[static_cast<std::size_t>(q)] + control_bytes; }

  gpu::ipc_env env(std::uint64_t timeout_ticks) const {
    gpu::ipc_env e;
    e.me = reinterpret_cast<gpu::ipc_control*>(base_);
    e.outbox = reinterpret_cast<std::uint64_t* const*>(base_ + sizeof(gpu::ipc_control));
    e.report = report_device_;
    e.ranks = static_cast<std::uint32_t>(ranks_);
    e.timeout_ticks = timeout_ticks;
    return e;
  }
  // The report as the device last wrote it (code first; see gpu::ipc_report).
  gpu::ipc_report report() const {
    gpu::ipc_report r;
    if (report_host_ == nullptr) return r;
    const volatile gpu::ipc_report* v = report_host_;
    r.code = v->code;
    if (r.code == gpu::ipc_ok) return r;
    std::atomic_thread_fence(std::memory_order_acquire);
    r.peer = v->peer;
    r.phase = v->phase;
    r.step = v->step;
    r.reduce = v->reduce;
    r.call = v->call;
    return r;
  }

 private:
  status allocate(int device, std::size_t data_bytes) {
    if (gpu::rt::error_t e = gpu::rt::set_device(device); e != gpu::rt::success)
      return gpu::failure("selecting the device", device, e);
    void* p = nullptr;
    if (gpu::rt::error_t e = gpu::rt::malloc(&p, control_bytes + data_bytes); e != gpu::rt::success)
      return gpu::failure(("allocating " + std::to_string(control_bytes + data_bytes) +
                           " bytes of registered memory")
                              .c_str(),
                          device, e);
    base_ = static_cast<unsigned char*>(p);
    data_bytes_ = data_bytes;
    // Signal words start at 0 (no call entered) before any peer can see the area.
    if (gpu::rt::error_t e = gpu::rt::memset(base_, 0, control_bytes); e != gpu::rt::success)
      return gpu::failure("clearing the control block", device, e);
    void* host = nullptr;
    if (gpu::rt::error_t e = gpu::rt::host_alloc_mapped(&host, sizeof(gpu::ipc_report));
        e != gpu::rt::success)
      return gpu::failure("allocating the mapped report", device, e);
    report_host_ = static_cast<gpu::ipc_report*>(host);
    *report_host_ = gpu::ipc_report{};
    void* d = nullptr;
    if (gpu::rt::error_t e = gpu::rt::device_address(&d, host); e != gpu::rt::success)
      return gpu::failure("mapping the report", device, e);
    report_device_ = static_cast<gpu::ipc_report*>(d);
    if (gpu::rt::error_t e = gpu::rt::device_synchronize(); e != gpu::rt::success)
      return gpu::failure("clearing the control block", device, e);
    return {};
  }

  // outbox[q] = the address of signal[me] in rank q's area: where this rank publishes to q.
  status write_outbox(int R) {
    std::vector<std::uint64_t*> outbox(static_cast<std::size_t>(R), nullptr);
    for (int q = 0; q < R; ++q)
      if (q != me_)
        outbox[static_cast<std::size_t>(q)] =
            &reinterpret_cast<gpu::ipc_control*>(peers_[static_cast<std::size_t>(q)])->signal[me_];
    if (gpu::rt::error_t e = gpu::rt::upload(base_ + sizeof(gpu::ipc_control), outbox.data(),
                                             outbox.size() * sizeof(std::uint64_t*));
        e != gpu::rt::success)
      return gpu::failure("writing the outbox", device_, e);
    return {};
  }

  int device_ = 0, me_ = 0, ranks_ = 0;
  std::size_t data_bytes_ = 0;
  unsigned char* base_ = nullptr;
  std::vector<unsigned char*> peers_;
  std::vector<bool> opened_;
  gpu::ipc_report* report_host_ = nullptr;
  gpu::ipc_report* report_device_ = nullptr;
};

}  // namespace relay::ipc
