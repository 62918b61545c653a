// Lowering: a plan, bound to the caller's memory, made into the work of each lane.
//
// A lane is one stream of the GPU executor (a device's or a rank's, gpu_options::streams). For
// every phase of the plan, each lane gets the operations its ranks issue (a copy by its source
// rank, a reduction by its own rank), with the byte ranges they read and write. Then the lanes
// are ordered: a lane's work waits for another lane's earlier work only where the two conflict
// (one writes bytes the other reads or writes, by address, so aliasing through in-place buffers
// is seen too), and waits are pruned with vector clocks: a lane that is already ordered after a
// later point of another lane does not wait again. Finally each work that some other work waits
// on gets an event number on its lane.
//
// No GPU runtime here: the result is plain data that the program builder (exec/gpu/program.hpp)
// turns into descriptor lists and launches, and that CPU tests check (tests/unit/exec/gpu/).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "relay/gpu/fp8_desc.hpp"
#include "relay/gpu/reduce_desc.hpp"
#include "relay/plan/bind.hpp"
#include "relay/plan/plan.hpp"

namespace relay::gpu {

struct interval {
  std::uintptr_t lo = 0, hi = 0;  // [lo, hi)
};

inline bool overlaps(std::span<const interval> a, std::span<const interval> b) {
  for (const interval& x : a)
    for (const interval& y : b)
      if (x.lo < y.hi && y.lo < x.hi) return true;
  return false;
}

// `bytes` from `src` on device `src_device` to `dst` on `dst_device`, from rank `src_rank` to rank
// `dst_rank` (mesh emulation paces a copy by its ranks' link: exec/gpu/pacing.hpp).
struct lowered_copy {
  const void* src = nullptr;
  void* dst = nullptr;
  std::uint64_t bytes = 0;
  int src_device = 0, dst_device = 0;
  int src_rank = 0, dst_rank = 0;
};

// One end of an fp8 copy (plan::crosses_wire, gpu/fp8_kernels.hpp): quantize `count` elements
// at `src` into the wire image at `dst`, or dequantize the image at `src` into elements at `dst`.
// `wide`: the elements are floats (float32 data, or fp32 partial sums), else the plan's 16-bit
// type.
struct lowered_fp8 {
  const void* src = nullptr;
  void* dst = nullptr;
  std::uint64_t count = 0;
  bool wide = false;
};

// A lane's work in one phase: lowered_plan::phases[phase][slot].
struct work_ref {
  std::size_t phase = 0, slot = 0;
  friend bool operator==(const work_ref&, const work_ref&) = default;
};

// One lane's share of one plan phase.
struct lane_work {
  int lane = 0;
  std::vector<lowered_copy> copies;     // by the batched copy kernel (a push through peer access)
  std::vector<lowered_copy> memcpys;    // by the runtime's peer memcpy
  std::vector<reduce_desc> reductions;  // by the batched reduce kernel
  std::vector<lowered_fp8> quantizes, dequantizes;  // fp8 copies' two ends
  std::vector<interval> reads, writes;
  std::vector<work_ref> waits;  // works on other lanes to wait for, before this one starts
  std::vector<int> clock;       // per lane: the last work index this one is ordered after
  bool record = false;          // some later work waits on this one
  int event = -1;               // its event on its lane, where `record`
};

// Where ranks run and how copies between devices go.
struct lane_layout {
  std::vector<int> lane_of_rank;    // per rank
  std::vector<int> device_of_rank;  // per rank
  int lanes = 0;
  // Per (source device, destination device), devices * devices entries: a copy between them
  // may use the copy kernel (peer access, and copy_engine::kernel); else a peer memcpy.
  std::vector<bool> kernel_copy;
  int devices = 0;

  bool by_kernel(int from, int to) const {
    return kernel_copy[static_cast<std::size_t>(from * devices + to)];
  }
};

// The caller's buffers and the executor's scratch areas, per rank.
struct bound_memory {
  std::span<const buffer_view> inputs, outputs;
  std::span<unsigned char* const> scratch;

