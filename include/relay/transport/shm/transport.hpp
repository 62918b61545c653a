// The shm transport: CPU processes of one host over one shared-memory segment.
//
// Set-up (collective, make_shm_transport): rank 0 makes the segment, which never has a name
// (shm/segment.hpp: a memfd handed to every rank), so a job killed at any point leaves
// nothing in /dev/shm. The segment holds, per rank, a control block (a phase counter, the call's
// agreement records, the process id, the broken and left flags) and a data area of
// `bytes_per_rank`.
//
// A call: the rank writes its word in the call's agreement (transport/agreement.hpp: its entry
// record, and its reason when it refuses) into its control block and publishes that it entered
// (counter = sequence << 32, release); once every rank has entered (acquire, one deadline) every
// rank judges all the records alike. Only then does data move: the rank copies its user input
// into its data area (staging), runs its slice (memcpy pushes into peers' areas, reductions on
// its own; after each phase it publishes counter = sequence << 32 | phase + 1; slice waits
// acquire peers' counters), waits for its slice's exit waits, and copies its output out of the
// segment. Staging means in place and out of place run the same plan, and user memory is only
// ever touched by its own rank: read once, written once, and not at all when the verdict is not
// to go.
//
// Waits spin briefly, then yield, then sleep in short intervals; every wait has the call's
// timeout and checks every peer every few milliseconds (its process, whether it closed its
// transport, whether it gave up: the flag a rank raises in its control block when it breaks), so
// a failure anywhere is an error everywhere within milliseconds, a stalled peer after the timeout.
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
#include "relay/plan/bind.hpp"
#include "relay/plan/validate.hpp"
#include "relay/transport/shm/segment.hpp"
#include "relay/transport/shm/wait.hpp"
#include "relay/transport/transport.hpp"

namespace relay {

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
  status async_status() const override { return broken_; }
  void abort(const status& why) override {
    give_up(why.ok() ? status{errc::peer_error, "rank " + std::to_string(rank_) + " aborted"}
                     : why);
  }

  status run(const call_context& call) override {
    if (!broken_.ok()) return broken_;
    // The fp8 wire runs as on the host executor (host_run_op): the sender quantizes into its
    // send slot, pushes the image into the receiver's slot and dequantizes it into the
    // destination; the slice orders the slots' reuse across phases (plan/slice.hpp).
    failed_wait_ = false;
    status s = run_call(call);
    if (failed_wait_) give_up(s);  // a wait failed: the ranks are out of step
    return s;
  }

  ~transport() override {
    // A rank that closes its transport has left the job: its exit is no failure of a call.
    if (seg_.ranks() > 0)
      std::atomic_ref<std::uint32_t>(seg_.control_of(rank_).left)
          .store(1, std::memory_order_release);
  }

 private:
  std::uint64_t mark(std::uint64_t sequence, std::int64_t phases_done) const {
    return sequence << 32 | static_cast<std::uint64_t>(phases_done);
  }
  void publish(std::uint64_t value) {
    std::atomic_ref<std::uint64_t>(seg_.control_of(rank_).counter)
        .store(value, std::memory_order_release);
  }

  // This rank is out of step from now on: every later call fails with `why`, and the flag in its
  // control block ends every peer's waits (see trouble_while).
  void give_up(const status& why) {
    if (!broken_.ok()) return;
    broken_ = status(why.code(), why.message() + " (an earlier call)");
    control& me = seg_.control_of(rank_);
    std::memset(me.broken_reason, 0, sizeof me.broken_reason);
    why.message().copy(me.broken_reason, sizeof me.broken_reason - 1);
    std::atomic_ref<std::uint32_t>(me.broken).store(static_cast<std::uint32_t>(why.code()),
                                                    std::memory_order_release);
  }

