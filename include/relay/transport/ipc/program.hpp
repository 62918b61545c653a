// The ipc transport's program of a plan (ipc/transport.hpp runs it; kernels.hpp and pull.hpp are
// its device side), built on the host once per plan and then only uploaded. Host-only and pure,
// so that every rule in it is unit-tested without a device (tests/unit/transport/ipc/
// test_program.cpp):
//
//   check_plan     what depends on the plan alone, refused alike on every rank;
//   the form       stepped, one-shot or pull: what the kernels can run the plan in (form_fit),
//                  priced and chosen by cost/choose.hpp;
//   the stages     entry, one per phase of this rank's slice in which it issues operations, exit:
//                  each a launch's waits (slice_wait as ipc_wait, with the mark that satisfies
//                  it), copies and reductions at the addresses of the rank areas as this process
//                  maps them, fp8 ends, and the tags that move operands to the caller's buffers
//                  where the plan allows it (ipc/user_memory.hpp);
//   the pull       the pull form's program (ipc/pull_plan.hpp's rules at the areas' addresses);
//   pack           the whole program as one block of device memory at a given address.
//
// An operand's address is its rank's data area (as this process maps it) plus the offset of its
// buffer there (plan/area_layout.hpp) plus its own offset (plan/bind.hpp's address_of). Every
// rank lays out every rank's area alike, so the addresses a rank builds name the same bytes its
// peers address.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "relay/core/status.hpp"
#include "relay/core/wire.hpp"
#include "relay/cost/choose.hpp"
#include "relay/gpu/copy_desc.hpp"
#include "relay/gpu/fp8_desc.hpp"
#include "relay/gpu/link_pacing.hpp"
#include "relay/gpu/reduce_desc.hpp"
#include "relay/plan/area_layout.hpp"
#include "relay/plan/bind.hpp"
#include "relay/plan/slice.hpp"
#include "relay/plan/validate.hpp"
#include "relay/transport/ipc/ll_plan.hpp"
#include "relay/transport/ipc/pull_plan.hpp"
#include "relay/transport/ipc/signals.hpp"
#include "relay/transport/ipc/stage.hpp"
#include "relay/transport/ipc/user_memory.hpp"

namespace relay::ipc {

// A tile of the stepped and one-shot kernels: Block * Unroll units of 16 bytes (16 KiB).
inline constexpr std::uint64_t tile_units =
    static_cast<std::uint64_t>(gpu::default_block) * gpu::default_unroll;
inline constexpr std::uint64_t tile_bytes = tile_units * 16;

// What the kernels move a staged place by to reach the caller's buffer (ipc_env's deltas).
inline std::int64_t delta_to(const void* user, const unsigned char* staged) {
  return static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(user) -
                                   reinterpret_cast<std::uintptr_t>(staged));
}
// A call's copy between the caller's buffer and the area (the entry's copy in, the exit's copy
// out), in the launch's user copy; none when `bytes` is 0. And its tiles.
inline gpu::copy_desc user_copy(const void* src, void* dst, std::uint64_t bytes) {
  return bytes > 0 ? gpu::make_copy(src, dst, bytes) : gpu::copy_desc{};
}
inline std::uint64_t user_copy_tiles(const gpu::copy_desc& c, std::uint64_t bytes) {
  return bytes > 0 ? gpu::tiles_for(c.units, tile_units) : 0;
}
// The same for a copy of `bytes` in `runs` equal runs, each side's runs `src_stride` and
// `dst_stride` apart (0: end to end), with its tiles in `tiles`.
inline user_runs user_copy_runs(const void* src, std::uint64_t src_stride, void* dst,
                                std::uint64_t dst_stride, std::uint64_t bytes, std::uint32_t runs,
                                std::uint64_t& tiles) {
  user_runs u;
  u.runs = std::max<std::uint32_t>(1, runs);
  u.run_bytes = bytes / u.runs;
  u.src_stride = src_stride != 0 ? src_stride : u.run_bytes;
  u.dst_stride = dst_stride != 0 ? dst_stride : u.run_bytes;
  u.first = user_copy(src, dst, u.run_bytes);
  if (u.runs == 1) {
    tiles = user_copy_tiles(u.first, bytes);
    return u;
  }
  for (std::uint32_t k = 0; k < u.runs; ++k) {
    const gpu::copy_desc c =
        user_copy(static_cast<const unsigned char*>(src) + k * u.src_stride,
                  static_cast<unsigned char*>(dst) + k * u.dst_stride, u.run_bytes);
    u.run_tiles = std::max(u.run_tiles, user_copy_tiles(c, u.run_bytes));
  }
  tiles = u.run_tiles * u.runs;
  return u;
}

