// A transport: what moves one rank's data when every rank is its own process. The communicator
// (comm/communicator.hpp) derives the plan and this rank's slice from the call's arguments and
// hands them here; the transport runs the slice with this rank's buffers.
//
// Implementations (each its own file; none branches on another):
//   shm   (transport/shm_transport.hpp) CPU processes over POSIX shared memory; blocking; stages
//         the user buffers through the segment; ignores `stream`.
//   nccl  per slice phase: ncclGroupStart, this rank's sends (slice_phase::issued copies whose
//         destination is a peer) and receives (slice_phase::receives), ncclGroupEnd, then the
//         phase's reductions as kernels on `stream`. Enqueues and returns.
//   ipc   one kernel per step pushing into peers' registered memory, device-side signals for
//         slice_phase::waits. Enqueues and returns.
//
// The contract every transport keeps:
//   - It runs slice.phases in order, each phase's waits before its issued operations, and
//     slice.exit_waits before this rank's output is final.
//   - call.local not ok (this rank's own buffers are invalid): the transport still completes
//     the protocol with its peers but never touches user memory, and every rank's run() returns
//     an error (this rank: call.local; the others: errc::peer_error naming this rank).
//   - call.fingerprint differs between ranks (a caller passed different arguments; the
//     communicator only compares fingerprints across ranks on the first call of a shape): every
//     rank returns errc::mismatch naming the ranks that disagree, and no user memory is written,
//     where the transport can detect it (shm does, on every call).
//   - Every wait has call.timeout; on expiry (or a peer that exited) run() returns
//     errc::timeout naming the peer and the step. After any error other than call.local and
//     peer_error/mismatch, the transport may be unusable (broken() says so).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "relay/core/no_copy.hpp"
#include "relay/core/status.hpp"
#include "relay/plan/plan.hpp"
#include "relay/plan/rank_buffers.hpp"
#include "relay/plan/slice.hpp"

namespace relay {

struct call_context {
  // The out-of-place plan of the call and this rank's slice of it: identical on every rank for
  // the same arguments, whatever each rank's placement. (A transport that works on user memory
  // directly, rather than staging, may run an in-place rank on make_plan's in-place plan: its
  // operations between ranks are the same; only copies within one rank differ.)
  const plan* p = nullptr;
  const plan_slice* slice = nullptr;
  buffer_view send{}, recv{};  // this rank's user buffers; empty on a helper
  relay::placement placement = placement::helper;
  std::uint64_t sequence = 0;     // 1, 2, ... per communicator, the same on every rank
  std::uint64_t fingerprint = 0;  // of the arguments every rank sees alike (not the buffers)
  status local;                   // this rank's check of its own buffers
  std::chrono::milliseconds timeout{30'000};
  void* stream = nullptr;  // cudaStream_t / hipStream_t for GPU transports; host ones ignore it
};

// Not copyable: a transport owns its peers' connections and memory.
class transport : no_copy {
 public:
  virtual ~transport() = default;
  virtual std::string_view name() const = 0;
  // Runs this rank's part of one call (see the contract above).
  virtual status run(const call_context& call) = 0;
  // True after a failure that left ranks out of step: every later run() fails at once.
  virtual bool broken() const = 0;
  // Registered user buffers (communicator::register_buffer): collective, every rank calls them,
  // each with its own buffer or none. A transport that stages every call has nothing to do.
  virtual status register_buffer(void* /*p*/, std::size_t /*bytes*/,
                                 std::chrono::milliseconds /*timeout*/) {
    return {};
  }
  virtual status deregister_buffer(void* /*p*/, std::chrono::milliseconds /*timeout*/) {
    return {};
  }
};

}  // namespace relay
