// The nccl transport as code outside transport/nccl/ reaches it: nccl_config, the transport over
// an existing NCCL communicator (nccl_transport::over, nccl_transport::create) and the factory
// of a communicator made from the environment. NCCL (RCCL) is the process's, found when the
// transport is made (nccl/library.hpp). Only code compiled by nvcc or hipcc may include this
// header.
#pragma once

#include <functional>
#include <memory>

#include "relay/bootstrap/bootstrap.hpp"
#include "relay/bootstrap/environment.hpp"
#include "relay/core/status.hpp"
#include "relay/gpu/handles.hpp"
#include "relay/gpu/runtime.hpp"
#include "relay/transport/nccl/transport.hpp"

namespace relay {

// The transport of a communicator made from the environment (comm/from_environment.hpp):
//   relay::communicator_from_environment(relay::nccl_factory(), comm);
// Each process drives the device the environment names (RELAY_DEVICE, else the local rank).
inline std::function<status(bootstrap&, const environment&, std::unique_ptr<transport>&)>
nccl_factory(nccl_config config = {}) {
  return [config](bootstrap& boot, const environment& env, std::unique_ptr<transport>& out) {
    // The communicator owns the bootstrap and outlives its transport: a non-owning handle.
    std::shared_ptr<bootstrap> shared(&boot, [](bootstrap*) {});
    // The library first: a machine without it is told which it lacks, GPU or not.
    const nccl_api* nccl = nullptr;
    if (status s = gpu_nccl(nccl); !s) return s;
    if (gpu::rt::error_t e = gpu::rt::set_device(env.device); e != gpu::rt::success)
      return gpu::failure("selecting the device", env.device, e);
    std::unique_ptr<nccl_transport> t;
    if (status s = nccl_transport::create(shared, env.device, t, config, env.timeout); !s) return s;
    out = std::move(t);
    return status{};
  };
}

}  // namespace relay