// What a program is built against besides the plan and the slice, the same for every plan of a
// transport: where every rank's data area lies in this process, and what chooses the form (the
// same on every rank: the transport checks the options and gathers the grids at creation).
struct program_setting {
  std::span<unsigned char* const> areas;  // [rank]: its data area as this process maps it
  call_form form = call_form::automatic;
  form_costs costs{};
  std::uint64_t one_shot_tiles = 0;  // the one-shot and pull forms' cap on a stage's tiles
  std::uint64_t one_shot_grid = 1;   // G_1: the smallest one-shot grid of all ranks
  std::uint64_t stepped_grid = 1;    // G_s: the smallest stepped grid of all ranks
  // Mesh emulation's link rate (ipc::options::emulate_mesh, bytes per second; 0: off): pushes
  // into peers go to each stage's paced list, the pull form is not chosen, the fp8 wire refused.
  std::uint64_t emulate_mesh = 0;
  // Its walkers (ipc::options::paced_blocks, paced_move_kib): the blocks per push, 0: the rate's
  // (paced_walkers); the moves a walker cuts a paced tile into (1: at once; 4: 16 KiB each).
  std::uint32_t paced_blocks = 0, paced_parts = 1;
};

// The blocks that walk each paced push at `bytes_per_second`: `chosen` where set, otherwise one
// fewer than the GPU executor's paced copy takes (gpu::link_blocks: 1 up to 16 GB/s). Here the
// walkers spin within the rank's share of a device its emulated peers share too, beside the
// rank's own work: at 12 GB/s one walker holds a link as two do (the direct route's 64 MiB
// all-gather, 2987 against 2999 us), and the relay route's reduce-scatter, all-gather and
// all-to-all at A = 4 run 1.20-1.30x their predicted time with one against 1.70-2.04x with two,
// mostly slower still with four (bench/results/2026-12-07-h100-ll-promise).
inline std::uint32_t paced_walkers(std::uint64_t bytes_per_second, std::uint32_t chosen) {
  return chosen != 0 ? chosen : gpu::link_blocks(bytes_per_second) - 1;
}

// What depends on the plan alone (so every rank refuses alike, with nothing enqueued), against a
// transport of `ranks` ranks with `area_bytes` of data area each. Checked once per plan: per call
// it would cost more than the launches (validate_plan alone took 4-13 us a call on a slow host).
inline status check_plan(const plan& p, int ranks, std::uint64_t area_bytes) {
  if (status s = validate_plan(p); !s) return s;
  if (p.ranks() != ranks)
    return {errc::invalid_argument, "the plan has " + std::to_string(p.ranks()) +
                                        " ranks; the ipc transport has " + std::to_string(ranks)};
  if (p.in_place)
    return {errc::invalid_argument, "the ipc transport runs the out-of-place plan of a call"};
  if (2 * p.phases.size() + 1 >= signal_abort)  // marks: up to two per phase
    return {errc::unsupported, "the plan has more phases than a signal word counts"};
  if (const std::uint64_t need = largest_area(p); need > area_bytes)
    return {errc::out_of_memory,
            "the call needs " + std::to_string(need) +
                " bytes of registered memory per rank; the ipc transport has " +
                std::to_string(area_bytes) +
                " (raise RELAY_IPC_BYTES or ipc_options::bytes_per_rank)"};
  return {};
}

// Where operand `o` of `p` lies in this process.
inline unsigned char* operand_address(const plan& p, std::span<unsigned char* const> areas,
                                      const plan_operand& o) {
  const auto r = static_cast<std::size_t>(o.rank);
  return address_of(o, areas_at(areas[r], layout_of(p, r)));
}