  // What a wait is for, named only when it fails: the call's entry, or a phase of the plan.
  struct awaited {
    int peer;
    const plan* p;
    std::int32_t phase;  // call_entry, or an index into p->phases
    std::string verb(bool past) const {
      if (phase == call_entry) return past ? "entered" : "enter";
      const plan_phase& ph = p->phases[static_cast<std::size_t>(phase)];
      return std::string(past ? "finished" : "finish") + " step " + std::to_string(ph.step) +
             (ph.phase == relay::phase::transfer ? " (transfer" : " (reduce") + ", phase " +
             std::to_string(phase) + ") of";
    }
  };

  // Whether the job can still finish this call while this rank waits for `a`: a failure anywhere
  // (a process gone that had not left, a rank that gave up) is an error here within milliseconds,
  // whoever it is this rank waits for. Builds a message only when there is trouble.
  // A rank that gave up is looked for first, on every rank: its reason names the first failure,
  // and a rank that gave up may have exited since.
  status trouble_while(const awaited& a, std::uint64_t sequence) const {
    auto call = [&] { return " call #" + std::to_string(sequence); };
    auto gave_up = [&]() -> status {
      for (int q = 0; q < seg_.ranks(); ++q) {
        if (q == rank_) continue;
        const control& c = seg_.control_of(q);
        const std::uint32_t broken =
            std::atomic_ref<const std::uint32_t>(c.broken).load(std::memory_order_acquire);
        if (broken != 0)
          return {
              static_cast<errc>(broken),
              "rank " + std::to_string(q) + " gave up (" +
                  std::string(c.broken_reason, ::strnlen(c.broken_reason, sizeof c.broken_reason)) +
                  ") while this rank waited for rank " + std::to_string(a.peer) + " to " +
                  a.verb(false) + call()};
      }
      return {};
    };
    if (status s = gave_up(); !s) return s;
    for (int q = 0; q < seg_.ranks(); ++q) {
      if (q == rank_) continue;
      const control& c = seg_.control_of(q);
      const bool left =
          std::atomic_ref<const std::uint32_t>(c.left).load(std::memory_order_acquire) != 0;
      if (!left && !process_exited(c.pid)) continue;
      // A rank gone or closed may have given up after the scan above (it raises its flag before
      // it exits): its reason, which names the first failure, is the one to report. Seen once:
      // rank 2 gave up on a killed rank 3 and exited, and rank 4 named rank 2's exit instead.
      if (status s = gave_up(); !s) return s;
      if (q == a.peer && left)
        return {errc::timeout, "rank " + std::to_string(q) + " closed its communicator before it " +
                                   a.verb(true) + call()};
      if (left) continue;
      if (q == a.peer)
        return {errc::timeout, "rank " + std::to_string(q) + " (pid " + std::to_string(c.pid) +
                                   ") exited before it " + a.verb(true) + call()};
      return {errc::timeout, "rank " + std::to_string(q) + " (pid " + std::to_string(c.pid) +
                                 ") exited while this rank waited for rank " +
                                 std::to_string(a.peer) + " to " + a.verb(false) + call()};
    }
    return {};
  }

  // Waits until `peer` has published `target`, until `deadline`, or until trouble_while.
  status wait(int peer, std::int32_t phase, const call_context& call,
              std::chrono::steady_clock::time_point deadline) {
    const awaited a{peer, call.p, phase};
    const std::uint64_t target = mark(call.sequence, phase + 1);
    status trouble;
    const wait_result r = wait_at_least(seg_.control_of(peer).counter, target, deadline, [&] {
      trouble = trouble_while(a, call.sequence);
      return !trouble.ok();
    });
    if (r == wait_result::reached) return {};
    failed_wait_ = true;
    if (r == wait_result::trouble) return trouble;
    return {errc::timeout, "rank " + std::to_string(peer) + " did not " + a.verb(false) +
                               " call #" + std::to_string(call.sequence) + " within " +
                               std::to_string(call.timeout.count()) + " ms"};
  }
  status wait(int peer, std::int32_t phase, const call_context& call) {
    return wait(peer, phase, call, std::chrono::steady_clock::now() + call.timeout);
  }

