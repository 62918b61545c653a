// A communicator for a process started by relay-run, torchrun or an mpirun-style launcher: the
// TCP bootstrap from the environment (bootstrap/environment.hpp), then the transport the caller
// names by its factory, so adding a transport adds a factory and touches nothing here. Where
// RELAY_HELPER_DEVICES names helper devices, the processes host them (docs/hosted-helpers.md):
// every process reads its own list and creation agrees on it, so a process that sets it beside
// one that does not fails on every process.
//
//   std::unique_ptr<relay::communicator> comm;
//   relay::status s = relay::communicator_from_environment(relay::shm_factory(), comm);
#pragma once

#include <memory>
#include <vector>

#include "relay/bootstrap/tcp_bootstrap.hpp"
#include "relay/comm/communicator.hpp"
#include "relay/comm/transport_factory.hpp"
#include "relay/hosted/communicator.hpp"

namespace relay {

inline status communicator_from_environment(const transport_factory& make_transport,
                                            std::unique_ptr<communicator>& out) {
  environment env;
  if (status s = environment_from_process(env); !s) return s;
  std::unique_ptr<bootstrap> boot;
  if (status s = make_tcp_bootstrap(env, boot); !s) return s;
  std::vector<int> helpers;
  const status read = helper_devices_from_environment(helpers);
  return communicator_with_helpers(std::shared_ptr<bootstrap>(std::move(boot)), env, helpers,
                                   make_transport, out, read);
}

}  // namespace relay
