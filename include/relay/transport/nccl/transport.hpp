// Transport `nccl`: this rank's slice of a plan through NCCL (NVIDIA) or RCCL (AMD, the same API
// under its own header) point-to-point, the reductions as relay's kernels, all on the caller's
// stream. NCCL puts one rank per device.
//
//   std::unique_ptr<relay::nccl_transport> t;
//   relay::status s = relay::nccl_transport::create(boot, device, t);   // collective
//   // or, inside a library that has a communicator already:
//   auto t = relay::nccl_transport::over(comm, device);
//
// How a call runs (transport.hpp has the contract): each phase of the slice in order. A transfer
// phase is ncclGroupStart, this rank's sends (its issued copies into peers) and receives (the
// slice's receives), ncclGroupEnd, then its copies within its own memory; a reduce phase is one
// launch of the batched reduce kernel over the phase's reductions. Everything is enqueued on
// call.stream and run() returns without waiting for the device. nccl/phase.hpp decides what a
// transfer phase enqueues (host code, tested on the CPU; built once per plan and buffers, with
// the reduction lists); this file executes its lists.
//
// The fp8 wire (plan::crosses_wire): a copy into a peer is quantized first, before the
// group, from its source into this rank's send slot in scratch (gpu/fp8_kernels.hpp, one launch
// per copy), and the group sends that image (fp8_wire_bytes(count) bytes) instead of the
// elements; the receiver posts its receive into its receive slot in scratch and, after the group,
// dequantizes the image into the copy's destination. Copies within a rank stay native. The same
// kernels (gpu/fp8_kernels.hpp) and bits as the GPU executor's fp8 copies, so both give the host
// executor's result. The slots lie in plan::scratch_bytes, reserved as for a native plan.
//
// Why the slice's waits need nothing here: NCCL starts a receive only when the receiver's stream
// reaches it, so a peer's push cannot land before this rank finished its earlier phases (WAR,
// WAW, entry), and a receive completes before anything later on this rank's stream (RAW, exit).
// The fp8 ends are kernels on the same stream, so they are ordered the same way: a quantize
// before the send that reads its slot, a dequantize after the receive that fills its slot, and a
// slot's reuse in a later phase after this phase is done with it.
// Both ranks of a pair list their sends and receives in plan order, which is the order NCCL
// matches them in; every rank walks the plan's phases in the same order, so groups match.
//
// In place (placement::in_place): call.p is the out-of-place plan, which must not read an input
// that its own output writes over. The transport copies the rank's input into its own staging
// area on the stream first and runs the plan from there: one local copy of the input.
//
// Failures. With nccl_config::check_every_call (the default) every call's agreement
// (transport/agreement.hpp) runs over the bootstrap before anything is enqueued: every rank's
// record (its fingerprint, its refusal: arguments, buffers, or a preparation that failed, out of
// memory) reaches every rank, which judge it alike; a refusal or a disagreeing fingerprint makes
// every rank return an error (peer_error / mismatch naming the ranks) with nothing enqueued and
// no user memory touched, and the transport stays usable. This is a host round trip per
// call, overlapping the device's work on earlier calls. Without it (check_every_call = false, for
// callers that validate arguments themselves), a rank with invalid buffers runs the protocol on its
// staging memory instead, so its peers never hang, and returns its error; the peers cannot learn of
// it, and a rank that cannot prepare leaves its peers' operations waiting in NCCL. NCCL operations
// already enqueued cannot time out from here: a peer that dies mid-call leaves them to NCCL's own
// error handling (ncclCommGetAsyncError; broken() reports it).
//
// NCCL itself is found at run time (nccl/library.hpp: the copy already in the process, else
// RELAY_NCCL_LIBRARY or libnccl.so.2; on AMD, RCCL: RELAY_RCCL_LIBRARY or librccl.so.1) and
// called through its table (nccl/api.hpp); no NCCL header or library is needed to build. A
// missing library or entry point is create's or over's error, naming it.
//
// Only code compiled by nvcc or hipcc may include this header.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "relay/bootstrap/environment.hpp"
#include "relay/bootstrap/exchange.hpp"
#include "relay/core/lru.hpp"
#include "relay/core/status.hpp"
#include "relay/gpu/fp8_kernels.hpp"
#include "relay/gpu/handles.hpp"
#include "relay/gpu/kernels.hpp"
#include "relay/gpu/runtime.hpp"
#include "relay/plan/bind.hpp"
#include "relay/plan/slice.hpp"
#include "relay/plan/validate.hpp"
#include "relay/transport/nccl/api.hpp"
#include "relay/transport/nccl/library.hpp"
#include "relay/transport/nccl/phase.hpp"
#include "relay/transport/transport.hpp"

