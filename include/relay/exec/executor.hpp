// What an executor is: something that runs plans over memory it can allocate and move data in
// and out of. The host executor (exec/host_executor.hpp) and the GPU executor
// (gpu/gpu_executor.hpp) both satisfy it, so the collective calls and the property suite are
// written once for every executor.
#pragma once

#include <concepts>
#include <cstddef>
#include <span>

#include "relay/core/status.hpp"
#include "relay/plan/plan.hpp"

namespace relay {

template <class E>
concept executor = requires(E& e, const plan& p, std::span<const buffer_view> in,
                            std::span<const buffer_view> out, int rank, std::size_t bytes,
                            void* device, const void* host_source, void* host_target) {
  // Runs p; inputs[r] and outputs[r] are rank r's buffers (ignored where the plan needs none).
  { e.run(p, in, out) } -> std::same_as<status>;
  // Memory that rank r's buffers may live in; nullptr when none is left.
  { e.allocate(rank, bytes) } -> std::same_as<void*>;
  { e.deallocate(rank, device) } -> std::same_as<void>;
  // Host memory to executor memory, and back.
  { e.write(rank, device, host_source, bytes) } -> std::same_as<status>;
  { e.read(rank, host_target, device, bytes) } -> std::same_as<status>;
  // Frees the scratch the executor keeps between runs (it grows to the largest plan run).
  { e.release_scratch() } -> std::same_as<void>;
};

}  // namespace relay
