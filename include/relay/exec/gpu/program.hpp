// A program: a lowered plan (exec/gpu/lowering.hpp) made ready to issue. Each lane's copy and
// reduce descriptors (gpu/kernels.hpp) go to the device once, in one allocation per lane; the
// actions list every wait, launch, memcpy and record in issue order, so a run only walks the list.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "relay/core/dtype.hpp"
#include "relay/core/status.hpp"
#include "relay/exec/gpu/lowering.hpp"
#include "relay/exec/gpu/pacing.hpp"
#include "relay/gpu/fp8_desc.hpp"
#include "relay/gpu/handles.hpp"
#include "relay/gpu/kernels.hpp"
#include "relay/gpu/runtime.hpp"
#include "relay/plan/plan.hpp"

namespace relay::gpu {

struct action {
  enum class kind : unsigned char {
    wait,
    record,
    copy,
    reduce,
    memcpy,
    paced_copy,  // every copy between two ranks of a phase, paced (mesh emulation)
    quantize,    // fp8 copies' sending ends: fp8_quantize_list_kernel over an fp8_desc list
    dequantize   // their receiving ends: fp8_dequantize_list_kernel over a list
  } what = kind::wait;
  int lane = 0;
  int event_lane = 0, event = 0;  // wait, record
  const void* descs = nullptr;    // copy, reduce, paced_copy, quantize, dequantize: device address
  std::uint32_t count = 0;        // descriptors; paced_copy: entries
  std::uint64_t tiles = 0;        // paced_copy: the grid
  const void* entries = nullptr;  // paced_copy: device address of its paced_entry list
  lowered_copy copy{};            // memcpy
  bool wide = false;              // quantize, dequantize: float elements (fp8_batch::wide)
};

// A plan prepared for one set of buffers.
struct program {
  plan key;
  std::vector<buffer_view> in, out;
  std::vector<void*> descs;  // per lane, device memory or null
  std::vector<action> actions;
  std::vector<bool> uses_lane;
  std::uint64_t last_use = 0;
  // Copies with the evict-first hints, where nothing reduces what they bring: side by side the
  // hints made all-gather faster but allreduce and reduce-scatter slower, their reductions
  // reading what the copies had just pushed out of L2 (measured on an H200: docs/gpu.md).
  bool streaming_copies = true;
};

// Frees the program's descriptor lists (changes the current device).
inline void free_program(program& g, std::span<const lane> lanes) {
  for (std::size_t l = 0; l < g.descs.size(); ++l)
    if (g.descs[l] != nullptr) {
      (void)rt::set_device(lanes[l].device);
      (void)rt::free(g.descs[l]);
      g.descs[l] = nullptr;
    }
}

namespace detail {

constexpr std::size_t round_up(std::size_t x, std::size_t a) {
  return (x + a - 1) / a * a;
}

// Appends n bytes at the next 16-byte boundary of h; returns where they went.
inline std::size_t append(std::vector<unsigned char>& h, const void* data, std::size_t n) {
  const std::size_t at = round_up(h.size(), 16);
  h.resize(at + n);
  if (n != 0) std::memcpy(h.data() + at, data, n);
  return at;
}

}  // namespace detail

// Builds `prog` from `low` for the plan `p` bound to `in`/`out`: descriptor lists uploaded per
// lane, the reduce kernel's occupancy known on every lane, the events the works record created,
// the actions in issue order (phase by phase, so that every event is recorded before anything
// waits on it). On failure frees what it allocated.
//
// `emulate_mesh` > 0 (bytes per second per link, gpu_options::emulate_mesh): each lane's copies
// of a phase become one paced launch (exec/gpu/pacing.hpp) instead of a batched copy; 0 builds what
// it always did. Every copy must then go by kernel (the executor refuses the memcpy engine).
inline status build_program(const plan& p, std::span<const buffer_view> in,
                            std::span<const buffer_view> out, const lowered_plan& low,
                            std::span<lane> lanes, program& prog, std::uint64_t emulate_mesh = 0) {
  constexpr std::uint64_t tile_units = default_block * default_unroll;
  const std::size_t n = lanes.size();
  // An fp8 list uploaded: where, and what its action needs.
  struct placed_fp8 {
    std::size_t offset = 0;
    std::uint32_t count = 0;
    std::uint64_t tiles = 0;
    bool wide = false;
  };
  struct placed {
    std::size_t copy_offset = 0, reduce_offset = 0, entry_offset = 0;
    std::uint64_t copy_tiles = 0, reduce_tiles = 0;  // paced: copy_tiles is the grid
    std::uint32_t copies = 0, reductions = 0;
    std::vector<placed_fp8> quantizes, dequantizes;
  };
  std::vector<std::vector<placed>> where(low.phases.size());
  std::vector<std::vector<unsigned char>> host(n);
  for (std::size_t ph = 0; ph < low.phases.size(); ++ph)
    for (const lane_work& w : low.phases[ph]) {
      if (emulate_mesh != 0 && !w.memcpys.empty())
        return {errc::unsupported,
                "mesh emulation paces kernel copies only; this plan has a "
                "copy between devices without peer access"};
      std::vector<copy_desc> copies;
      paced_launch paced;
      if (emulate_mesh != 0) {
        paced = plan_paced(w.copies, p.ranks(), emulate_mesh);
        copies = paced.copies;
      } else {
        for (const lowered_copy& c : w.copies)
          copies.push_back(make_copy(c.src, c.dst, c.bytes));
      }
      std::vector<reduce_desc> reductions = w.reductions;
      placed at;
      at.copies = static_cast<std::uint32_t>(copies.size());
      at.reductions = static_cast<std::uint32_t>(reductions.size());
      at.copy_tiles =
          emulate_mesh != 0 ? paced.grid : assign_tiles(copies.data(), copies.size(), tile_units);
      at.reduce_tiles = assign_tiles(reductions.data(), reductions.size(), tile_units);
      auto& h = host[static_cast<std::size_t>(w.lane)];
      at.copy_offset = detail::append(h, copies.data(), copies.size() * sizeof(copy_desc));
      if (emulate_mesh != 0)  // off: the lists are what they always were
        at.entry_offset =
            detail::append(h, paced.entries.data(), paced.entries.size() * sizeof(paced_entry));
      at.reduce_offset =
          detail::append(h, reductions.data(), reductions.size() * sizeof(reduce_desc));
      // One list per element width for all the lane's fp8 ends of the phase: one launch each,
      // not one per copy end.
      auto place_fp8 = [&](std::span<const lowered_fp8> ends, std::vector<placed_fp8>& into) {
        for (const fp8_batch& b : batch_fp8(ends, p.element_size()))
          into.push_back({detail::append(h, b.descs.data(), b.descs.size() * sizeof(fp8_desc)),
                          static_cast<std::uint32_t>(b.descs.size()), b.tiles, b.wide});
      };
      place_fp8(w.quantizes, at.quantizes);
      place_fp8(w.dequantizes, at.dequantizes);
      where[ph].push_back(std::move(at));
    }

  prog.descs.assign(n, nullptr);
  auto fail = [&](const char* what, int device, rt::error_t e) {
    free_program(prog, lanes);
    return failure(what, device, e);
  };
  for (std::size_t l = 0; l < n; ++l) {
    lane& ln = lanes[l];
    if (rt::error_t e = rt::set_device(ln.device); e != rt::success)
      return fail("selecting the device", ln.device, e);
    if (!host[l].empty()) {
      if (rt::error_t e = rt::malloc(&prog.descs[l], host[l].size()); e != rt::success) {
        prog.descs[l] = nullptr;
        return fail("allocating the operation lists", ln.device, e);
      }
      // upload, not memcpy: the lists must have landed before a kernel on a non-blocking
      // stream reads them (runtime.hpp says why a plain memcpy may return earlier).
      if (rt::error_t e = rt::upload(prog.descs[l], host[l].data(), host[l].size());
          e != rt::success)
        return fail("uploading the operation lists", ln.device, e);
    }
    int& blocks = ln.reduce_blocks[static_cast<std::size_t>(p.type)];
    if (blocks == 0) {
      const rt::error_t e = visit_dtype(p.type, [&](auto x) {
        using T = decltype(x);
        return resident_blocks(&blocks, batched_reduce_kernel<T>, default_block, ln.device);
      });
      if (e != rt::success) return fail("querying the reduce kernel's occupancy", ln.device, e);
    }
    if (status s = reserve_events(ln, static_cast<std::size_t>(low.events[l])); !s) {
      free_program(prog, lanes);
      return s;
    }
  }

  using kind = action::kind;
  for (std::size_t ph = 0; ph < low.phases.size(); ++ph)
    for (std::size_t slot = 0; slot < low.phases[ph].size(); ++slot) {
      const lane_work& w = low.phases[ph][slot];
      const placed& at = where[ph][slot];
      for (const work_ref& ref : w.waits) {
        const lane_work& other = low.phases[ref.phase][ref.slot];
        prog.actions.push_back(
            {.what = kind::wait, .lane = w.lane, .event_lane = other.lane, .event = other.event});
      }
      const auto* base =
          static_cast<const unsigned char*>(prog.descs[static_cast<std::size_t>(w.lane)]);
      if (at.copies != 0 && emulate_mesh != 0)
        prog.actions.push_back({.what = kind::paced_copy,
                                .lane = w.lane,
                                .descs = base + at.copy_offset,
                                .count = at.copies,
                                .tiles = at.copy_tiles,
                                .entries = base + at.entry_offset});
      else if (at.copies != 0)
        prog.actions.push_back({.what = kind::copy,
                                .lane = w.lane,
                                .descs = base + at.copy_offset,
                                .count = at.copies,
                                .tiles = at.copy_tiles});
      for (const lowered_copy& c : w.memcpys)
        prog.actions.push_back({.what = kind::memcpy, .lane = w.lane, .copy = c});
      for (kind k : {kind::quantize, kind::dequantize})
        for (const placed_fp8& f : k == kind::quantize ? at.quantizes : at.dequantizes)
          prog.actions.push_back({.what = k,
                                  .lane = w.lane,
                                  .descs = base + f.offset,
                                  .count = f.count,
                                  .tiles = f.tiles,
                                  .wide = f.wide});
      if (at.reductions != 0)
        prog.actions.push_back({.what = kind::reduce,
                                .lane = w.lane,
                                .descs = base + at.reduce_offset,
                                .count = at.reductions,
                                .tiles = at.reduce_tiles});
      if (w.record)
        prog.actions.push_back(
            {.what = kind::record, .lane = w.lane, .event_lane = w.lane, .event = w.event});
    }
  prog.uses_lane = low.uses_lane;
  prog.key = p;
  // (fp8 images are read again at once by the dequantize kernel: no hints either.)
  prog.streaming_copies = p.wire.taken == wire_format::native &&
                          std::none_of(p.phases.begin(), p.phases.end(), [](const plan_phase& x) {
                            return x.phase == phase::reduce;
                          });
  prog.in.assign(in.begin(), in.end());
  prog.out.assign(out.begin(), out.end());
  return {};
}

}  // namespace relay::gpu
