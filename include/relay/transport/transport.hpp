// A transport: what moves one rank's data when every rank is its own process. The communicator
// (comm/communicator.hpp) derives the plan and this rank's slice from the call's arguments and
// hands them here; the transport runs the slice with this rank's buffers.
//
// Implementations (each its own file; none branches on another):
//   shm   (shm/transport.hpp) CPU processes over POSIX shared memory; blocking; stages
//         the user buffers through the segment; ignores `stream`.
//   nccl  per slice phase: ncclGroupStart, this rank's sends (slice_phase::issued copies whose
//         destination is a peer) and receives (slice_phase::receives), ncclGroupEnd, then the
//         phase's reductions as kernels on `stream`. Enqueues and returns.
//   ipc   one kernel per step pushing into peers' registered memory, device-side signals for
//         slice_phase::waits. Enqueues and returns.
//
// The contract every transport keeps:
//   - Every call has an agreement (transport/agreement.hpp) before any data moves: this rank's
//     entry_record (record_of below) reaches every peer, every rank judges all records with
//     judge(), and only a `go` verdict lets data move. A rank takes part even when it refused the
//     call: call.local not ok (its arguments or its buffers were refused) and, where the refusal
//     came before there was a plan, call.p and call.slice null. Such a rank never touches user
//     memory and returns call.local; its peers return errc::peer_error naming it; ranks whose
//     fingerprints differ make every rank return errc::mismatch. No user memory is written
//     anywhere when the verdict is not `go`.
//   - call.slice is cut with the transport's wire_ends().
//   - A transport that bounds its area (area_bytes()) copies a piece's runs (call.send_runs,
//     call.recv_runs) between the caller's buffers and its area; one without a bound never sees
//     more than one run. A later piece (call.piece > 0) of a call whose first piece did not go
//     is void: it takes part in no agreement, moves nothing and counts as no call of the
//     transport (its ranks know that first verdict alike), so ranks that cut a disputed call
//     into different numbers of pieces stay in step. (A host transport never sees one: the
//     communicator stops at a first piece that did not go.)
//   - It runs slice.phases in order, each phase's waits before its issued operations, and
//     slice.exit_waits before this rank's output is final.
//   - Every wait has call.timeout. On expiry, or when a peer exited or gave up, run() returns
//     errc::timeout or errc::peer_error naming the peer and the step, and the transport is broken
//     (broken()): every later run() fails at once with the same message, and the transport makes
//     that visible to every peer, so a peer waiting on any rank gives up within milliseconds
//     instead of waiting out its own timeout.
//   - Every transport stays usable after a verdict that is not `go`: every rank took the same
//     path, and no data moved. A host transport (shm, nccl) returns the verdict from run(). A
//     stream transport (ipc) may judge on the device: run() returns once the call is enqueued
//     (a rank's own refusal it returns at once), and the verdict found there is reported
//     afterwards by take_failed_call(), each call's once, naming the call. A failure after the
//     verdict (a timeout, a lost peer, an abort) is reported by async_status() and by every
//     later run(): the transport then stays broken.
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
#include "relay/transport/agreement.hpp"

