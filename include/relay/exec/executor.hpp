// What executors are, in two parts:
// - a plan_runner runs plans over buffers it is given (and keeps scratch of its own between runs);
// - a memory_provider allocates memory that a rank's buffers may live in, and moves data between
//   it and the host.
// The collective calls need only a runner; the property suite and the benchmarks need both, which
// is what `executor` names. The host executor (exec/host_executor.hpp) and the GPU executor
// (exec/gpu/executor.hpp) are both, so the calls and the property suite are written once for every
// executor. Every runner checks a plan with validate_plan (plan/validate.hpp) before it issues
// anything.
#pragma once

#include <concepts>
#include <cstddef>
#include <span>

#include "relay/core/status.hpp"
#include "relay/plan/plan.hpp"

namespace relay {

template <class E>
concept plan_runner = requires(E& e, const plan& p, std::span<const buffer_view> in,
                               std::span<const buffer_view> out) {
  // Runs p; inputs[r] and outputs[r] are rank r's buffers (ignored where the plan needs none).
  { e.run(p, in, out) } -> std::same_as<status>;
  // Frees the scratch the runner keeps between runs (it grows to the largest plan run).
  { e.release_scratch() } -> std::same_as<void>;
};

template <class M>
concept memory_provider = requires(M& m, int rank, std::size_t bytes, void* device,
                                   const void* host_source, void* host_target) {
  // Memory that rank r's buffers may live in; nullptr when none is left.
  { m.allocate(rank, bytes) } -> std::same_as<void*>;
  { m.deallocate(rank, device) } -> std::same_as<void>;
  // Host memory to the provider's memory, and back.
  { m.write(rank, device, host_source, bytes) } -> std::same_as<status>;
  { m.read(rank, host_target, device, bytes) } -> std::same_as<status>;
};

template <class E>
concept executor = plan_runner<E> && memory_provider<E>;

}  // namespace relay
