// The one rule that decides which transport a communicator of the C ABI uses. Bindings pass the
// name the user gave and the kind of memory the calls will pass; they never decide.
//
//   auto  device memory: ipc when every rank is on one node (peers map each other's memory);
//         host memory:   shm when every rank is on one node;
//         ranks on several nodes: an error (nccl spans nodes, and is taken only by name).
//   shm   host memory on one node; ipc: device memory on one node; nccl: device memory.
// A transport this library was not built with is an error naming the library that has it.
#pragma once

#include <string>
#include <string_view>

#include "relay/core/status.hpp"

namespace relay::c_abi {

enum class memory_kind { host, device };

// `compiled`: the transports this build has, as relay_transports() lists them ("shm,ipc,nccl").
inline status choose_transport(std::string_view requested, memory_kind memory, bool one_node,
                               std::string_view compiled, std::string& chosen) {
  const bool device = memory == memory_kind::device;
  const std::string_view memory_name = device ? "device memory" : "host memory";
  std::string name(requested.empty() ? "auto" : requested);
  if (name == "auto") {
    if (!one_node)
      return {errc::unsupported,
              "transport 'auto' runs on one node (" + std::string(device ? "ipc" : "shm") +
                  "), and these ranks are on several; name 'nccl' for device memory across nodes"};
    name = device ? "ipc" : "shm";
  } else if (name == "shm" || name == "ipc") {
    if (!one_node)
      return {errc::unsupported, "transport '" + name + "' needs every rank on one node, and " +
                                     "these ranks are on several"};
  } else if (name != "nccl") {
    return {errc::invalid_argument, "transport '" + name + "' is not one of auto, shm, ipc, nccl"};
  }
  if (name == "shm" && device)
    return {errc::unsupported,
            "transport 'shm' moves host memory; for device memory use 'ipc' or 'nccl'"};
  if (name != "shm" && !device)
    return {errc::unsupported, "transport '" + name + "' moves device memory; for " +
                                   std::string(memory_name) + " use 'shm'"};
  bool have = false;
  for (std::size_t at = 0; at <= compiled.size();) {
    const std::size_t end = std::min(compiled.find(',', at), compiled.size());
    have = have || compiled.substr(at, end - at) == name;
    at = end + 1;
  }
  if (!have)
    return {errc::unsupported, "this library (transports " + std::string(compiled) +
                                   ") was built without '" + name +
                                   "'; load librelay_c_cuda (built where nvcc is found) or "
                                   "librelay_c_hip (where a HIP compiler is)"};
  chosen = name;
  return {};
}

}  // namespace relay::c_abi
