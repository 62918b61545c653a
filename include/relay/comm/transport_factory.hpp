// What makes a communicator's transport: a function of the connected bootstrap and the rank's
// environment, so that adding a transport adds a factory (transport/X/factory.hpp) and touches
// none of the code that makes communicators (comm/from_environment.hpp, comm/split.hpp,
// hosted/communicator.hpp).
#pragma once

#include <functional>
#include <memory>

#include "relay/bootstrap/bootstrap.hpp"
#include "relay/bootstrap/environment.hpp"
#include "relay/transport/transport.hpp"

namespace relay {

// Makes a transport over a connected bootstrap (collective: every rank calls it). Its creation is
// part of set-up: `env.timeout` is the set-up timeout there (setup_timeout_of), which every wait
// of the creation has; the calls' timeout is the communicator's (comm_config::timeout).
using transport_factory =
    std::function<status(bootstrap&, const environment&, std::unique_ptr<transport>&)>;

}  // namespace relay