namespace relay {

// The library this build's nccl transport calls: RCCL on AMD, NCCL on NVIDIA.
#if defined(RELAY_GPU_HIP)
inline constexpr const nccl_search& gpu_nccl_search = nccl_search_of_hip;
#else
inline constexpr const nccl_search& gpu_nccl_search = nccl_search_of_cuda;
#endif

// The process's NCCL for this build (nccl/library.hpp), loaded on first use.
inline status gpu_nccl(const nccl_api*& out) {
  const nccl_library* lib = nullptr;
  if (status s = process_nccl(gpu_nccl_search, lib); !s) return s;
  out = &lib->api;
  return {};
}

namespace detail {

inline status nccl_failure(const nccl_api& nccl, const char* what, nccl_result r) {
  return {errc::gpu_error, std::string(what) + " failed: " + nccl.get_error_string(r)};
}

}  // namespace detail

struct nccl_config {
  // Exchange every call's local status and fingerprint through the bootstrap (see above).
  bool check_every_call = true;
};

class nccl_transport final : public transport {
 public:
  // Over an existing communicator of the node's ranks (relay rank r = NCCL rank r), which stays
  // the caller's (an ncclComm_t of nccl.h or rccl.h). `boot` serves the per-call check
  // (nccl_bootstrap over the same communicator will do); null turns the check off.
  static status over(nccl_comm comm, int device, std::unique_ptr<nccl_transport>& out,
                     std::shared_ptr<bootstrap> boot = nullptr, nccl_config config = {}) {
    const nccl_api* nccl = nullptr;
    if (status s = gpu_nccl(nccl); !s) return s;
    if (!boot) config.check_every_call = false;
    out.reset(new nccl_transport(*nccl, comm, false, device, std::move(boot), config));
    return {};
  }