// What the kernels can run `p` in: the one-shot form where every stage fits the cap, the wire is
// native (the one-shot kernel has no fp8 ends) and no mesh is emulated (only the step kernel has
// a paced form); the pull form where it applies (pull_plan.hpp) and its stage fits the cap too
// (never under emulation either: it reads peers' memory, which no link clock paces); the ll form
// where the pull fits and every input fits a slot (ll_plan.hpp).
inline form_fit fit_of(const plan& p, const program_setting& s) {
  const std::vector<std::uint64_t> stages = plan_stages(p, tile_bytes);
  const std::uint64_t largest = *std::max_element(stages.begin(), stages.end());
  form_fit f;
  f.one_shot = p.wire.taken == wire_format::native && s.one_shot_tiles > 0 &&
               largest <= s.one_shot_tiles && s.emulate_mesh == 0;
  f.pull = f.one_shot && pull_applies(p) && pull_stage_tiles(p, tile_bytes) <= s.one_shot_tiles;
  f.ll = f.pull && ll_applies(p);
  return f;
}

// The form of `p`, alike on every rank (cost/choose.hpp).
inline form_choice form_of(const plan& p, const program_setting& s) {
  return choose_form(
      s.form, p, fit_of(p, s),
      price_forms(plan_stages(p, tile_bytes), s.costs, s.one_shot_grid, s.stepped_grid));
}

// The pull program of rank `me` for `p` (pull_applies): its sum against the staged places.
inline ipc_pull pull_program(const plan& p, int me, const program_setting& s) {
  const pull_role role = pull_role_of(p, me);
  ipc_pull a;
  a.readers = role.readers;
  if (role.members.empty()) return a;  // grid 1: the agreement alone
  a.grid = pull_grid(p, s.one_shot_grid);
  a.members = static_cast<std::uint32_t>(role.members.size());
  for (std::size_t k = 0; k < role.members.size(); ++k) {
    const auto q = static_cast<std::size_t>(role.members[k]);
    a.member[k] = static_cast<std::uint16_t>(q);
    if (role.members[k] == me) a.mine = static_cast<std::uint32_t>(k);
    a.src[k] = s.areas[q] + layout_of(p, q).input;
  }
  const auto r = static_cast<std::size_t>(me);
  a.dst = s.areas[r] + layout_of(p, r).output;
  a.count = role.count;
  a.divisor = p.divisor;
  return a;
}

// One stage as built on the host: its lists, and its header, whose list pointers pack() sets.
struct stage_lists {
  std::vector<ipc_wait> waits;
  std::vector<gpu::copy_desc> copies;
  std::vector<gpu::reduce_desc> reduces;
  std::vector<ipc_copy_tags> copy_tags;      // parallel to copies
  std::vector<ipc_reduce_tags> reduce_tags;  // parallel to reduces
  std::vector<gpu::fp8_desc> fp8[2];         // ends of elements, of float partials
  std::vector<ipc_paced_copy> paced;         // mesh emulation: the pushes into peers
  bool moves = false;                        // some operand has a tag: the tags go with the lists
  ipc_stage head;
  // Its tiles, all lists together, and a block per walker of a paced push (the grid it asks
  // for), and whether it has fp8 ends.
  std::uint64_t tiles() const {
    return head.copy_tiles + head.reduce_tiles + head.fp8_tiles[0] + head.fp8_tiles[1] +
           std::uint64_t{head.paced_count} * head.paced_blocks;
  }
  bool has_fp8() const { return head.fp8_tiles[0] + head.fp8_tiles[1] > 0; }
};

// A plan's program for one rank.
struct program {
  form_choice form;
  bool user_memory =
      false;        // the plan lets this rank's input and output stay in the caller's memory
  ipc_pull pull{};  // form.pull: the pull kernel's program (and form.ll: the ll kernel's role)
  std::vector<stage_lists> stages;      // the entry, the slice's phases that issue, the exit
  std::vector<std::uint64_t> peer_out;  // [rank]: its staged output here (a peer's delta's base)
};

