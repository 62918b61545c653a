// A program's records as the ipc transport's kernels read them (kernels.hpp, pull.hpp): the
// stages of the plan's forms, each a launch's work (waits, copies, reductions, fp8 ends, and what
// moves their operands to the caller's buffers), and the pull form's program. Plain data, built
// on the host (ipc/program.hpp), which includes this header without a GPU compiler.
#pragma once

#include <cstdint>

#include "relay/core/config.hpp"
#include "relay/gpu/copy_desc.hpp"
#include "relay/gpu/fp8_desc.hpp"
#include "relay/gpu/reduce_desc.hpp"
#include "relay/schedule/schedule.hpp"
#include "relay/transport/ipc/report.hpp"

namespace relay::ipc {

// The copy between the caller's buffer and this rank's area that the entry (in) or the exit
// (out) makes: `runs` runs of `run_bytes`, each side's `src_stride` / `dst_stride` apart (a piece
// of a larger call: plan/pieces.hpp; the area's side end to end). One run: `first`, cut on the
// host; several: run k is cut on the device as gpu::make_copy cuts it (the runs' alignments may
// differ) and takes `run_tiles` tiles, the most any run needs.
struct user_runs {
  gpu::copy_desc first{};
  std::uint64_t run_bytes = 0, src_stride = 0, dst_stride = 0, run_tiles = 0;
  std::uint32_t runs = 1;
};

// One slice_wait, with what a report needs to name it.
struct ipc_wait {
  std::uint32_t peer = 0;
  std::int32_t phase = -1;  // plan phase; -1 (call_entry): the peer entered the call
  std::uint32_t step = 0;
  std::uint32_t kind = ipc::wait_transfer;
  std::uint64_t done = 0;  // the peer's mark that satisfies it (slice_mark)
};

// Which delta moves each operand of a descriptor: ipc::operand_tag (0: none; 1, 2: this rank's
// input, output; 3 + q: peer q's output).
struct ipc_copy_tags {
  std::uint8_t src = 0, dst = 0;
};
struct ipc_reduce_tags {
  std::uint8_t dst = 0;
  std::uint8_t src[max_reduce_inputs] = {};
};
inline constexpr int ipc_delta_count = 3 + max_ranks;

// A push paced by mesh emulation (ipc::options::emulate_mesh): a copy into peer `link`'s memory,
// each of its tiles booked on this rank's clock of that link (kernels.hpp), and its tags.
struct ipc_paced_copy {
  gpu::copy_desc copy{};
  ipc_copy_tags tags{};
  std::uint32_t link = 0;  // the destination rank
};

// One launch's work, in device memory (built once per plan: ipc/program.hpp).
struct ipc_stage {
  const ipc_wait* waits = nullptr;
  const gpu::copy_desc* copies = nullptr;
  const gpu::reduce_desc* reduces = nullptr;
  std::uint32_t wait_count = 0, copy_count = 0, reduce_count = 0;
  std::uint32_t enter = 0;  // 1: this launch begins a call (the agreement, the call counter)
  // 1: this launch ends the call: after its waits, a peer that gave up on the call makes this
  // rank give up too, before it writes its output (one outcome per call, kernels.hpp).
  std::uint32_t leave = 0;
  std::int32_t publish = -1;  // the mark's `done` when finished (phase + 1); -1: none
  std::uint64_t copy_tiles = 0, reduce_tiles = 0;
  // Null where no operand of the list has a tag (nothing moves: the lists run as built).
  const ipc_copy_tags* copy_tags = nullptr;
  const ipc_reduce_tags* reduce_tags = nullptr;
  const std::uint64_t* peer_out = nullptr;  // [ranks]: rank q's staged output (this plan), here
  std::uint64_t push_mask = 0;              // bit q: a copy of the stage writes peer q's output
  // fp8 ends (kernels.hpp, the fp8 wire): [0] of the plan's element type, [1] of float partial
  // sums; all quantizes (a phase's pushes) or all dequantizes (its arrivals), in `fp8_format`.
  const gpu::fp8_desc* fp8[2] = {nullptr, nullptr};
  std::uint32_t fp8_count[2] = {0, 0};
  std::uint64_t fp8_tiles[2] = {0, 0};
  std::uint32_t fp8_dequantize = 0;
  std::uint32_t fp8_format = 0;  // relay::fp8_format
  // Mesh emulation (ipc::options::emulate_mesh): the stage's pushes into peers, paced, each walked
  // by `paced_blocks` blocks (ipc::paced_walkers of the rate); the copy list then holds only the
  // rank-local copies. paced_moves: some operand of the list has a tag. None without emulation.
  const ipc_paced_copy* paced = nullptr;
  std::uint32_t paced_count = 0, paced_blocks = 0, paced_moves = 0;
  // How a walker moves a paced tile of 64 KiB: 1, at once (all of it in flight, as the GPU
  // executor's paced copy); 4, as four of the kernel's own 16 KiB copy tiles, one after another
  // (ipc::options::paced_move_kib, for diagnosis).
  std::uint32_t paced_parts = 1;
  // Its place in the program (the entry 0, the exit last): its row of the device trace
  // (ipc/stage_trace.hpp).
  std::uint32_t index = 0;
};

// A rank's pull program (pull.hpp), passed by value with every launch (built once per plan).
struct ipc_pull {
  // The sum against the staged places: the members' staged inputs here, this rank's staged
  // output; each moved per call by its delta (a member's published place, this rank's buffers).
  const void* src[max_reduce_inputs] = {};
  void* dst = nullptr;
  std::uint64_t count = 0;    // elements
  std::int32_t divisor = 1;   // AVG: A
  std::uint32_t members = 0;  // 0: this rank reads nothing (a helper, a group of count 0)
  std::uint32_t mine = 0;     // this rank's index among them
  std::uint32_t grid = 1;     // every active rank's grid
  std::uint16_t member[max_reduce_inputs] = {};
  std::uint64_t readers = 0;  // bit q: rank q reads this rank's input
};

}  // namespace relay::ipc
