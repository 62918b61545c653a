// Failure semantics across processes, one scenario per run (under relay-run; every rank must
// exit 0, meaning it saw what the scenario promises):
//   mismatch        a rank passes other counts (a new shape or a cached one), or another in-place
//                   form: errc::mismatch on every rank naming that rank; then a good call works
//   one_refusal     one rank passes a count make_plan refuses, the others a good one (a new shape,
//                   then a cached one): an error on every rank, and the next calls are right
//   new_against_cached  one rank calls a shape it never called while the others repeat a cached
//                   one: errc::mismatch on every rank at once (no timeout); the next call is right
//   refuse          one rank refuses the call (communicator::refuse): peer_error naming it on
//                   every other rank at once; the next call is right
//   deferred        the shm transport judging as a stream transport's device does
//                   (RELAY_SHM_VERDICTS=deferred): a rank's null output, another shape on one
//                   rank, a refusal with refuse(), and (with a small RELAY_SHM_BYTES) a refusal of
//                   a call in pieces: the refusing rank's call fails at once, every other rank's
//                   returns ok and writes nothing, and its async_status() then names the call and
//                   the rank, once; the communicator goes on: the next call is right everywhere
// (A peer killed or stopped mid-job, and randomized faults of every kind: mp_faults.cpp.)
//   invalid_buffer  a rank passes a null output (new shape) or a too small input (cached shape):
//                   that rank gets invalid_buffer, every other rank peer_error naming it; then
//                   a good call works
//   early_exit      the last rank exits before calling, after a first call of the shape (the
//                   transport's wait) or before any (the bootstrap's): errc::peer_lost naming it
//                   first and as the status's peer (the peer's exit is noticed: a timeout would
//                   be errc::timeout)
//   stall           the last rank never calls (it sleeps past RELAY_TIMEOUT and the others' wait
//                   for it, then exits): the others fail after the timeout, errc::timeout naming
//                   it first
// In every failing call no user buffer is written: the outputs keep their poison. A call's time
// is checked against the timeout plus busy_margin, which holds on a loaded machine; what it
// failed with says whether it waited the timeout out.
#include <chrono>
#include <cstring>
#include <thread>

#include "multiprocess/mp_support.hpp"

using namespace relay;
using relay::testing::expect;
using relay::testing::failures;

