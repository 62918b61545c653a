// The ipc transport's kernel launches, one function each, by element type at run time: the
// transport (ipc/transport.hpp) launches its kernels through these only, never naming a kernel
// template, so that where they are compiled is a choice of the program's:
//   - by default (header-only) every unit that includes the transport compiles them inline;
//   - with RELAY_IPC_SEPARATE_KERNELS defined, this header only declares them and the program
//     compiles them once, in one nvcc or hipcc unit that includes ipc/launch_impl.hpp (the
//     project's own binaries do: src/transport/ipc/kernels.cpp). The kernels are most of an
//     including unit's compile time (about 85 of 115 s: such a unit takes 30 s without them),
//     and a program with several such units paid it in each.
// Every function returns the launch's error (none goes unchecked: gpu/runtime.hpp's launch).
//
// Only code compiled by nvcc or hipcc may include this header.
#pragma once

#include <cstdint>

#include "relay/core/dtype.hpp"
#include "relay/gpu/copy_desc.hpp"
#include "relay/gpu/runtime.hpp"
#include "relay/transport/ipc/kernels.hpp"
#include "relay/transport/ipc/ll.hpp"
#include "relay/transport/ipc/pull.hpp"

#if defined(RELAY_IPC_SEPARATE_KERNELS)
#define RELAY_IPC_LAUNCH_LINKAGE
#else
#define RELAY_IPC_LAUNCH_LINKAGE inline
#endif

namespace relay::ipc {

// One stage of the stepped form (ipc_step_kernel): `fp8` picks the form with fp8 ends (a stage of
// an fp8 wire; ignored for other types), `paced` mesh emulation's form (a stage with paced
// pushes). With a bare entry stage it is a refusal's entry.
RELAY_IPC_LAUNCH_LINKAGE gpu::rt::error_t launch_step_kernel(
    dtype type, bool fp8, bool paced, unsigned grid, gpu::rt::stream_t stream,
    const ipc_stage* stage, const user_runs& user, std::uint64_t user_tiles, const ipc_env& env);

// A whole call of the one-shot form (ipc_one_shot_kernel): `count` stages from `stages`.
RELAY_IPC_LAUNCH_LINKAGE gpu::rt::error_t launch_one_shot_kernel(
    dtype type, unsigned grid, gpu::rt::stream_t stream, const ipc_stage* stages,
    std::uint32_t count, const user_runs& in, std::uint64_t in_tiles, const user_runs& out,
    std::uint64_t out_tiles, const ipc_env& env);

// A whole call of the pull form (ipc_pull_kernel), pl.grid blocks.
RELAY_IPC_LAUNCH_LINKAGE gpu::rt::error_t launch_pull_kernel(
    dtype type, gpu::rt::stream_t stream, const ipc_pull& pl, const ipc_peers& peers,
    const gpu::copy_desc& in, std::uint64_t in_tiles, const ipc_env& env);

// A whole call of the ll form (ipc_ll_kernel), `grid` blocks (the pull form's grid); `early`:
// launched early (gpu::rt::launch_early).
RELAY_IPC_LAUNCH_LINKAGE gpu::rt::error_t launch_ll_kernel(dtype type, unsigned grid,
                                                           gpu::rt::stream_t stream,
                                                           const ipc_ll& a, const ipc_peers& peers,
                                                           const ipc_env& env, bool early);

// Loads every kernel an ipc transport launches, for every type, on the current device. A
// process that hosts ranks (hosted/) runs several ranks' kernels at once, each waiting for the
// others; a kernel loaded lazily at its first launch would wait for those running kernels to end,
// which wait for it: so every kernel is loaded when the transport is made, before any runs.
RELAY_IPC_LAUNCH_LINKAGE gpu::rt::error_t load_kernels();

// The fewest blocks the device holds resident at once of any stepped or one-shot kernel, for any
// type (their grids' bound: the one-shot form's blocks must all be resident); with `paced`, the
// step kernel's paced form's too (mesh emulation).
RELAY_IPC_LAUNCH_LINKAGE gpu::rt::error_t fewest_resident_blocks(int* fewest, int device,
                                                                 bool paced);

}  // namespace relay::ipc

#if !defined(RELAY_IPC_SEPARATE_KERNELS)
#include "relay/transport/ipc/launch_impl.hpp"
#endif