namespace detail {

// The waits of a stage (the slice's, but entry waits: the entry stage waits for every peer).
inline std::vector<ipc_wait> waits_of(const plan& p, const plan_slice& slice,
                                      const std::vector<slice_wait>& ws) {
  std::vector<ipc_wait> v;
  for (const slice_wait& w : ws) {
    if (w.phase < 0) continue;
    const plan_phase& ph = p.phases[static_cast<std::size_t>(w.phase)];
    ipc_wait x;
    x.peer = w.peer;
    x.phase = w.phase;
    x.done = slice_mark(slice, w);
    x.step = ph.step;
    x.kind = w.arrival ? wait_arrival : ph.phase == phase::reduce ? wait_reduce : wait_transfer;
    v.push_back(x);
  }
  return v;
}

// Operation i's fp8 end in a stage: the sender's quantize of its source straight into the
// receiver's slot, or (an arrival) the receiver's dequantize from its slot into the destination.
inline void add_fp8_end(const plan& p, std::uint32_t i, bool arrival, stage_lists& h,
                        std::span<unsigned char* const> areas) {
  const plan_op& o = p.ops[i];
  auto at = [&](const plan_operand& x) { return operand_address(p, areas, x); };
  const plan_operand slot = wire_recv_end(p, i);
  const bool wide = (arrival ? p.dst_width(o) : p.source_width(o, 0)) == 4;
  h.fp8[wide ? 1 : 0].push_back(arrival
                                    ? gpu::fp8_desc{at(slot), at(o.dst), o.count, 0}
                                    : gpu::fp8_desc{at(p.sources_of(o)[0]), at(slot), o.count, 0});
}

// Bytes [first, first + bytes) of copy i (all of it: 0 and its bytes) in a stage: a push into a
// peer (the paced list under mesh emulation) or a copy, with the tags that move its operands.
inline void add_copy_part(const plan& p, std::uint32_t i, int me, bool user_memory, bool paced,
                          stage_lists& h, std::span<unsigned char* const> areas,
                          std::uint64_t first, std::uint64_t bytes) {
  const plan_op& o = p.ops[i];
  auto tag = [&](const plan_operand& x) { return user_memory ? operand_tag(x, me) : tag_fixed; };
  const plan_operand& src = p.sources_of(o)[0];
  const gpu::copy_desc c = gpu::make_copy(operand_address(p, areas, src) + first,
                                          operand_address(p, areas, o.dst) + first, bytes);
  const ipc_copy_tags g{tag(src), tag(o.dst)};
  if (g.dst >= tag_peer_output) h.head.push_mask |= std::uint64_t{1} << o.dst.rank;
  const bool moves = g.src != tag_fixed || g.dst != tag_fixed;
  h.moves = h.moves || moves;
  if (paced && o.dst.rank != me) {
    h.paced.push_back({c, g, static_cast<std::uint32_t>(o.dst.rank)});
    h.head.paced_moves |= moves ? 1u : 0u;
    return;
  }
  h.copies.push_back(c);
  h.copy_tags.push_back(g);
}

// Whether copy i moves rank `me`'s input into its own output where no other operation of the
// plan reads or writes that output, nor writes that input (all-gather's and all-to-all's own
// block): then it may run in any stage of the rank's from its own on, as nothing waits for it but
// the call's end, and no input is written (plan_allows_user_memory). Ranges in bytes, each
// operand at its own width.
inline bool free_local_copy(const plan& p, std::uint32_t i, int me) {
  const plan_op& o = p.ops[i];
  if (o.phase != phase::transfer || o.count == 0) return false;
  const plan_operand& src = p.sources_of(o)[0];
  if (src.rank != me || o.dst.rank != me || src.buf != buffer::input || o.dst.buf != buffer::output)
    return false;
  const std::uint64_t bytes = o.count * static_cast<std::uint64_t>(p.dst_width(o));
  auto overlaps = [&](const plan_operand& x, std::uint64_t x_bytes, const plan_operand& y) {
    return x.rank == y.rank && x.buf == y.buf && x.offset < y.offset + bytes &&
           y.offset < x.offset + x_bytes;
  };
  for (std::uint32_t j = 0; j < p.ops.size(); ++j) {
    const plan_op& q = p.ops[j];
    if (j == i || q.count == 0) continue;
    const std::uint64_t written = q.count * static_cast<std::uint64_t>(p.dst_width(q));
    if (overlaps(q.dst, written, o.dst) || overlaps(q.dst, written, src)) return false;
    const auto sources = p.sources_of(q);
    for (std::size_t k = 0; k < sources.size(); ++k)
      if (overlaps(sources[k], q.count * static_cast<std::uint64_t>(p.source_width(q, k)), o.dst))
        return false;
  }
  return true;
}

// Operation i in a stage: a copy (a push, when its destination is a peer's) or a reduction, each
// with the tags that move its operands (all fixed unless `user_memory`). Under mesh emulation
// (`paced`) a push goes to the paced list instead of the copy list.
inline void add_operation(const plan& p, std::uint32_t i, int me, bool user_memory, bool paced,
                          stage_lists& h, std::span<unsigned char* const> areas) {
  const plan_op& o = p.ops[i];
  auto at = [&](const plan_operand& x) { return operand_address(p, areas, x); };
  auto tag = [&](const plan_operand& x) { return user_memory ? operand_tag(x, me) : tag_fixed; };
  const auto sources = p.sources_of(o);
  if (o.phase == phase::transfer) {
    add_copy_part(p, i, me, user_memory, paced, h, areas, 0, o.count * p.dst_width(o));
    return;
  }
  ipc_reduce_tags g;
  g.dst = tag(o.dst);
  bool moves = g.dst != tag_fixed;
  for (std::size_t k = 0; k < sources.size(); ++k) {
    g.src[k] = tag(sources[k]);
    moves = moves || g.src[k] != tag_fixed;
  }
  h.moves = h.moves || moves;
  h.reduce_tags.push_back(g);
  h.reduces.push_back(gpu::reduce_of(p, o, at));
}

// The stage of slice phase `sp` (one this rank issues in): its waits, the mark it publishes, and
// its operations, each cut into tiles; under mesh emulation (`s.emulate_mesh`, bytes per second)
// its pushes into peers in the paced list, with the blocks that walk each.
inline stage_lists phase_stage(const plan& p, const plan_slice& slice, const slice_phase& sp,
                               bool user_memory, const program_setting& s,
                               const std::vector<bool>& spread) {
  const std::uint64_t emulate_mesh = s.emulate_mesh;
  std::span<unsigned char* const> areas = s.areas;
  const bool fp8 = p.wire.taken != wire_format::native;
  stage_lists h;
  h.waits = waits_of(p, slice, sp.waits);
  h.head.publish = static_cast<std::int32_t>(slice_mark(
      slice,
      {static_cast<std::uint16_t>(slice.rank), static_cast<std::int32_t>(sp.index), sp.arrival}));
  h.head.fp8_dequantize = sp.arrival ? 1 : 0;
  h.head.fp8_format = static_cast<std::uint32_t>(fp8 ? fp8_format_of(p.wire.taken) : fp8_format{});
  for (std::uint32_t i : sp.issued) {
    if (p.ops[i].count == 0 || spread[i]) continue;
    if (fp8 && p.crosses_wire(p.ops[i]))
      add_fp8_end(p, i, sp.arrival, h, areas);
    else
      add_operation(p, i, slice.rank, user_memory, emulate_mesh != 0, h, areas);
  }
  h.head.paced_count = static_cast<std::uint32_t>(h.paced.size());
  h.head.paced_blocks = h.paced.empty() ? 0 : paced_walkers(emulate_mesh, s.paced_blocks);
  h.head.paced_parts = s.paced_parts;
  return h;
}

// A stage's lists cut into tiles, once they are complete.
inline void assign_stage_tiles(const plan& p, stage_lists& h) {
  h.head.copy_tiles = gpu::assign_tiles(h.copies.data(), h.copies.size(), tile_units);
  h.head.reduce_tiles = gpu::assign_tiles(h.reduces.data(), h.reduces.size(), tile_units);
  for (int w = 0; w < 2; ++w)
    h.head.fp8_tiles[w] = gpu::assign_fp8_tiles(
        h.fp8[w], w == 1 ? sizeof(float) : static_cast<std::size_t>(p.element_size()));
}

// The stepped form's free local copies (free_local_copy) spread evenly, in whole tiles, over the
// rank's stages from their own to its last phase's: otherwise the stage that pushes the most
// (all-gather's first, which scatters to every helper) also makes the whole copy, and its mark,
// which the helpers wait for before they forward, waits for it, while the later stages have
// blocks to spare. `stages[k]` is the program's stage of `phases[k]` (the issuing slice phases).
inline void spread_free_copies(const plan& p, int me, bool user_memory, const program_setting& s,
                               const std::vector<const slice_phase*>& phases,
                               std::span<stage_lists> stages, const std::vector<bool>& spread) {
  for (std::size_t k = 0; k < phases.size(); ++k)
    for (std::uint32_t i : phases[k]->issued) {
      if (!spread[i]) continue;
      const std::uint64_t bytes =
          p.ops[i].count * static_cast<std::uint64_t>(p.dst_width(p.ops[i]));
      const std::uint64_t tiles = (bytes + tile_bytes - 1) / tile_bytes;
      const std::uint64_t parts = std::min<std::uint64_t>(phases.size() - k, tiles);
      std::uint64_t first = 0;
      for (std::uint64_t j = 0; j < parts; ++j) {
        const std::uint64_t end = j + 1 == parts ? bytes : (tiles * (j + 1) / parts) * tile_bytes;
        add_copy_part(p, i, me, user_memory, s.emulate_mesh != 0, stages[k + j], s.areas, first,
                      end - first);
        first = end;
      }
    }
}

}  // namespace detail