namespace {

// This rank's int32 buffers for a fused A=2 allreduce over every rank: input[i] = 1000*rank + i,
// output poisoned with 0x7f7f7f7f.
struct buffers {
  std::vector<std::int32_t> in, out;
  buffers(int rank, std::size_t count) : in(count), out(count, 0x7f7f7f7f) {
    for (std::size_t i = 0; i < count; ++i)
      in[i] = 1000 * rank + static_cast<std::int32_t>(i);
  }
  bool untouched() const {
    for (std::int32_t x : out)
      if (x != 0x7f7f7f7f) return false;
    return true;
  }
};

group_list pairs(int size) {
  group_list g;
  for (int r = 0; r < size; r += 2)
    g.push_back({r, r + 1});
  return g;
}

status allreduce_pairs(communicator& comm, buffers& b, std::int64_t count, buffer_view send = {},
                       buffer_view recv = {}) {
  const group_list groups = pairs(comm.size());
  const std::vector<std::int64_t> counts(groups.size(), count);
  if (send.data == nullptr && send.bytes == 0) send = {b.in.data(), b.in.size() * 4};
  if (recv.data == nullptr && recv.bytes == 0) recv = {b.out.data(), b.out.size() * 4};
  return allreduce(comm, groups, send, recv, counts, dtype::int32, reduce_op::sum);
}

// A good call: the pair {r, r^1} sums to 1000*(r + (r^1)) + 2i, worked out by hand.
void good_call(communicator& comm, std::int64_t count, const std::string& when) {
  const int me = comm.rank();
  buffers b(me, static_cast<std::size_t>(count));
  const status s = allreduce_pairs(comm, b, count);
  expect(s.ok(), when + ": a good call failed: " + s.to_string());
  for (std::size_t i = 0; s.ok() && i < b.out.size(); ++i)
    if (b.out[i] != 1000 * (me + (me ^ 1)) + 2 * static_cast<std::int32_t>(i)) {
      expect(false, when + ": element " + std::to_string(i) + " is wrong");
      break;
    }
}

void expect_error(const status& s, errc code, const std::string& names, const buffers& b,
                  const std::string& when) {
  expect(s.code() == code,
         when + ": expected " + std::string(name(code)) + ", got " + s.to_string());
  expect(s.message().find(names) != std::string::npos,
         when + ": the message does not name '" + names + "': " + s.message());
  expect(b.untouched(), when + ": the output was written");
}

void mismatch(communicator& comm) {
  const int me = comm.rank(), last = comm.size() - 1;
  const std::string who = "rank(s) " + std::to_string(last);
  {  // a new shape: the last rank passes 5 elements per group, the others 4
    buffers b(me, 8);
    expect_error(allreduce_pairs(comm, b, me == last ? 5 : 4), errc::mismatch, who, b,
                 "new shape, other counts");
  }
  good_call(comm, 4, "after the first mismatch");
  good_call(comm, 6, "warming a second shape");
  {  // both shapes cached: the last rank calls the other one
    buffers b(me, 8);
    expect_error(allreduce_pairs(comm, b, me == last ? 6 : 4), errc::mismatch, who, b,
                 "cached shapes, other counts");
  }
  good_call(comm, 4, "after the cached mismatch");
  for (const char* when :
       {"new shape, in place on rank 0 only", "cached, in place on rank 0 only"}) {
    buffers b(me, 9);
    if (me == 0) b.out.assign(b.out.size(), 0x7f7f7f7f);
    // Rank 0 passes recv == send (in place); the others out of place.
    const buffer_view send{b.in.data(), b.in.size() * 4};
    const status s = allreduce_pairs(comm, b, 9, send, me == 0 ? send : buffer_view{});
    expect(s.code() == errc::mismatch && s.message().find("in place") != std::string::npos,
           std::string(when) + ": expected an in-place mismatch, got " + s.to_string());
    expect(me == 0 || b.untouched(), std::string(when) + ": the output was written");
    if (me == 0)
      for (std::size_t i = 0; i < b.in.size(); ++i)
        expect(b.in[i] == 1000 * me + static_cast<std::int32_t>(i),
               std::string(when) + ": rank 0's in-place buffer was written");
  }
  good_call(comm, 9, "after the in-place mismatches");
}

void invalid_buffer(communicator& comm) {
  const int me = comm.rank(), bad = 1;
  {  // a new shape; rank 1's output is null
    buffers b(me, 7);
    const status s =
        allreduce_pairs(comm, b, 7, {}, me == bad ? buffer_view{nullptr, 28} : buffer_view{});
    if (me == bad)
      expect_error(s, errc::invalid_buffer, "the output of rank 1 is null", b, "null output");
    else
      expect_error(s, errc::peer_error,
                   "rank 1 refused call #1: invalid buffer: the output of rank 1", b,
                   "a peer's null output");
  }
  good_call(comm, 7, "after the null output");
  {  // the shape is cached now; rank 1's input holds 3 of 7 elements
    buffers b(me, 7);
    const status s =
        allreduce_pairs(comm, b, 7, me == bad ? buffer_view{b.in.data(), 12} : buffer_view{});
    if (me == bad)
      expect_error(s, errc::invalid_buffer, "the input of rank 1 holds 12 bytes", b, "small input");
    else
      expect_error(s, errc::peer_error,
                   "rank 1 refused call #3: invalid buffer: the input of rank 1", b,
                   "a peer's small input");
  }
  good_call(comm, 7, "after the small input");
}

// A rank passes a count make_plan refuses (-1 for group 0) while the others pass 4: every rank
// returns an error (the refusing rank its own or a mismatch; the others a mismatch naming it),
// nothing is written, and the next calls are in step and right.
void one_refusal(communicator& comm) {
  const int me = comm.rank(), bad = 2;
  for (const char* when : {"a new shape", "a cached shape"}) {
    buffers b(me, 4);
    const group_list groups = pairs(comm.size());
    std::vector<std::int64_t> counts(groups.size(), 4);
    if (me == bad) counts[0] = -1;
    const status s = allreduce(comm, groups, {b.in.data(), 16}, {b.out.data(), 16}, counts,
                               dtype::int32, reduce_op::sum);
    expect(!s.ok(), std::string(when) + ": a call with a refused rank returned ok");
    expect(s.message().find("rank(s) 2") != std::string::npos,
           std::string(when) + ": the error does not name rank 2: " + s.to_string());
    expect(me != bad || s.message().find("negative") != std::string::npos ||
               s.message().find("count") != std::string::npos,
           std::string(when) + ": the refusing rank does not say why: " + s.to_string());
    expect(b.untouched(), std::string(when) + ": the output was written");
    good_call(comm, 4, std::string("after a refusal on ") + when);
    good_call(comm, 4, std::string("the second call after a refusal on ") + when);
  }
}

// The others repeat a cached shape; one rank calls a shape it never called.
void new_against_cached(communicator& comm, std::chrono::milliseconds timeout) {
  const int me = comm.rank(), odd = 2;
  good_call(comm, 4, "warming the shape");
  buffers b(me, 6);
  const auto start = std::chrono::steady_clock::now();
  const status s = allreduce_pairs(comm, b, me == odd ? 6 : 4);
  const auto took = std::chrono::steady_clock::now() - start;
  expect_error(s, errc::mismatch, "rank(s) 2 called allreduce", b, "a new shape against a cached");
  expect(took < timeout + testing::busy_margin,
         "the mismatch took " +
             std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()) +
             " ms");
  good_call(comm, 4, "after the mismatch");
  good_call(comm, 6, "the new shape, now on every rank");
}

