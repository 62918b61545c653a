// The ipc transport as code outside transport/ipc/ reaches it: the one header of the folder that
// names things in namespace relay (everything else of the folder is relay::ipc). Only code
// compiled by nvcc or hipcc may include this header.
//
//   std::unique_ptr<relay::communicator> comm;
//   relay::status s = relay::communicator_from_environment(relay::ipc_factory(), comm);
#pragma once

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>

#include "relay/bootstrap/bootstrap.hpp"
#include "relay/bootstrap/environment.hpp"
#include "relay/core/status.hpp"
#include "relay/gpu/handles.hpp"
#include "relay/gpu/runtime.hpp"
#include "relay/transport/ipc/options.hpp"
#include "relay/transport/ipc/transport.hpp"

namespace relay {

// The transport and its options (ipc/transport.hpp, ipc/options.hpp).
using ipc_transport = ipc::transport;
using ipc_options = ipc::options;

// The options' environment variables into `o`, where set (ipc::options_from_environment).
inline status ipc_options_from_environment(ipc_options& o) {
  return ipc::options_from_environment(o);
}

// Creates the transport (collective: every rank of `boot` calls it).
inline status make_ipc_transport(bootstrap& boot, int device, const ipc_options& o,
                                 std::chrono::milliseconds timeout,
                                 std::unique_ptr<ipc_transport>& out) {
  return ipc_transport::create(boot, device, o, timeout, out);
}

// The transport of a communicator made from the environment (comm/from_environment.hpp):
//   relay::communicator_from_environment(relay::ipc_factory(), comm);
// Each process drives the device RELAY_DEVICE names (relay-run sets it; else the local rank),
// modulo the devices it sees, so 8 ranks share one GPU where there is one (a hosted helper's
// device is taken as named); RELAY_IPC_BYTES sizes the registered area.
inline auto ipc_factory(ipc_options o = {}) {
  return [o](bootstrap& boot, const environment& env, std::unique_ptr<transport>& out) {
    ipc_options sized = o;
    if (status s = ipc_options_from_environment(sized); !s) return s;
    // A split communicator's ranks share the device with their parent's others.
    sized.device_share = std::max(sized.device_share, env.device_share);
    int devices = 0;
    if (gpu::rt::error_t e = gpu::rt::device_count(&devices); e != gpu::rt::success)
      return gpu::failure("counting the devices", env.device, e);
    if (devices == 0) return status{errc::gpu_error, "no GPU is visible to this process"};
    // A hosted helper's device is its helper device as named (docs/hosted-helpers.md).
    if (env.host >= 0 && env.device >= devices)
      return status{errc::invalid_argument, "helper device " + std::to_string(env.device) +
                                                " is not a device of this process (it sees " +
                                                std::to_string(devices) + ")"};
    const int device = env.device % devices;
    if (gpu::rt::error_t e = gpu::rt::set_device(device); e != gpu::rt::success)
      return gpu::failure("selecting the device", device, e);
    std::unique_ptr<ipc_transport> t;
    if (status s = ipc_transport::create(boot, device, sized, env.timeout, t); !s) return s;
    out = std::move(t);
    return status{};
  };
}

}  // namespace relay