  // Creates a communicator of boot.size() ranks through the bootstrap: rank 0's unique id goes
  // to every rank (collective: every rank calls it).
  static status create(std::shared_ptr<bootstrap> boot, int device,
                       std::unique_ptr<nccl_transport>& out, nccl_config config = {},
                       milliseconds timeout = milliseconds{30'000}) {
    const nccl_api* nccl = nullptr;
    if (status s = gpu_nccl(nccl); !s) return s;
    nccl_unique_id id{};
    if (boot->rank() == 0)
      if (nccl_result r = nccl->get_unique_id(&id); r != nccl_success)
        return detail::nccl_failure(*nccl, "ncclGetUniqueId", r);
    std::vector<nccl_unique_id> all;  // rank 0's is the one
    if (status s = exchange(*boot, id, all, timeout, "NCCL unique id"); !s) return s;
    id = all[0];
    const gpu::device_guard keep;
    if (gpu::rt::error_t e = gpu::rt::set_device(device); e != gpu::rt::success)
      return gpu::failure("selecting the device", device, e);
    nccl_comm comm = nullptr;
    if (nccl_result r = nccl->comm_init_rank(&comm, boot->size(), id, boot->rank());
        r != nccl_success)
      return detail::nccl_failure(*nccl, "ncclCommInitRank", r);
    out.reset(new nccl_transport(*nccl, comm, true, device, std::move(boot), config));
    return {};
  }

  ~nccl_transport() override {
    const gpu::device_guard keep;
    (void)gpu::rt::set_device(device_);
    (void)gpu::rt::device_synchronize();
    release();
    if (owns_ && comm_ != nullptr) (void)nccl_.comm_destroy(comm_);
  }

  std::string_view name() const override { return "nccl"; }
  nccl_comm comm() const { return comm_; }
  const nccl_api& nccl() const { return nccl_; }
  int device() const override { return device_; }

  bool broken() const override {
    if (broken_) return true;
    nccl_result async = nccl_success;
    return nccl_.comm_get_async_error(comm_, &async) != nccl_success || async != nccl_success;
  }

  void abort(const status& /*why*/) override { broken_ = true; }

  status run(const call_context& call) override {
    if (broken_) return {errc::gpu_error, "the nccl transport failed earlier and is unusable"};
    if (call.p == nullptr || call.slice == nullptr) {
      // Refused before there was a plan: the refusal still takes part in the agreement.
      if (call.local.ok()) return {errc::invalid_argument, "the call has no plan or no slice"};
      if (!config_.check_every_call) return call.local;  // the peers cannot learn of it
      return agree(call, call.local);
    }
    const plan& p = *call.p;
    const int me = call.slice->rank;
    if (status s = validate_plan(p); !s) return s;  // the same everywhere: all ranks refuse
    if (me < 0 || me >= p.ranks())
      return {errc::invalid_argument, "the slice's rank is not in the plan"};
    if (call.p->in_place)
      return {errc::invalid_argument, "the nccl transport runs the out-of-place plan of a call"};
    const gpu::device_guard keep;
    const auto stream = static_cast<gpu::rt::stream_t>(call.stream);
    const auto r = static_cast<std::size_t>(me);
    // Without the check, a rank with bad buffers still serves its peers, from its own memory;
    // with it, nobody runs and nothing needs preparing.
    const bool stand_in = !call.local && !config_.check_every_call;
    const bool staged = stand_in || call.placement == placement::in_place;
    bound b;
    const reduce_lists* lists = nullptr;
    // Preparation (memory, reduction lists) comes before the check, so that a rank that cannot
    // prepare (out of memory) stops every rank, not only itself.
    status prepared = call.local;
    if (call.local || stand_in)
      (void)(prepared = prepare(p, *call.slice, call, r, stand_in, staged, b, lists));
    if (config_.check_every_call) {
      if (status s = agree(call, prepared); !s) return s;
    } else if (!prepared) {
      return prepared;  // the peers cannot learn of it here (see the header)
    }
    if (call.placement == placement::in_place && !stand_in && p.input_bytes[r] > 0)
      if (gpu::rt::error_t e =
              gpu::rt::memcpy_async(staging_, call.send.data, p.input_bytes[r], stream);
          e != gpu::rt::success)
        return fail(gpu::failure("staging the in-place input", device_, e));
    std::size_t reduce_phase = 0, transfer_phase = 0;
    for (const slice_phase& sp : call.slice->phases) {
      const status s = sp.kind == phase::reduce
                           ? reductions_of(p, lists->phases[reduce_phase++], stream)
                           : transfers_of(p, lists->transfers[transfer_phase++], b, r, stream);
      if (!s) return s;
    }
    return stand_in ? call.local : status{};
  }

  // Frees the staging and scratch memory and the cached reduction lists (waits for the device).
  void release() {
    const gpu::device_guard keep;
    (void)gpu::rt::set_device(device_);
    (void)gpu::rt::device_synchronize();
    for (reduce_lists& l : lists_)
      (void)gpu::rt::free(l.device);
    lists_.clear();
    if (memory_ != nullptr) (void)gpu::rt::free(memory_);
    memory_ = nullptr;
    capacity_ = 0;
    scratch_ = staging_ = stand_in_output_ = nullptr;
  }

 private:
  // Where the plan's three buffers of this rank are for one call.
  using bound = rank_areas<unsigned char>;  // this rank's areas for a call
  // The reductions of every reduce phase of the slice, uploaded once per plan and buffers.
  struct reduce_lists {
    struct phase_list {
      const gpu::reduce_desc* descs = nullptr;
      std::uint32_t count = 0;
      std::uint64_t tiles = 0;
    };
    plan key;
    bound at;
    void* device = nullptr;
    std::vector<phase_list> phases;          // per reduce phase of the slice
    std::vector<nccl_phase_work> transfers;  // per transfer phase of the slice
    std::uint64_t last_use = 0;
  };
  static constexpr std::size_t cached_lists = 16;

  nccl_transport(const nccl_api& nccl, nccl_comm comm, bool owns, int device,
                 std::shared_ptr<bootstrap> boot, nccl_config config)
      : nccl_(nccl),
        comm_(comm),
        owns_(owns),
        device_(device),
        boot_(std::move(boot)),
        config_(config) {}

  // One end of an fp8 copy: quantize `count` elements at `from` into the image at `to`, or
  // dequantize the image at `from` into elements at `to`; floats where `wide`, else the plan's
  // 16-bit type (nccl/phase.hpp).
  static gpu::rt::error_t fp8_end(bool quantize, const void* from, void* to, std::uint64_t count,
                                  bool wide, dtype type, fp8_format f, gpu::rt::stream_t stream) {
    auto go = [&](auto zero) {
      using T = decltype(zero);
      return quantize
                 ? gpu::launch_fp8_quantize<T>(static_cast<const T*>(from),
                                               static_cast<unsigned char*>(to), count, f, stream)
                 : gpu::launch_fp8_dequantize<T>(static_cast<const unsigned char*>(from), count, f,
                                                 static_cast<T*>(to), nullptr, stream);
    };
    if (wide) return go(float{});
    return type == dtype::float16 ? go(float16{}) : go(bfloat16{});
  }

  status fail(status s) {
    broken_ = true;  // part of a call may be enqueued: the ranks may be out of step
    return s;
  }

  // This rank's memory and reduction lists for the call: where its input, output and scratch are.
  status prepare(const plan& p, const plan_slice& slice, const call_context& call, std::size_t r,
                 bool stand_in, bool staged, bound& b, const reduce_lists*& lists) {
    if (gpu::rt::error_t e = gpu::rt::set_device(device_); e != gpu::rt::success)
      return gpu::failure("selecting the device", device_, e);
    if (status s = reserve(p.scratch_bytes[r], staged ? p.input_bytes[r] : 0,
                           stand_in ? p.output_bytes[r] : 0);
        !s)
      return s;
    b.input = staged ? staging_ : static_cast<unsigned char*>(call.send.data);
    b.output = stand_in ? stand_in_output_ : static_cast<unsigned char*>(call.recv.data);
    b.scratch = scratch_;
    return reductions(p, slice, b, lists);
  }

  // The call's agreement (transport/agreement.hpp) over the bootstrap, before anything is
  // enqueued: every rank's record, with its reason when it refused (its buffers, or
  // a preparation that failed: out of memory), judged alike everywhere.
  status agree(const call_context& call, const status& local) {
    entry_record mine = record_of(call);
    mine.code = static_cast<std::uint8_t>(local.code());
    std::vector<with_text<entry_record>> all;
    if (status s = exchange(*boot_, mine, local.message(), all, call.timeout, "call record"); !s)
      return fail(s);
    std::vector<entry_record> records(all.size());
    for (std::size_t r = 0; r < all.size(); ++r)
      records[r] = all[r].value;
    const int ranks = static_cast<int>(records.size());
    const verdict v = judge(records.data(), ranks, boot_->rank());
    return verdict_status(v, records.data(), ranks, local, call.sequence,
                          [&](int q) { return all[static_cast<std::size_t>(q)].text; });
  }

  // One device allocation, grow-only: [scratch | staging | stand-in output], 256-byte aligned.
  status reserve(std::uint64_t scratch, std::uint64_t staging, std::uint64_t stand_in) {
    auto up = [](std::uint64_t x) { return static_cast<std::size_t>((x + 255) / 256 * 256); };
    const std::size_t need = up(scratch) + up(staging) + up(stand_in);
    if (need > capacity_) {
      // Work in flight (on any stream) may use the old area, and the cached lists point into it.
      if (gpu::rt::error_t e = gpu::rt::device_synchronize(); e != gpu::rt::success)
        return fail(gpu::failure("waiting before growing scratch", device_, e));
      release();
      if (gpu::rt::error_t e = gpu::rt::malloc(&memory_, need); e != gpu::rt::success) {
        memory_ = nullptr;
        return gpu::failure("allocating scratch", device_, e);
      }
      capacity_ = need;
    }
    auto* base = static_cast<unsigned char*>(memory_);
    scratch_ = base;
    staging_ = base + up(scratch);
    stand_in_output_ = staging_ + up(staging);
    return {};
  }

  // A reduce phase of this rank's slice: its reductions in one launch.
  status reductions_of(const plan& p, const reduce_lists::phase_list& l, gpu::rt::stream_t stream) {
    if (l.count == 0) return {};
    const gpu::rt::error_t e = visit_dtype(p.type, [&](auto x) {
      using T = decltype(x);
      return gpu::rt::launch(gpu::batched_reduce_kernel<T>, grid(l.tiles, p.type),
                             gpu::default_block, stream, l.descs, l.count, l.tiles);
    });
    if (e != gpu::rt::success)
      return fail(gpu::failure("launching the batched reduce kernel", device_, e));
    return {};
  }

  // A transfer phase of rank r's slice (nccl/phase.hpp): quantizes, the sends and receives in one
  // group, local copies, dequantizes. One launch per quantize and per dequantize: a phase has a
  // few fp8 copies per peer, so a batched list (gpu/fp8_desc.hpp, as the GPU executor's lanes use)
  // would save little. A wire slot is reused by later phases; the stream orders that: the next
  // quantize into a send slot runs after this phase's ncclSend from it completed on this stream,
  // and the next ncclRecv into a receive slot after this phase's dequantize read it.
  status transfers_of(const plan& p, const nccl_phase_work& w, const bound& b, std::size_t r,
                      gpu::rt::stream_t stream) {
    auto address = [&](const plan_operand& o) { return address_of(o, b); };
    auto scratch_at = [&](std::uint64_t offset) {
      return address_of(plan_operand{static_cast<std::uint16_t>(r), buffer::scratch, offset}, b);
    };
    const fp8_format format = fp8_format_of(p.wire.taken);
    for (const nccl_quantize& q : w.quantizes)
      if (gpu::rt::error_t e = fp8_end(true, address(q.src), scratch_at(q.slot), q.count, q.wide,
                                       p.type, format, stream);
          e != gpu::rt::success)
        return fail(gpu::failure("launching the fp8 quantize kernel", device_, e));
    if (nccl_result e = nccl_.group_start(); e != nccl_success)
      return fail(detail::nccl_failure(nccl_, "ncclGroupStart", e));
    nccl_result first = nccl_success;
    for (const nccl_transfer& t : w.sends) {
      const nccl_result e =
          nccl_.send(address(t.at), t.bytes, nccl_type::uint8, t.peer, comm_, stream);
      if (first == nccl_success) first = e;
    }
    for (const nccl_transfer& t : w.receives) {
      const nccl_result e =
          nccl_.recv(address(t.at), t.bytes, nccl_type::uint8, t.peer, comm_, stream);
      if (first == nccl_success) first = e;
    }
    const nccl_result end = nccl_.group_end();
    if (first != nccl_success) return fail(detail::nccl_failure(nccl_, "ncclSend/ncclRecv", first));
    if (end != nccl_success) return fail(detail::nccl_failure(nccl_, "ncclGroupEnd", end));
    for (const nccl_local_copy& c : w.copies) {
      const unsigned char* src = address(c.src);
      unsigned char* dst = address(c.dst);
      if (src == dst) continue;
      if (gpu::rt::error_t e = gpu::rt::memcpy_async(dst, src, c.bytes, stream);
          e != gpu::rt::success)
        return fail(gpu::failure("a copy within the rank", device_, e));
    }
    for (const nccl_dequantize& d : w.dequantizes)
      if (gpu::rt::error_t e = fp8_end(false, scratch_at(d.slot), address(d.dst), d.count, d.wide,
                                       p.type, format, stream);
          e != gpu::rt::success)
        return fail(gpu::failure("launching the fp8 dequantize kernel", device_, e));
    return {};
  }

  // The reduce lists for this plan and these buffers, with each transfer phase's work
  // (nccl_phase, host lists kept off the call path): cached, else built and uploaded.
  status reductions(const plan& p, const plan_slice& slice, const bound& at,
                    const reduce_lists*& out) {
    for (reduce_lists& l : lists_)
      if (l.at == at && l.key == p) {
        l.last_use = ++uses_;
        out = &l;
        return {};
      }
    constexpr std::uint64_t tile_units = gpu::default_block * gpu::default_unroll;
    auto address = [&](const plan_operand& o) { return address_of(o, at); };
    reduce_lists built;
    built.key = p;
    built.at = at;
    std::vector<unsigned char> host;
    std::vector<std::size_t> offsets;
    for (const slice_phase& sp : slice.phases) {
      if (sp.kind != phase::reduce) {
        built.transfers.push_back(nccl_phase(p, sp, slice.rank));
        continue;
      }
      std::vector<gpu::reduce_desc> descs;
      for (std::uint32_t i : sp.issued) {
        const plan_op& o = p.ops[i];
        if (o.count == 0) continue;
        descs.push_back(gpu::reduce_of(p, o, address));
      }
      reduce_lists::phase_list l;
      l.count = static_cast<std::uint32_t>(descs.size());
      l.tiles = gpu::assign_tiles(descs.data(), descs.size(), tile_units);
      const std::size_t at_byte = (host.size() + 15) / 16 * 16;
      host.resize(at_byte + descs.size() * sizeof(gpu::reduce_desc));
      if (!descs.empty())
        std::memcpy(host.data() + at_byte, descs.data(), descs.size() * sizeof(gpu::reduce_desc));
      offsets.push_back(at_byte);
      built.phases.push_back(l);
    }
    if (!host.empty()) {
      if (gpu::rt::error_t e = gpu::rt::malloc(&built.device, host.size()); e != gpu::rt::success)
        return gpu::failure("allocating the reduction lists", device_, e);
      // Landed before the kernels on the caller's (non-blocking) stream read it: runtime.hpp.
      if (gpu::rt::error_t e = gpu::rt::upload(built.device, host.data(), host.size());
          e != gpu::rt::success) {
        (void)gpu::rt::free(built.device);
        return gpu::failure("uploading the reduction lists", device_, e);
      }
    }
    for (std::size_t i = 0; i < built.phases.size(); ++i)
      built.phases[i].descs = reinterpret_cast<const gpu::reduce_desc*>(
          static_cast<const unsigned char*>(built.device) + offsets[i]);
    const int blocks_index = static_cast<int>(p.type);
    if (reduce_blocks_[static_cast<std::size_t>(blocks_index)] == 0) {
      const gpu::rt::error_t e = visit_dtype(p.type, [&](auto x) {
        using T = decltype(x);
        return gpu::resident_blocks(&reduce_blocks_[static_cast<std::size_t>(blocks_index)],
                                    gpu::batched_reduce_kernel<T>, gpu::default_block, device_);
      });
      if (e != gpu::rt::success)
        return gpu::failure("querying the reduce kernel's occupancy", device_, e);
    }
    if (lists_.size() >= cached_lists) {
      // The oldest list may still be read by work in flight.
      if (gpu::rt::error_t e = gpu::rt::device_synchronize(); e != gpu::rt::success)
        return fail(gpu::failure("waiting before evicting a reduction list", device_, e));
      evict_least_recent(lists_, [](reduce_lists& x) { (void)gpu::rt::free(x.device); });
    }
    built.last_use = ++uses_;
    lists_.push_back(std::move(built));
    out = &lists_.back();
    return {};
  }

  unsigned grid(std::uint64_t tiles, dtype t) const {
    const int resident = reduce_blocks_[static_cast<std::size_t>(t)];
    const std::uint64_t r = resident > 0 ? static_cast<std::uint64_t>(resident) : 1;
    return static_cast<unsigned>(tiles < r ? tiles : r);
  }

  const nccl_api& nccl_;
  nccl_comm comm_ = nullptr;
  bool owns_ = false;
  int device_ = 0;
  std::shared_ptr<bootstrap> boot_;
  nccl_config config_;
  bool broken_ = false;
  void* memory_ = nullptr;
  std::size_t capacity_ = 0;
  unsigned char *scratch_ = nullptr, *staging_ = nullptr, *stand_in_output_ = nullptr;
  std::vector<reduce_lists> lists_;
  std::uint64_t uses_ = 0;
  std::array<int, all_dtypes.size()> reduce_blocks_{};
};

}  // namespace relay