  unsigned char* address(const plan_operand& o) const {
    const auto r = static_cast<std::size_t>(o.rank);
    return address_of(
        o, rank_areas<unsigned char>{static_cast<unsigned char*>(inputs[r].data),
                                     static_cast<unsigned char*>(outputs[r].data), scratch[r]});
  }
};

struct lowered_plan {
  // Per plan phase, the lanes with work in it; a transfer phase with fp8 copies is three: the
  // senders quantize, the wire images cross (with the phase's other copies), the receivers
  // dequantize.
  std::vector<std::vector<lane_work>> phases;
  std::vector<int> events;      // per lane: events its works record
  std::vector<bool> uses_lane;  // per lane: some work runs on it
};

namespace detail {

inline interval span_of(const void* p, std::uint64_t bytes) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  return {a, a + static_cast<std::uintptr_t>(bytes)};
}

}  // namespace detail

// Rank r's lane's work in `works`, made on first use (`slot`: per lane, its index or -1).
inline lane_work& work_of(std::vector<lane_work>& works, std::vector<int>& slot, int lane) {
  int& s = slot[static_cast<std::size_t>(lane)];
  if (s < 0) {
    s = static_cast<int>(works.size());
    works.push_back({});
    works.back().lane = lane;
  }
  return works[static_cast<std::size_t>(s)];
}

// An fp8 copy (plan::crosses_wire) as three works: the source's lane quantizes into the send slot
// (`before`), pushes the image to the receive slot (`w`, with the phase's other copies), and the
// destination's lane dequantizes it (`after`).
inline void split_fp8_copy(const plan& p, const plan_op& o, std::size_t index,
                           const lane_layout& at, const bound_memory& mem, lane_work& before,
                           lane_work& w, lane_work& after) {
  const plan_operand& src = p.sources_of(o)[0];
  const void* from = mem.address(src);
  unsigned char* send = mem.address(wire_send_end(p, index));
  unsigned char* recv = mem.address(wire_recv_end(p, index));
  unsigned char* to = mem.address(o.dst);
  const std::uint64_t image = fp8_wire_bytes(o.count);
  // Floats (float32 data or fp32 partial sums: 4 bytes) or the plan's 16-bit type, by width.
  const auto src_width = static_cast<std::uint64_t>(p.source_width(o, 0));
  const auto dst_width = static_cast<std::uint64_t>(p.dst_width(o));
  before.quantizes.push_back({from, send, o.count, src_width == 4});
  before.reads.push_back(detail::span_of(from, o.count * src_width));
  before.writes.push_back(detail::span_of(send, image));
  const int a = at.device_of_rank[src.rank], b = at.device_of_rank[o.dst.rank];
  // The ranks too: mesh emulation paces the image over the link between them (with only the
  // devices, two ranks of one device looked rank-local and crossed no link).
  (at.by_kernel(a, b) ? w.copies : w.memcpys)
      .push_back({send, recv, image, a, b, src.rank, o.dst.rank});
  w.reads.push_back(detail::span_of(send, image));
  w.writes.push_back(detail::span_of(recv, image));
  after.dequantizes.push_back({recv, to, o.count, dst_width == 4});
  after.reads.push_back(detail::span_of(recv, image));
  after.writes.push_back(detail::span_of(to, o.count * dst_width));
}

// 1. Each phase's operations, split by lane; operations of no elements vanish.
inline std::vector<std::vector<lane_work>> split_by_lane(const plan& p, const lane_layout& at,
                                                         const bound_memory& mem) {
  std::vector<std::vector<lane_work>> phases;
  phases.reserve(p.phases.size());
  for (std::size_t ph = 0; ph < p.phases.size(); ++ph) {
    const auto lanes = static_cast<std::size_t>(at.lanes);
    std::vector<int> slot(lanes, -1), before_slot(lanes, -1), after_slot(lanes, -1);
    std::vector<lane_work> main, before, after;  // before and after: the fp8 copies' ends
    for (const plan_op& o : p.ops_of(p.phases[ph])) {
      if (o.count == 0) continue;
      const std::span<const plan_operand> srcs = p.sources_of(o);
      const int issuer = o.issuer(p.sources);  // the whole pool: issuer() indexes it
      const int l = at.lane_of_rank[static_cast<std::size_t>(issuer)];
      lane_work& w = work_of(main, slot, l);
      if (p.crosses_wire(o)) {
        const int receiver = at.lane_of_rank[static_cast<std::size_t>(o.dst.rank)];
        split_fp8_copy(p, o, static_cast<std::size_t>(&o - p.ops.data()), at, mem,
                       work_of(before, before_slot, l), w, work_of(after, after_slot, receiver));
        continue;
      }
      const std::uint64_t bytes = o.count * static_cast<std::uint64_t>(p.dst_width(o));
      unsigned char* dst = mem.address(o.dst);
      w.writes.push_back(detail::span_of(dst, bytes));
      std::array<const void*, max_reduce_inputs> ptrs{};
      for (std::size_t s = 0; s < srcs.size(); ++s) {
        ptrs[s] = mem.address(srcs[s]);
        w.reads.push_back(
            detail::span_of(ptrs[s], o.count * static_cast<std::uint64_t>(p.source_width(o, s))));
      }
      if (o.phase == phase::transfer) {
        const int from = at.device_of_rank[srcs[0].rank];
        const int to = at.device_of_rank[o.dst.rank];
        (at.by_kernel(from, to) ? w.copies : w.memcpys)
            .push_back({ptrs[0], dst, bytes, from, to, srcs[0].rank, o.dst.rank});
      } else {
        w.reductions.push_back(
            reduce_of(p, o, [&](const plan_operand& x) { return mem.address(x); }));
      }
    }
    if (!before.empty()) phases.push_back(std::move(before));
    phases.push_back(std::move(main));
    if (!after.empty()) phases.push_back(std::move(after));
  }
  return phases;
}