namespace relay {

// How a buffer of a call lies in the caller's memory: `count` runs of equal length, `stride`
// bytes apart (one run: contiguous).
struct buffer_runs {
  std::uint32_t count = 1;
  std::size_t stride = 0;
};

struct call_context {
  // The out-of-place plan of the call and this rank's slice of it: identical on every rank for
  // the same arguments, whatever each rank's placement. (A transport that works on user memory
  // directly, rather than staging, may run an in-place rank on make_plan's in-place plan: its
  // operations between ranks are the same; only copies within one rank differ.)
  // Null (both) when this rank refused the call before it had a plan: call.local says why.
  const plan* p = nullptr;
  const plan_slice* slice = nullptr;
  buffer_view send{}, recv{};  // this rank's user buffers; empty on a helper
  // A piece of a larger call (plan/pieces.hpp) whose part of a buffer is several runs of the
  // caller's: send.bytes / send_runs.count bytes at send.data, at send.data + stride, ... (the
  // plan's input is those runs end to end); likewise recv. One run: the buffer as it is.
  buffer_runs send_runs{}, recv_runs{};
  // 0 for a call or the first piece of one; j for piece j > 0 of a call in pieces (see the
  // contract above: a later piece of a call whose first piece did not go is void).
  std::uint64_t piece = 0;
  relay::placement placement = placement::helper;
  std::uint64_t sequence = 0;  // 1, 2, ... per communicator, the same on every rank
  // Of the arguments every rank must pass alike (not the buffers); 0 only for a refusal made
  // before the call had arguments (communicator::refuse).
  std::uint64_t fingerprint = 0;
  status local;  // this rank's own refusal of the call (its arguments or its buffers), or ok
  std::chrono::milliseconds timeout{30'000};
  void* stream = nullptr;  // cudaStream_t / hipStream_t for GPU transports; host ones ignore it
};

// Not copyable: a transport owns its peers' connections and memory.
// This rank's word in the call's agreement.
inline entry_record record_of(const call_context& call) {
  entry_record r;
  r.sequence = call.sequence;
  r.fingerprint = call.fingerprint;
  r.code = static_cast<std::uint8_t>(call.local.code());
  r.placement = static_cast<std::uint8_t>(call.placement);
  return r;
}

class transport : no_copy {
 public:
  virtual ~transport() = default;
  virtual std::string_view name() const = 0;
  // Runs this rank's part of one call (see the contract above).
  virtual status run(const call_context& call) = 0;
  // True after a failure that left ranks out of step: every later run() fails at once.
  virtual bool broken() const = 0;
  // Whether run() returns the call's verdict itself (host transports), so that every rank has it
  // when run() returns; false where the device judges and reports later (ipc).
  virtual bool judges_on_host() const { return true; }
  // Who runs the receiving end of a copy that crosses an fp8 wire (plan/slice.hpp): the slice
  // handed to run() is cut with these ends (the communicator asks once per shape).
  virtual fp8_ends wire_ends() const { return fp8_ends::sender; }
  // The most a call's plan may lay out per rank (largest_area), the same number on every rank of
  // the job; 0: no bound. A call that needs more runs in pieces (plan/pieces.hpp), each with its
  // own agreement, whose buffers may be several runs (call_context::send_runs).
  virtual std::uint64_t area_bytes() const { return 0; }
  // The GPU this rank's transport drives (the environment's device as the process sees it: the
  // ipc transport takes it modulo the visible devices), or -1 for a transport of no device.
  virtual int device() const { return -1; }
  // The ranks that drive this rank's device, itself included, as the transport counts them for
  // dividing the device (environment::device_share); 1 for a transport that does not divide it.
  virtual int device_share() const { return 1; }
  // What is known of earlier calls now, without waiting: the broken state (a stream transport's
  // failure found on the device after run() returned among them); ok otherwise.
  virtual status async_status() const { return {}; }
  // A stream transport: the oldest call found not to `go` on the device after run() returned
  // (refused by a peer, or called differently) and not taken yet, as its verdict's status (it
  // names the call), or ok where there is none now; without waiting. The transport stays usable.
  // Host transports return every verdict from run() and have none.
  virtual status take_failed_call() { return {}; }
  // This rank leaves: every peer's waits end at once with an error naming it, and every later
  // run() here fails. For a process that is about to give up on the job (communicator::abort).
  virtual void abort(const status& why) = 0;
  // Registered user buffers (communicator::register_buffer): collective, every rank calls them,
  // each with its own buffer or none. A transport that stages every call has nothing to do.
  virtual status register_buffer(void* /*p*/, std::size_t /*bytes*/,
                                 std::chrono::milliseconds /*timeout*/) {
    return {};
  }
  virtual status deregister_buffer(void* /*p*/, std::chrono::milliseconds /*timeout*/) {
    return {};
  }
  // The inputs of calls captured into graphs so far, registered after capture so that replays
  // read them in place (communicator::register_graph_inputs), and those registrations ended:
  // collective. A transport with no staging to save accepts them and does nothing.
  virtual status register_graph_inputs(std::chrono::milliseconds /*timeout*/) { return {}; }
  virtual status deregister_graph_inputs(std::chrono::milliseconds /*timeout*/) { return {}; }
};

}  // namespace relay