void refuse(communicator& comm, std::chrono::milliseconds timeout) {
  const int me = comm.rank(), bad = comm.size() - 1;
  good_call(comm, 4, "warming the shape");
  buffers b(me, 4);
  const auto start = std::chrono::steady_clock::now();
  const status s = me == bad ? comm.refuse({errc::invalid_argument, "tensor 'grad' is float64"})
                             : allreduce_pairs(comm, b, 4);
  const auto took = std::chrono::steady_clock::now() - start;
  if (me == bad)
    expect(s.code() == errc::invalid_argument && s.message() == "tensor 'grad' is float64",
           "refuse() returned " + s.to_string());
  else
    expect_error(s, errc::peer_error,
                 "rank " + std::to_string(bad) +
                     " refused call #2: invalid argument: tensor "
                     "'grad' is float64",
                 b, "a peer's refusal");
  expect(took < timeout + testing::busy_margin,
         "the refusal took " +
             std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()) +
             " ms");
  good_call(comm, 4, "after the refusal");
}

// One call that one rank spoils, on a transport that reports verdicts after the call returned:
// `spoil` makes the call on this rank (`bad` it spoils); `mine` what the spoiling rank's own call
// returns, `theirs` what every rank's async_status reports afterwards (the spoiling rank's too
// where its call returned ok), each a text it must contain.
template <class Spoil>
void deferred_case(communicator& comm, std::int64_t count, int bad, Spoil&& spoil,
                   const std::string& mine, const std::string& theirs, const std::string& when) {
  const int me = comm.rank();
  buffers b(me, static_cast<std::size_t>(count));
  const status s = spoil(b);
  if (me == bad && !mine.empty()) {
    expect_error(s, s.code(), mine, b, when + ": the spoiling rank's own call");
  } else {
    expect(s.ok(), when + ": the call returned " + s.to_string() +
                       ", not ok (its verdict is reported afterwards)");
    expect(b.untouched(), when + ": the output was written");
    const status later = comm.async_status();
    expect(!later.ok() && later.message().find(theirs) != std::string::npos,
           when + ": async_status says '" + later.to_string() + "', not '" + theirs + "'");
  }
  const status again = comm.async_status();
  expect(again.ok(), when + ": a second async_status says " + again.to_string());
  good_call(comm, count, "after " + when);
  expect(comm.async_status().ok(), when + ": the good call after it reported a failure");
}

// The calls of 512 elements fit every area here; those of 4096 do not fit the smaller one (the
// last case), whose later pieces are then void (not counted by the transport, which numbers the
// calls in its messages): it comes last.
void deferred(communicator& comm) {
  const int me = comm.rank(), last = comm.size() - 1;
  good_call(comm, 512, "warming the shape");
  const std::string call = " call #" + std::to_string(comm.calls_made() + 1);
  deferred_case(
      comm, 512, 1,
      [&](buffers& b) {
        return allreduce_pairs(comm, b, 512, {},
                               me == 1 ? buffer_view{nullptr, 512 * 4} : buffer_view{});
      },
      "the output of rank 1 is null",
      "rank 1 refused" + call + ": invalid buffer: the output of rank 1 is null", "a null output");
  const std::string call2 = " call #" + std::to_string(comm.calls_made() + 1);
  deferred_case(
      comm, 512, last, [&](buffers& b) { return allreduce_pairs(comm, b, me == last ? 500 : 512); },
      "", "rank(s) " + std::to_string(last) + " called" + call2, "another shape on one rank");
  const std::string call3 = " call #" + std::to_string(comm.calls_made() + 1);
  deferred_case(
      comm, 512, 2,
      [&](buffers& b) {
        return me == 2 ? comm.refuse({errc::invalid_argument, "tensor 'grad' is float64"})
                       : allreduce_pairs(comm, b, 512);
      },
      "tensor 'grad' is float64",
      "rank 2 refused" + call3 + ": invalid argument: tensor 'grad' is float64", "refuse()");
  // A call larger than the area, in pieces (every rank makes every piece; the refusal of the
  // first is reported once, naming the call's first sequence).
  if (comm.transport().area_bytes() < 4096 * 4 * 3) {
    const std::uint64_t before = comm.calls_made();
    const std::string first = " call #" + std::to_string(before + 1);
    deferred_case(
        comm, 4096, 1,
        [&](buffers& b) {
          return allreduce_pairs(comm, b, 4096, {},
                                 me == 1 ? buffer_view{nullptr, 4096 * 4} : buffer_view{});
        },
        "the output of rank 1 is null",
        "rank 1 refused" + first + ": invalid buffer: the output of rank 1 is null",
        "a null output in a call in pieces");
    expect(comm.calls_made() - before > 2, "the call in pieces took " +
                                               std::to_string(comm.calls_made() - before) +
                                               " sequence numbers with the good call after it");
  }
}

