// A communicator for a process started by relay-run, torchrun or an mpirun-style launcher: the
// TCP bootstrap from the environment (bootstrap/environment.hpp), then the transport the caller
// names by its factory, so adding a transport adds a factory and touches nothing here.
//
//   std::unique_ptr<relay::communicator> comm;
//   relay::status s = relay::communicator_from_environment(relay::shm_factory(), comm);
#pragma once

#include <functional>
#include <memory>

#include "relay/bootstrap/tcp_bootstrap.hpp"
#include "relay/comm/communicator.hpp"

namespace relay {

// Makes a transport over a connected bootstrap (collective: every rank calls it). Its creation is
// part of set-up: `env.timeout` is the set-up timeout there (setup_timeout_of), which every wait
// of the creation has; the calls' timeout is the communicator's (comm_config::timeout).
using transport_factory =
    std::function<status(bootstrap&, const environment&, std::unique_ptr<transport>&)>;

inline status communicator_from_environment(const transport_factory& make_transport,
                                            std::unique_ptr<communicator>& out) {
  environment env;
  if (status s = environment_from_process(env); !s) return s;
  std::unique_ptr<bootstrap> boot;
  if (status s = make_tcp_bootstrap(env, boot); !s) return s;
  std::shared_ptr<bootstrap> shared(std::move(boot));
  std::unique_ptr<transport> link;
  environment setup = env;
  setup.timeout = setup_timeout_of(env);
  if (status s = make_transport(*shared, setup, link); !s) return s;
  comm_config config;
  // The transport's device where it drives one (the ipc transport's is the environment's modulo
  // the devices this process sees), so that communicator::device() names the GPU the calls use.
  config.device = link->device() >= 0 ? link->device() : env.device;
  config.timeout = env.timeout;
  out = std::make_unique<communicator>(shared, std::move(link), config);
  return {};
}

}  // namespace relay
