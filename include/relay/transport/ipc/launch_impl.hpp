// The definitions of ipc/launch.hpp's functions: the only place that instantiates the ipc
// kernels. Included by ipc/launch.hpp (header-only, inline), or by the one unit of a program built
// with RELAY_IPC_SEPARATE_KERNELS (ipc/launch.hpp says why).
//
// Only code compiled by nvcc or hipcc may include this header.
#pragma once

#include "relay/core/wire.hpp"
#include "relay/gpu/kernels.hpp"
#include "relay/transport/ipc/launch.hpp"

namespace relay::ipc {

// The step kernel's paced form (mesh emulation) of T.
template <class T>
inline constexpr auto ipc_paced_step_kernel =
    ipc_step_kernel<T, gpu::default_block, gpu::default_unroll, false, true>;

RELAY_IPC_LAUNCH_LINKAGE gpu::rt::error_t launch_step_kernel(
    dtype type, bool fp8, bool paced, unsigned grid, gpu::rt::stream_t stream,
    const ipc_stage* stage, const user_runs& user, std::uint64_t user_tiles, const ipc_env& env) {
  return visit_dtype(type, [&](auto x) {
    using T = decltype(x);
    if (paced)
      return gpu::rt::launch(ipc_paced_step_kernel<T>, grid, gpu::default_block, stream, stage,
                             user, user_tiles, env);
    if constexpr (fp8_wire_type<T>)
      if (fp8)
        return gpu::rt::launch(ipc_step_kernel<T, gpu::default_block, gpu::default_unroll, true>,
                               grid, gpu::default_block, stream, stage, user, user_tiles, env);
    return gpu::rt::launch(ipc_step_kernel<T>, grid, gpu::default_block, stream, stage, user,
                           user_tiles, env);
  });
}

RELAY_IPC_LAUNCH_LINKAGE gpu::rt::error_t launch_one_shot_kernel(
    dtype type, unsigned grid, gpu::rt::stream_t stream, const ipc_stage* stages,
    std::uint32_t count, const user_runs& in, std::uint64_t in_tiles, const user_runs& out,
    std::uint64_t out_tiles, const ipc_env& env) {
  return visit_dtype(type, [&](auto x) {
    using T = decltype(x);
    return gpu::rt::launch(ipc_one_shot_kernel<T>, grid, gpu::default_block, stream, stages, count,
                           in, in_tiles, out, out_tiles, env);
  });
}

RELAY_IPC_LAUNCH_LINKAGE gpu::rt::error_t launch_pull_kernel(
    dtype type, gpu::rt::stream_t stream, const ipc_pull& pl, const ipc_peers& peers,
    const gpu::copy_desc& in, std::uint64_t in_tiles, const ipc_env& env) {
  return visit_dtype(type, [&](auto x) {
    using T = decltype(x);
    return gpu::rt::launch(ipc_pull_kernel<T>, pl.grid, ipc::pull_block_threads, stream, pl, peers,
                           in, in_tiles, env);
  });
}

RELAY_IPC_LAUNCH_LINKAGE gpu::rt::error_t launch_ll_kernel(dtype type, unsigned grid,
                                                           gpu::rt::stream_t stream,
                                                           const ipc_ll& a, const ipc_peers& peers,
                                                           const ipc_env& env, bool early) {
  return visit_dtype(type, [&](auto x) {
    using T = decltype(x);
    auto launch = [&](auto kernel) {
      return gpu::rt::launch_early(early, kernel, grid, ipc::pull_block_threads, stream, a, peers,
                                   env);
    };
    switch (ll_kernel_members(a.members)) {
      case 2: return launch(ipc_ll_kernel<T, 2>);
      case ll_node_members: return launch(ipc_ll_kernel<T, ll_node_members>);
      default: return launch(ipc_ll_kernel<T, max_reduce_inputs>);
    }
  });
}

RELAY_IPC_LAUNCH_LINKAGE gpu::rt::error_t load_kernels() {
  gpu::rt::error_t e = gpu::rt::success;
  auto load = [&](auto kernel) {
    if (e == gpu::rt::success) e = gpu::rt::load_kernel(kernel);
  };
  for (dtype type : all_dtypes)
    visit_dtype(type, [&](auto x) {
      using T = decltype(x);
      load(ipc_step_kernel<T>);
      load(ipc_one_shot_kernel<T>);
      load(ipc_pull_kernel<T>);
      load(ipc_paced_step_kernel<T>);
      load(ipc_ll_kernel<T, 2>);
      load(ipc_ll_kernel<T, ll_node_members>);
      load(ipc_ll_kernel<T, max_reduce_inputs>);
      if constexpr (fp8_wire_type<T>)
        load(ipc_step_kernel<T, gpu::default_block, gpu::default_unroll, true>);
    });
  return e;
}

RELAY_IPC_LAUNCH_LINKAGE gpu::rt::error_t fewest_resident_blocks(int* fewest, int device,
                                                                 bool paced) {
  gpu::rt::error_t e = gpu::rt::success;
  int least = 0;
  auto look = [&](auto kernel) {
    int blocks = 0;
    if (e == gpu::rt::success)
      e = gpu::resident_blocks(&blocks, kernel, gpu::default_block, device);
    if (blocks > 0 && (least == 0 || blocks < least)) least = blocks;
  };
  for (dtype type : all_dtypes)
    visit_dtype(type, [&](auto x) {
      using T = decltype(x);
      look(ipc_step_kernel<T>);
      look(ipc_one_shot_kernel<T>);
      if (paced) look(ipc_paced_step_kernel<T>);
      if constexpr (fp8_wire_type<T>)
        look(ipc_step_kernel<T, gpu::default_block, gpu::default_unroll, true>);
    });
  *fewest = least;
  return e;
}

}  // namespace relay::ipc
