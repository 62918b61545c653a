// The transports a build of the C ABI has: shm always (transports_host.cpp); ipc and nccl in the
// GPU builds (transports_gpu.cpp, compiled by nvcc for librelay_c_cuda and by a HIP compiler for
// librelay_c_hip). The rest of capi/ sees only this interface.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string_view>

#include "relay/bootstrap/bootstrap.hpp"
#include "relay/bootstrap/environment.hpp"
#include "relay/core/fp8.hpp"
#include "relay/core/status.hpp"
#include "relay/transport/transport.hpp"

namespace relay::c_abi {

// "shm" or "shm,ipc,nccl": what relay_transports() reports and choose_transport accepts.
const char* compiled_transports();

// Makes transport `name` (one choose_transport returned) over a connected bootstrap: collective.
// bytes: the data area per rank, 0 for the transport's default (its environment variable).
status make_transport(std::string_view name, bootstrap& boot, const environment& env,
                      std::size_t bytes, std::unique_ptr<transport>& out);

// The e4m3 encoding `device` converts (core/fp8_target.hpp): what wire_format::fp8 takes on this
// build's communicators. None in the host build, where the device cannot be asked (no GPU), or
// where it has no fp8 conversions (the machine's topology decides there).
std::optional<fp8_format> device_fp8(int device);

}  // namespace relay::c_abi