// The program of `p` for the rank of `slice` (cut with the receiver's fp8 ends: an fp8 wire's
// arrivals are stages of their own), or why not: the slice was cut with other ends.
inline status build_program(const plan& p, const plan_slice& slice, const program_setting& s,
                            program& out) {
  const bool fp8 = p.wire.taken != wire_format::native;
  if (slice.marks_per_phase != (fp8 ? 2 : 1))
    return {errc::invalid_argument,
            "the slice was cut with other fp8 ends than the ipc transport's (wire_ends)"};
  if (fp8 && s.emulate_mesh != 0)
    return {errc::unsupported,
            "mesh emulation (RELAY_IPC_EMULATE_MESH) paces native pushes only, not the fp8 "
            "wire's quantized images: run the call on the native wire"};
  const int me = slice.rank;
  program pr;
  // Which operands follow the call's buffers: none where the plan breaks the rules that allow it
  // (then every call of it is staged), or on an fp8 wire (the slots are in the area).
  pr.user_memory = !fp8 && plan_allows_user_memory(p);
  pr.form = form_of(p, s);
  if (pr.form.pull) pr.pull = pull_program(p, me, s);
  stage_lists entry;
  entry.head.enter =
      1;  // the agreement: it waits for every peer's entry, so no stage waits for one
  pr.stages.push_back(entry);
  std::vector<bool> spread(p.ops.size(), false);
  const bool stepped = !pr.form.one_shot && !pr.form.pull && !pr.form.ll;
  std::vector<const slice_phase*> issuing;
  for (const slice_phase& sp : slice.phases) {
    if (sp.issued.empty()) continue;  // only receives: the peers' waits cover them
    issuing.push_back(&sp);
    if (stepped && !fp8)
      for (std::uint32_t i : sp.issued)
        spread[i] = detail::free_local_copy(p, i, me);
  }
  for (const slice_phase* sp : issuing)
    pr.stages.push_back(detail::phase_stage(p, slice, *sp, pr.user_memory, s, spread));
  const std::span<stage_lists> phase_stages = std::span(pr.stages).subspan(1);
  detail::spread_free_copies(p, me, pr.user_memory, s, issuing, phase_stages, spread);
  for (stage_lists& h : phase_stages)
    detail::assign_stage_tiles(p, h);
  stage_lists exit;
  exit.head.leave = 1;
  exit.waits = detail::waits_of(p, slice, slice.exit_waits);
  pr.stages.push_back(exit);
  pr.peer_out.resize(static_cast<std::size_t>(p.ranks()));
  for (std::size_t q = 0; q < pr.peer_out.size(); ++q)
    pr.peer_out[q] = reinterpret_cast<std::uintptr_t>(s.areas[q] + layout_of(p, q).output);
  out = std::move(pr);
  return {};
}

