// One kernel launch of an ipc call, held as data: what the transport's run() issues, either at
// once or, beside the other ranks of its process (hosted helpers, hosted/streams.hpp), after
// every rank of the process has made its part of the call, in the order of the stages.
//
// Why the order matters: a process's ranks launch on streams of their own, and the runtime feeds
// a device from a few hardware queues (CUDA_DEVICE_MAX_CONNECTIONS, 8 by default), so two of the
// streams may share one. A queue starts its kernels in the order they were launched, and a
// kernel behind one that waits for its stream's previous kernel waits too. Were each rank's
// stages launched together (rank 2's entry, phases and exit, then rank 4's), rank 4's entry could
// sit behind rank 2's first phase, which waits for rank 2's entry, which waits for rank 4's entry:
// no kernel would ever run. Launched by order (every rank's entry, then the stages that publish
// mark 1, then 2, ..., then every exit), every kernel a stage waits for was launched before it,
// and each waits only for stages of a lower order or its own: every queue drains.
//
// Only code compiled by nvcc or hipcc may include this header.
#pragma once

#include <cstdint>

#include "relay/core/dtype.hpp"
#include "relay/gpu/runtime.hpp"
#include "relay/transport/ipc/launch.hpp"

namespace relay::ipc {

struct kernel_launch {
  enum class kernel : std::uint8_t { step, one_shot, pull, ll };
  kernel what = kernel::step;
  std::uint32_t order = 0;  // stage_ref::order; a one-kernel call's is 0
  dtype type = dtype::float32;
  bool fp8 = false;    // step: the stage has fp8 ends
  bool paced = false;  // step: the stage has paced pushes (mesh emulation)
  bool early = false;  // ll: launched early (ipc::options::early_launch)
  unsigned grid = 1;
  gpu::rt::stream_t stream = nullptr;
  const ipc_stage* stages = nullptr;  // step: the stage; one_shot: the first of `count`
  std::uint32_t count = 0;
  user_runs in{}, out{};  // step: `in` are the stage's runs of the caller's buffers
  std::uint64_t in_tiles = 0, out_tiles = 0;
  const ipc_pull* pull = nullptr;    // pull: the program's (kept while its program is)
  const ipc_peers* peers = nullptr;  // pull, ll
  ipc_ll ll{};                       // ll: this call's role and buffers
  gpu::copy_desc copy{};             // pull: the staged input's copy
  ipc_env env{};
  const char* name = "launching the ipc step kernel";  // what a failure to launch it says
};

// Launches `l` on its stream; the runtime's error, if any.
inline gpu::rt::error_t launch_kernel(const kernel_launch& l) {
  switch (l.what) {
    case kernel_launch::kernel::step:
      return launch_step_kernel(l.type, l.fp8, l.paced, l.grid, l.stream, l.stages, l.in,
                                l.in_tiles, l.env);
    case kernel_launch::kernel::one_shot:
      return launch_one_shot_kernel(l.type, l.grid, l.stream, l.stages, l.count, l.in, l.in_tiles,
                                    l.out, l.out_tiles, l.env);
    case kernel_launch::kernel::pull:
      return launch_pull_kernel(l.type, l.stream, *l.pull, *l.peers, l.copy, l.in_tiles, l.env);
    case kernel_launch::kernel::ll:
      return launch_ll_kernel(l.type, l.grid, l.stream, l.ll, *l.peers, l.env, l.early);
  }
  return gpu::rt::success;
}

}  // namespace relay::ipc
