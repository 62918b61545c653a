// The programs of the plans an ipc transport has run (ipc/transport.hpp), in device memory: each
// built on the host (ipc/program.hpp), packed and uploaded on its plan's first call, then found
// again; the least recently used is freed to make room. And the program of a call this rank
// refuses: the entry stage alone (the agreement). Only code compiled by nvcc or hipcc may
// include this header (the runtime's calls).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "relay/core/lru.hpp"
#include "relay/core/no_copy.hpp"
#include "relay/core/status.hpp"
#include "relay/gpu/handles.hpp"
#include "relay/gpu/runtime.hpp"
#include "relay/plan/plan.hpp"
#include "relay/transport/ipc/program.hpp"

namespace relay::ipc {

// A program as a call runs it: its stages in device memory, and what the host decided of it.
struct loaded_program {
  plan key;
  void* device = nullptr;  // the packed program (packed_program::bytes)
  stage_ref entry, exit;   // stored contiguously: entry, phases..., exit
  std::vector<stage_ref> phases;
  std::uint64_t most_tiles = 0;  // of any phase
  std::uint64_t last_use = 0;
  form_choice form;          // decided once per plan, alike on every rank
  bool user_memory = false;  // the plan lets this rank's input and output stay in user memory
  ipc_pull pull{};           // form.pull: the pull kernel's program
};

class program_cache : no_copy {
 public:
  static constexpr std::size_t capacity = 64;

  ~program_cache() { close(); }

  // The refusal's entry stage (no lists: the agreement alone), in `device`'s memory.
  status open(int device) {
    const ipc_stage bare{.enter = 1};
    void* p = nullptr;
    if (gpu::rt::error_t e = gpu::rt::malloc(&p, sizeof bare); e != gpu::rt::success)
      return gpu::failure("allocating the entry stage", device, e);
    bare_entry_ = static_cast<ipc_stage*>(p);
    if (gpu::rt::error_t e = gpu::rt::upload(bare_entry_, &bare, sizeof bare);
        e != gpu::rt::success)
      return gpu::failure("uploading the entry stage", device, e);
    return {};
  }
  const ipc_stage* bare_entry() const { return bare_entry_; }

  // The program of `p`, or null. A repeated call (the same plan object and a non-zero
  // fingerprint, as the communicator passes for one cached shape) skips even the comparison of
  // plans.
  const loaded_program* find(const plan& p, std::uint64_t fingerprint) {
    if (fingerprint != 0 && &p == last_plan_ && fingerprint == last_fingerprint_) {
      programs_[last_index_].last_use = ++uses_;
      return &programs_[last_index_];
    }
    last_plan_ = nullptr;
    for (std::size_t i = 0; i < programs_.size(); ++i)
      if (programs_[i].key == p) {
        programs_[i].last_use = ++uses_;
        remember(p, fingerprint, i);
        return &programs_[i];
      }
    return nullptr;
  }

  // `pr`, the program of `p`, uploaded to `device` on `stream` (so that the launches that read it
  // come after it) and kept, in place of the least recently used where the cache is full. It
  // allocates: not while `stream` is capturing.
  status add(const plan& p, std::uint64_t fingerprint, const program& pr, int device,
             gpu::rt::stream_t stream, const loaded_program*& out) {
    if (programs_.size() >= capacity) {
      // The oldest may still be read by work in flight.
      if (gpu::rt::error_t e = gpu::rt::device_synchronize(); e != gpu::rt::success)
        return gpu::failure("waiting before evicting a descriptor list", device, e);
      evict_least_recent(programs_, [](loaded_program& x) { (void)gpu::rt::free(x.device); });
    }
    loaded_program l;
    if (status s = upload(pr, device, stream, l); !s) return s;
    l.key = p;
    l.form = pr.form;
    l.user_memory = pr.user_memory;
    l.pull = pr.pull;
    l.last_use = ++uses_;
    programs_.push_back(std::move(l));
    remember(p, fingerprint, programs_.size() - 1);
    out = &programs_.back();
    return {};
  }

  // Frees every program and the entry stage (the device must be idle).
  void close() {
    for (loaded_program& p : programs_)
      (void)gpu::rt::free(p.device);
    programs_.clear();
    last_plan_ = nullptr;
    if (bare_entry_ != nullptr) (void)gpu::rt::free(bare_entry_);
    bare_entry_ = nullptr;
  }

 private:
  // `pr` packed into one allocation of `device`'s memory, copied there on `stream`: a plain
  // memcpy from pageable memory may return before the device has the bytes (gpu::rt::upload);
  // pageable memory is staged before the call returns, so the packed bytes may go.
  static status upload(const program& pr, int device, gpu::rt::stream_t stream,
                       loaded_program& out) {
    if (gpu::rt::error_t e = gpu::rt::malloc(&out.device, packed_size(pr)); e != gpu::rt::success) {
      out.device = nullptr;
      return gpu::failure("allocating the ipc descriptor lists", device, e);
    }
    packed_program packed = pack(pr, out.device);
    if (gpu::rt::error_t e =
            gpu::rt::memcpy_async(out.device, packed.bytes.data(), packed.bytes.size(), stream);
        e != gpu::rt::success) {
      (void)gpu::rt::free(out.device);
      out.device = nullptr;
      return gpu::failure("uploading the ipc descriptor lists", device, e);
    }
    out.entry = packed.entry;
    out.exit = packed.exit;
    out.phases = std::move(packed.phases);
    out.most_tiles = packed.most_tiles;
    return {};
  }

  void remember(const plan& p, std::uint64_t fingerprint, std::size_t index) {
    last_plan_ = &p;
    last_fingerprint_ = fingerprint;
    last_index_ = index;
  }

  std::vector<loaded_program> programs_;
  ipc_stage* bare_entry_ = nullptr;
  std::uint64_t uses_ = 0;
  // The last call's plan and program (find's fast path).
  const plan* last_plan_ = nullptr;
  std::uint64_t last_fingerprint_ = 0;
  std::size_t last_index_ = 0;
};

}  // namespace relay::ipc