  // The call's agreement: this rank's record is written (it entered), every rank's is read once
  // all have entered, and every rank judges them alike (transport/agreement.hpp).
  status agree(const call_context& call, const status& local) {
    const int R = seg_.ranks();
    const int slot = static_cast<int>(call.sequence % 2);
    call_record& mine = seg_.control_of(rank_).calls[slot];
    mine.word = record_of(call);
    mine.word.code = static_cast<std::uint8_t>(local.code());
    std::memset(mine.reason, 0, sizeof mine.reason);
    local.message().copy(mine.reason, sizeof mine.reason - 1);
    publish(mark(call.sequence, 0));
    // One deadline for all: the rank that is missing is named, whatever its place in rank order.
    const auto deadline = std::chrono::steady_clock::now() + call.timeout;
    for (int q = 0; q < R; ++q)
      if (status w = wait(q, call_entry, call, deadline); !w) return w;
    std::vector<entry_record>& all = records_;
    all.resize(static_cast<std::size_t>(R));
    for (int q = 0; q < R; ++q)
      all[static_cast<std::size_t>(q)] = seg_.control_of(q).calls[slot].word;
    const verdict v = judge(all.data(), R, rank_);
    if (v.kind == verdict_kind::go) return {};
    return verdict_status(v, all.data(), R, local, call.sequence, [&](int q) {
      const char* r = seg_.control_of(q).calls[slot].reason;
      return std::string(r, ::strnlen(r, sizeof mine.reason));
    });
  }

  std::byte* address(const plan& p, const plan_operand& o) const {
    return address_of(o, areas_at(seg_.data_of(o.rank), layout_of(p, o.rank)));
  }

  // What this transport refuses of a plan: the same plan on every rank, so every rank refuses
  // alike (inside the agreement, like any refusal).
  status check(const plan& p) const {
    if (p.ranks() != seg_.ranks())
      return {errc::invalid_argument, "the plan has " + std::to_string(p.ranks()) +
                                          " ranks; the communicator has " +
                                          std::to_string(seg_.ranks())};
    if (const std::uint64_t largest = largest_area(p); largest > seg_.bytes_per_rank())
      return {errc::out_of_memory, "the call needs " + std::to_string(largest) +
                                       " bytes of shared memory per rank; the segment has " +
                                       std::to_string(seg_.bytes_per_rank()) +
                                       " (raise RELAY_SHM_BYTES)"};
    return {};
  }

  status run_call(const call_context& call) {
    const auto me = static_cast<std::size_t>(rank_);
    status local = call.local;
    if (local && (call.p == nullptr || call.slice == nullptr))
      local = {errc::invalid_argument, "the call has no plan or no slice"};
    if (local) local = check(*call.p);
    // A refusal anywhere ends the call on every rank before any data moves, so no user memory
    // is written. This rank's input is staged after the verdict: reading it early would win
    // nothing (the peers push only after they, too, have the verdict).
    if (status v = agree(call, local); !v) return v;
    const plan& p = *call.p;
    const plan_slice& s = *call.slice;
    if (p.input_bytes[me] > 0)
      std::memcpy(address(p, {static_cast<std::uint16_t>(me), buffer::input, 0}), call.send.data,
                  p.input_bytes[me]);
    for (const slice_phase& ph : s.phases) {
      for (const slice_wait& w : ph.waits)
        if (status st = wait(w.peer, w.phase, call); !st) return st;
      for (std::uint32_t i : ph.issued)
        detail::host_run_op(p, p.ops[i], [&](const plan_operand& o) { return address(p, o); });
      if (!ph.issued.empty()) publish(mark(call.sequence, ph.index + 1));
    }
    for (const slice_wait& w : s.exit_waits)
      if (status st = wait(w.peer, w.phase, call); !st) return st;
    if (p.output_bytes[me] > 0)
      std::memcpy(call.recv.data, address(p, {static_cast<std::uint16_t>(me), buffer::output, 0}),
                  p.output_bytes[me]);
    return {};
  }

  int rank_;
  segment seg_;
  status broken_;
  bool failed_wait_ = false;  // the call ended on a wait that failed
  std::vector<entry_record> records_;
};

}  // namespace shm

}  // namespace relay