// 2. Dependencies between lanes: each work waits for the newest conflicting work of every other
// lane that its lane is not already ordered after.
inline void order_lanes(std::vector<std::vector<lane_work>>& phases, int lane_count) {
  const auto lanes = static_cast<std::size_t>(lane_count);
  std::vector<std::vector<int>> clock(lanes, std::vector<int>(lanes, -1));
  std::vector<std::vector<work_ref>> done(lanes);  // per lane: its works so far, in order
  for (std::size_t ph = 0; ph < phases.size(); ++ph) {
    for (std::size_t wi = 0; wi < phases[ph].size(); ++wi) {
      lane_work& w = phases[ph][wi];
      const auto l = static_cast<std::size_t>(w.lane);
      std::vector<int>& mine = clock[l];
      for (std::size_t m = 0; m < lanes; ++m) {
        if (m == l) continue;
        for (int k = static_cast<int>(done[m].size()) - 1; k > mine[m]; --k) {
          const work_ref ref = done[m][static_cast<std::size_t>(k)];
          lane_work& other = phases[ref.phase][ref.slot];
          if (overlaps(other.writes, w.reads) || overlaps(other.writes, w.writes) ||
              overlaps(other.reads, w.writes)) {
            other.record = true;
            w.waits.push_back(ref);
            for (std::size_t x = 0; x < lanes; ++x)
              mine[x] = std::max(mine[x], other.clock[x]);
            break;
          }
        }
      }
      mine[l] = static_cast<int>(done[l].size());
      w.clock = mine;
      done[l].push_back({ph, wi});
    }
  }
}

// The whole lowering: split, order, then number the events each lane records.
inline lowered_plan lower(const plan& p, const lane_layout& at, const bound_memory& mem) {
  lowered_plan out;
  out.phases = split_by_lane(p, at, mem);
  order_lanes(out.phases, at.lanes);
  out.events.assign(static_cast<std::size_t>(at.lanes), 0);
  out.uses_lane.assign(static_cast<std::size_t>(at.lanes), false);
  for (auto& works : out.phases)
    for (lane_work& w : works) {
      const auto l = static_cast<std::size_t>(w.lane);
      out.uses_lane[l] = true;
      if (w.record) w.event = out.events[l]++;
    }
  return out;
}

// One lane's ends of one phase (lane_work::quantizes or ::dequantizes), as at most two lists: the
// narrow ends (elements of `narrow_bytes`, the plan's 16-bit type) first, then the wide (float)
// ones; each keeps the ends' order. They may run together: the ends of a phase touch disjoint
// bytes (the plan's ops within a phase are independent, and every end has its own wire slot).
inline std::vector<fp8_batch> batch_fp8(std::span<const lowered_fp8> ends,
                                        std::size_t narrow_bytes) {
  std::vector<fp8_batch> out;
  for (bool wide : {false, true}) {
    fp8_batch b;
    b.wide = wide;
    for (const lowered_fp8& e : ends)
      if (e.wide == wide) b.descs.push_back({e.src, e.dst, e.count, 0});
    if (b.descs.empty()) continue;
    b.tiles = assign_fp8_tiles(b.descs, wide ? sizeof(float) : narrow_bytes);
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace relay::gpu
