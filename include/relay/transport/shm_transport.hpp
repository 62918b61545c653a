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

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "relay/bootstrap/bootstrap.hpp"
#include "relay/bootstrap/environment.hpp"
#include "relay/exec/host_ops.hpp"
#include "relay/plan/area_layout.hpp"
#include "relay/plan/validate.hpp"
#include "relay/transport/shm_segment.hpp"
#include "relay/transport/shm_wait.hpp"
#include "relay/transport/transport.hpp"

namespace relay {

struct shm_options {
  // Bytes of data area per rank: a call needs its input, output and scratch there (a larger
  // call fails on every rank with errc::out_of_memory naming the size). RELAY_SHM_BYTES
  // overrides the default.
  std::size_t bytes_per_rank = std::size_t{64} << 20;
};

// Reads RELAY_SHM_BYTES (bytes; K, M, G suffixes) into `o`, leaving it as it is when unset.
inline status shm_options_from_environment(shm_options& o) {
  return size_from_environment("RELAY_SHM_BYTES", o.bytes_per_rank);
}

namespace shm {

// Where a plan puts rank r's input, output and scratch in its data area: the same on every rank.
using relay::area_layout;
using relay::layout_of;

class transport final : public relay::transport {
 public:
  explicit transport(int rank) : rank_(rank) {}
  segment& seg() { return seg_; }

  std::string_view name() const override { return "shm"; }
  bool broken() const override { return !broken_.ok(); }

  status run(const call_context& call) override {
    if (!broken_.ok()) return broken_;
    // The fp8 wire runs as on the host executor (host_run_op): the sender quantizes into its
    // send slot, pushes the image into the receiver's slot and dequantizes it into the
    // destination; the slice orders the slots' reuse across phases (plan/slice.hpp).
    status s = run_call(call);
    if (s.code() == errc::timeout) broken_ = status(s.code(), s.message() + " (earlier call)");
    return s;
  }

 private:
  std::uint64_t mark(std::uint64_t sequence, std::int64_t phases_done) const {
    return sequence << 32 | static_cast<std::uint64_t>(phases_done);
  }
  void publish(std::uint64_t value) {
    std::atomic_ref<std::uint64_t>(seg_.control_of(rank_).counter)
        .store(value, std::memory_order_release);
  }

  // `what()` names what the peer did not do; built only on failure, so that a wait that is met
  // allocates nothing (a repeated call allocates nothing).
  template <class What>
  status wait(int peer, std::uint64_t target, const call_context& call, What&& what) {
    const control& c = seg_.control_of(peer);
    switch (wait_at_least(c.counter, target, c.pid, call.timeout)) {
      case wait_result::reached: return {};
      case wait_result::peer_exited:
        return {errc::timeout, "rank " + std::to_string(peer) + " (pid " + std::to_string(c.pid) +
                                   ") exited before it " + what() + " of call #" +
                                   std::to_string(call.sequence)};
      case wait_result::timed_out: break;
    }
    return {errc::timeout, "rank " + std::to_string(peer) + " did not " + what() + " of call #" +
                               std::to_string(call.sequence) + " within " +
                               std::to_string(call.timeout.count()) + " ms"};
  }

  // Every rank's call record, compared the same way on every rank: one verdict everywhere.
  status verdict(const call_context& call) {
    const int R = seg_.ranks();
    const int slot = static_cast<int>(call.sequence % 2);
    std::string differ;
    int in_place = -1, out_of_place = -1;
    for (int q = 0; q < R; ++q) {
      const call_record& c = seg_.control_of(q).calls[slot];
      if (c.fingerprint != seg_.control_of(0).calls[slot].fingerprint)
        differ.append(differ.empty() ? "" : ",").append(std::to_string(q));
      if (c.placement == placement::in_place) in_place = q;
      if (c.placement == placement::out_of_place) out_of_place = q;
    }
    if (!differ.empty())
      return {errc::mismatch, "rank(s) " + differ +
                                  " called with arguments that differ from rank 0's (call #" +
                                  std::to_string(call.sequence) + ")"};
    if (in_place >= 0 && out_of_place >= 0)
      return {errc::mismatch, "rank " + std::to_string(in_place) + " called in place but rank " +
                                  std::to_string(out_of_place) +
                                  " out of place; every active rank must agree"};
    if (!call.local) return call.local;
    for (int q = 0; q < R; ++q) {
      const call_record& c = seg_.control_of(q).calls[slot];
      if (c.code != errc::ok)
        return {errc::peer_error, "rank " + std::to_string(q) + " refused the call: " +
                                      std::string(relay::name(c.code)) + ": " + c.reason};
    }
    return {};
  }

