// The shm transport: CPU processes of one host over one POSIX shared-memory segment.
//
// Set-up (collective, make_shm_transport): rank 0 creates a segment with a name unique to the
// job (its pid and a random tag, shared through the bootstrap), every rank maps it, and rank 0
// unlinks the name once all have attached, so nothing is left behind in /dev/shm even when a
// process is killed later. The segment holds, per rank, a control block (a phase counter, the
// call's fingerprint and status, the process id) and a data area of `bytes_per_rank`.
//
// A call: the rank copies its user input into its data area (staging), publishes that it entered
// the call (counter = sequence << 32, release), waits until every rank has entered (acquire) and
// compares their fingerprints, in-place votes and buffer checks, runs its slice (memcpy pushes
// into peers' areas, reductions on its own; after each phase it publishes
// counter = sequence << 32 | phase + 1; slice waits acquire peers' counters), waits for its
// slice's exit waits, and copies its output out of the segment. Staging means in place and out
// of place run the same plan, and user memory is only ever touched by its own rank: read once at
// the start, written once at the end, and not at all when any rank reported an error.
//
// Waits spin briefly, then yield, then sleep in short intervals; every wait has the call's
// timeout and checks whether the peer process still exists, so a dead peer is reported within
// milliseconds, a stalled one after the timeout.
#pragma once

#include <cstddef>
#include <memory>

#include "relay/bootstrap/bootstrap.hpp"
#include "relay/transport/transport.hpp"

namespace relay {

struct shm_options {
  // Bytes of data area per rank: a call needs its input, output and scratch there (a larger
  // call fails on every rank with errc::out_of_memory naming the size). RELAY_SHM_BYTES
  // overrides the default.
  std::size_t bytes_per_rank = std::size_t{64} << 20;
};

// Reads RELAY_SHM_BYTES (bytes; K, M, G suffixes) into `o`, leaving it as it is when unset.
inline status shm_options_from_environment(shm_options& o);

// Creates and maps the segment (collective: every rank of `boot` calls it).
inline status make_shm_transport(bootstrap& boot, const shm_options& o,
                                 std::chrono::milliseconds timeout,
                                 std::unique_ptr<transport>& out);

}  // namespace relay