void absent_peer(communicator& comm, bool warm, bool stall, std::chrono::milliseconds timeout) {
  const int me = comm.rank(), last = comm.size() - 1;
  if (warm) {
    good_call(comm, 5, "warming the shape");
    // The last rank may leave only once every rank has finished the warm-up: a process that exits
    // without closing its communicator fails every call still running, whoever it waits for, so
    // an early exit would fail the warm-up on a slow rank (seen once under ASan).
    const status s = comm.boot().barrier(testing::harness_wait);
    expect(s.ok(), "the barrier after the warm-up failed: " + s.to_string());
  }
  if (me == last) {
    // Stalled past the others' wait for it, however late they return on a loaded machine.
    if (stall) std::this_thread::sleep_for(timeout + 2 * testing::busy_margin);
    std::fflush(nullptr);
    std::_Exit(0);  // gone without calling
  }
  buffers b(me, 5);
  const auto start = std::chrono::steady_clock::now();
  const status s = allreduce_pairs(comm, b, warm ? 5 : 3);
  const auto took = std::chrono::steady_clock::now() - start;
  // The cause first, on every rank: the peer that stalled (a timeout) or exited (peer lost).
  const std::string cause = "rank " + std::to_string(last) + (stall ? " did not enter" : " (pid");
  expect_error(s, stall ? errc::timeout : errc::peer_lost, cause, b,
               stall ? "a stalled peer" : "an exited peer");
  expect(s.message().rfind(cause, 0) == 0 && s.peer() == last,
         "the cause is not first, or not the status's peer (" + std::to_string(s.peer()) +
             "): " + s.message());
  const std::string timing =
      std::string(stall ? "a stalled peer" : "an exited peer") + ": the call took " +
      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()) +
      " ms; the timeout is " + std::to_string(timeout.count()) + " ms";
  expect(took < timeout + testing::busy_margin, timing);
  if (stall) expect(took >= timeout * 9 / 10, timing);
  // The communicator is broken now: a later call fails at once, still naming the peer.
  if (warm) {
    const status again = allreduce_pairs(comm, b, 5);
    expect(!again.ok() && again.message().find(std::to_string(last)) != std::string::npos,
           "the call after a timeout: " + again.to_string());
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string scenario = argc > 1 ? argv[1] : "";
  auto comm = testing::connect_or_exit();
  const auto timeout = comm->config().timeout;
  if (scenario == "mismatch")
    mismatch(*comm);
  else if (scenario == "invalid_buffer")
    invalid_buffer(*comm);
  else if (scenario == "one_refusal")
    one_refusal(*comm);
  else if (scenario == "new_against_cached")
    new_against_cached(*comm, timeout);
  else if (scenario == "refuse")
    refuse(*comm, timeout);
  else if (scenario == "early_exit")
    absent_peer(*comm, true, false, timeout);
  else if (scenario == "early_exit_new_shape")
    absent_peer(*comm, false, false, timeout);
  else if (scenario == "stall")
    absent_peer(*comm, true, true, timeout);
  else if (scenario == "deferred")
    deferred(*comm);
  else {
    std::fprintf(stderr, "unknown scenario '%s'\n", scenario.c_str());
    return 2;
  }
  if (failures == 0) std::printf("%s: as promised\n", scenario.c_str());
  return failures == 0 ? 0 : 1;
}