// A stage in device memory and its tile count (for the grid).
struct stage_ref {
  const ipc_stage* device = nullptr;
  std::uint64_t tiles = 0;
  bool fp8 = false;    // it has fp8 ends: the kernel's Fp8 form runs it
  bool paced = false;  // it has paced pushes: the kernel's Paced form runs it (mesh emulation)
  // Its place among every rank's stages of a call: the entry 0, a phase's stage the mark it
  // publishes (what its peers' later stages wait for), the exit last (ipc/kernel_launch.hpp).
  std::uint32_t order = 0;
};

// The exit stage's order (stage_ref::order): after every phase's.
inline constexpr std::uint32_t last_stage_order = 0xffffffffu;

// A program laid out for device memory at one address: `bytes` to upload there, and where its
// stages are. The stage headers come first, contiguous (the one-shot kernel walks them), then
// peer_out, then each stage's lists, each 16-byte aligned.
struct packed_program {
  std::vector<unsigned char> bytes;
  stage_ref entry, exit;
  std::vector<stage_ref> phases;
  std::uint64_t most_tiles = 0;  // of any phase
};

namespace detail {

inline std::size_t aligned16(std::size_t x) {
  return (x + 15) / 16 * 16;
}

template <class T>
std::size_t list_bytes(const std::vector<T>& v) {
  return aligned16(v.size() * sizeof(T));
}

}  // namespace detail

