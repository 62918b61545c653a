// A bootstrap served by the caller's callbacks (relay_comm_config's all_gather and barrier), as
// relay::callback_bootstrap takes it, and what a callback fills (relay_bootstrap_result).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "relay/bootstrap/bootstrap.hpp"
#include "relay/c/relay.h"
#include "relay/core/status.hpp"

// What a bootstrap callback fills: every rank's bytes, or why it failed.
struct relay_bootstrap_result {
  std::vector<std::vector<std::byte>>* all = nullptr;
  std::vector<char> put;
  relay::status failure;
};

namespace relay::c_abi {

// The bootstrap of `config`'s callbacks (which stay valid until the communicator is destroyed).
std::shared_ptr<bootstrap> callback_boot(const relay_comm_config& config);

// relay_bootstrap_put and relay_bootstrap_fail.
status put(relay_bootstrap_result* r, std::int32_t rank, const void* data, std::size_t bytes);
status fail(relay_bootstrap_result* r, std::int32_t code, const char* message);

}  // namespace relay::c_abi