  std::byte* address(const plan& p, const plan_operand& o) const {
    const area_layout a = layout_of(p, o.rank);
    const std::uint64_t base = o.buf == buffer::input    ? a.input
                               : o.buf == buffer::output ? a.output
                                                         : a.scratch;
    return seg_.data_of(o.rank) + base + o.offset;
  }

  status run_call(const call_context& call) {
    const plan& p = *call.p;
    const plan_slice& s = *call.slice;
    const auto me = static_cast<std::size_t>(rank_);
    if (p.ranks() != seg_.ranks())
      return {errc::invalid_argument, "the plan has " + std::to_string(p.ranks()) +
                                          " ranks; the communicator has " +
                                          std::to_string(seg_.ranks())};
    // The same plan on every rank, so every rank refuses an oversized call alike.
    const std::uint64_t largest = largest_area(p);
    if (largest > seg_.bytes_per_rank())
      return {errc::out_of_memory, "the call needs " + std::to_string(largest) +
                                       " bytes of shared memory per rank; the segment has " +
                                       std::to_string(seg_.bytes_per_rank()) +
                                       " (raise RELAY_SHM_BYTES)"};

    // Stage the input and say so: the call record first, then the counter (release).
    const bool usable = call.local.ok();
    if (usable && p.input_bytes[me] > 0)
      std::memcpy(address(p, {static_cast<std::uint16_t>(me), buffer::input, 0}), call.send.data,
                  p.input_bytes[me]);
    call_record& mine = seg_.control_of(rank_).calls[call.sequence % 2];
    mine.sequence = call.sequence;
    mine.fingerprint = call.fingerprint;
    mine.placement = call.placement;
    mine.code = call.local.code();
    std::memset(mine.reason, 0, sizeof mine.reason);
    call.local.message().copy(mine.reason, sizeof mine.reason - 1);
    publish(mark(call.sequence, 0));

    // Everyone has entered: compare what each rank said. A refusal anywhere ends the call on
    // every rank before any data moves, so no user memory is written.
    for (int q = 0; q < seg_.ranks(); ++q)
      if (status w = wait(q, mark(call.sequence, 0), call, [] { return std::string("entered"); });
          !w)
        return w;
    if (status v = verdict(call); !v) return v;

    for (const slice_phase& ph : s.phases) {
      for (const slice_wait& w : ph.waits)
        if (status st = wait(w.peer, mark(call.sequence, w.phase + 1), call,
                             [&] { return phase_name(p, w.phase); });
            !st)
          return st;
      for (std::uint32_t i : ph.issued)
        detail::host_run_op(p, p.ops[i], [&](const plan_operand& o) { return address(p, o); });
      if (!ph.issued.empty()) publish(mark(call.sequence, ph.index + 1));
    }
    for (const slice_wait& w : s.exit_waits)
      if (status st = wait(w.peer, mark(call.sequence, w.phase + 1), call,
                           [&] { return phase_name(p, w.phase); });
          !st)
        return st;
    if (p.output_bytes[me] > 0)
      std::memcpy(call.recv.data, address(p, {static_cast<std::uint16_t>(me), buffer::output, 0}),
                  p.output_bytes[me]);
    return {};
  }

  static std::string phase_name(const plan& p, std::int32_t phase) {
    if (phase == call_entry) return "entered";
    const plan_phase& ph = p.phases[static_cast<std::size_t>(phase)];
    return "finish step " + std::to_string(ph.step) +
           (ph.phase == relay::phase::transfer ? " (transfer" : " (reduce") + ", phase " +
           std::to_string(phase) + ")";
  }

  int rank_;
  segment seg_;
  status broken_;
};

}  // namespace shm

// Creates and maps the segment (collective: every rank of `boot` calls it).
inline status make_shm_transport(bootstrap& boot, const shm_options& o,
                                 std::chrono::milliseconds timeout,
                                 std::unique_ptr<transport>& out) {
  auto t = std::make_unique<shm::transport>(boot.rank());
  if (status s = t->seg().open(boot, o.bytes_per_rank, timeout); !s) return s;
  out = std::move(t);
  return {};
}

// The shm transport for communicator_from_environment (comm/from_environment.hpp), sized by
// RELAY_SHM_BYTES where set.
inline auto shm_factory(shm_options o = {}) {
  return [o](bootstrap& boot, const environment& env, std::unique_ptr<transport>& out) {
    shm_options sized = o;
    if (status s = shm_options_from_environment(sized); !s) return s;
    return make_shm_transport(boot, sized, env.timeout, out);
  };
}

}  // namespace relay