// Bytes of `pr` packed.
inline std::size_t packed_size(const program& pr) {
  using detail::list_bytes;
  std::size_t bytes = detail::aligned16(pr.stages.size() * sizeof(ipc_stage));
  for (const stage_lists& h : pr.stages)
    bytes += list_bytes(h.waits) + list_bytes(h.copies) + list_bytes(h.reduces) +
             (h.moves ? list_bytes(h.copy_tags) + list_bytes(h.reduce_tags) : 0) +
             list_bytes(h.fp8[0]) + list_bytes(h.fp8[1]) + list_bytes(h.paced);
  return bytes + list_bytes(pr.peer_out);
}

// `pr` packed for device memory at `device` (packed_size(pr) bytes there).
inline packed_program pack(const program& pr, void* device) {
  packed_program out;
  out.bytes.assign(packed_size(pr), 0);
  auto* base = static_cast<unsigned char*>(device);
  std::size_t at = detail::aligned16(pr.stages.size() * sizeof(ipc_stage));
  auto place = [&](const auto& v) {  // the list at `at`, as the device will address it
    using E = typename std::decay_t<decltype(v)>::value_type;
    const std::size_t n = v.size() * sizeof(E);
    if (n > 0) std::memcpy(out.bytes.data() + at, v.data(), n);
    const auto* where = reinterpret_cast<const E*>(base + at);
    at += detail::aligned16(n);
    return where;
  };
  const std::uint64_t* peer_out = place(pr.peer_out);
  for (std::size_t i = 0; i < pr.stages.size(); ++i) {
    const stage_lists& h = pr.stages[i];
    ipc_stage s = h.head;
    s.waits = place(h.waits);
    s.copies = place(h.copies);
    s.reduces = place(h.reduces);
    if (h.moves) {
      s.copy_tags = h.copy_tags.empty() ? nullptr : place(h.copy_tags);
      s.reduce_tags = h.reduce_tags.empty() ? nullptr : place(h.reduce_tags);
      s.peer_out = peer_out;
    }
    for (int w = 0; w < 2; ++w) {
      s.fp8[w] = h.fp8[w].empty() ? nullptr : place(h.fp8[w]);
      s.fp8_count[w] = static_cast<std::uint32_t>(h.fp8[w].size());
    }
    s.paced = h.paced.empty() ? nullptr : place(h.paced);
    s.wait_count = static_cast<std::uint32_t>(h.waits.size());
    s.copy_count = static_cast<std::uint32_t>(h.copies.size());
    s.reduce_count = static_cast<std::uint32_t>(h.reduces.size());
    s.index = static_cast<std::uint32_t>(i);
    std::memcpy(out.bytes.data() + i * sizeof(ipc_stage), &s, sizeof s);
    const bool last = i + 1 == pr.stages.size();
    const auto order = i == 0 ? std::uint32_t{0}
                       : last ? last_stage_order
                              : static_cast<std::uint32_t>(h.head.publish);
    const stage_ref ref{reinterpret_cast<const ipc_stage*>(base) + i, h.tiles(), h.has_fp8(),
                        h.head.paced_count > 0, order};
    if (i == 0) {
      out.entry = ref;
    } else if (last) {
      out.exit = ref;
    } else {
      out.phases.push_back(ref);
      out.most_tiles = std::max(out.most_tiles, ref.tiles);
    }
  }
  return out;
}

}  // namespace relay::ipc
