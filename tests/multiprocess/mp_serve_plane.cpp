// The control plane's failures and limits across processes, one scenario per run under relay-run
// with 4 ranks (every rank exits 0 where it saw what the scenario promises; RELAY_TIMEOUT is the
// scenario's timeout, 3 s, or 1 s for stop_alone_idle):
//   consumer_kill      every rank calls (rank 0 publishes, as torchcomms'); ranks 1-3 consume
//                      epoch 0, then rank 3 is SIGKILLed (it runs in a child of its rank's process,
//                      so relay-run sees its rank exit 0) while rank 0 publishes on and ranks 1 and
//                      2 consume on: each survivor's first error is errc::peer_lost naming rank 3
//                      first (its status's peer too), within the timeout plus 1 s of the kill
//   consumer_exit      the same, rank 3 exiting
//   consumer_leaves    the same, rank 3 closing its communicator (its process lives on)
//   consumer_gives_up  rank 3's wait for epoch 1 times out after 200 ms: ranks 0-2 report its
//                      recorded failure (errc::timeout naming rank 0, the publisher, "seen by
//                      rank 3"), within the timeout plus 1 s
//   two_serves         ranks 0 and 1 call, 2 and 3 serve; rank 2 serves from two threads at once:
//                      one serve() is refused at once (errc::invalid_argument, on rank 2 alone),
//                      the other serves every call (20); every call is right on the active ranks
//   stop_alone         ranks 2 and 3 call (rank 2 publishes), 0 and 1 serve; after 3 calls rank 2
//                      alone stops the serving ranks, which return and close their communicators:
//                      rank 3's next call fails naming rank 2 (errc::peer_error, peer 2), its
//                      output untouched
//   stop_alone_idle    the same, the serving ranks staying open without calling: rank 3's call
//                      fails after the timeout, naming rank 2
//   limit_differs      rank 2's NCCL_RELAY_CONTROL_MAX_CALLS is 64, the others' unset (128):
//                      attach_plane fails on every rank naming rank 2 first
//   limit_too_large    rank 1's is 9000, more than the 8186 counts the plan slots hold: every rank
//                      fails naming rank 1 first
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>

#include "multiprocess/serve_support.hpp"
#include "relay/serve/plans.hpp"
#include "relay/serve/serve.hpp"

using namespace relay;
using relay::testing::expect;
using relay::testing::failures;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr int served_calls = 3;  // stop_alone's calls before the stop
constexpr int two_serves_calls = 20;

std::string ms_since(clock_type::time_point t) {
  return std::to_string(
             std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t).count()) +
         " ms";
}

bool names_first(const status& s, int q) {
  const std::string p = "rank " + std::to_string(q);
  return s.message().rfind(p, 0) == 0 && s.message().size() > p.size() &&
         !std::isdigit(static_cast<unsigned char>(s.message()[p.size()]));
}

// A survivor's first error: `code`, naming rank `cause` first (and as its peer), within `limit`
// of `start`.
void expect_named(const status& s, errc code, int cause, clock_type::time_point start,
                  std::chrono::milliseconds limit, const std::string& who) {
  const std::string took = ms_since(start);
  expect(s.code() == code,
         who + ": expected " + std::string(name(code)) + ", got " + s.to_string());
  expect(s.peer() == cause && names_first(s, cause),
         who + ": does not name rank " + std::to_string(cause) + " first (peer " +
             std::to_string(s.peer()) + "): " + s.message());
  expect(clock_type::now() - start <= limit, who + ": failed " + took + " after the fault (limit " +
                                                 std::to_string(limit.count()) + " ms)");
  std::printf("%s: %s, %s after the fault\n", who.c_str(), std::string(name(s.code())).c_str(),
              took.c_str());
}

// The plan stream's faults: every rank calls; ranks 1-3 consume epoch 0; then rank 3 does what
// `scenario` says while rank 0 publishes epochs 1, 2, ... and ranks 1, 2 consume them until each
// fails.
void consumer_fault(communicator& comm, const std::string& scenario) {
  const int me = comm.rank();
  const auto timeout = comm.config().timeout;
  const serve::control_plan plan{1, 7, 0, 0, {1024, 512}};
  status s = me == 0 ? serve::publish_control(comm, 0, plan, timeout) : status{};
  serve::control_plan got;
  if (s && me != 0) s = serve::consume_control(comm, 0, got, timeout);
  expect(s.ok() && (me == 0 || got == plan), "epoch 0: " + s.to_string());
  s = comm.boot().barrier(timeout);
  expect(s.ok(), "the barrier after epoch 0: " + s.to_string());
  const auto fault = clock_type::now();
  if (me == 3) {
    if (scenario == "consumer_kill") ::raise(SIGKILL);
    if (scenario == "consumer_exit") {
      std::fflush(nullptr);
      std::_Exit(0);
    }
    if (scenario == "consumer_gives_up") {
      s = serve::consume_control(comm, 1, got, std::chrono::milliseconds(200));
      expect(s.code() == errc::timeout, "rank 3's own wait: " + s.to_string());
    }
    // consumer_leaves: closed by the caller; the process stays until the others are done.
    return;
  }
  const auto limit = timeout + std::chrono::seconds(1);
  if (me == 0) {
    // consumer_gives_up: rank 3 gives up first (its wait is 200 ms).
    if (scenario == "consumer_gives_up") std::this_thread::sleep_for(std::chrono::seconds(1));
    for (std::uint64_t e = 1; s.ok() && clock_type::now() - fault < limit; ++e) {
      s = serve::publish_control(comm, e, plan, timeout);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  } else {
    for (std::uint64_t e = 1; s.ok() && clock_type::now() - fault < limit; ++e)
      s = serve::consume_control(comm, e, got, timeout);
  }
  const std::string who = "rank " + std::to_string(me);
  if (scenario == "consumer_gives_up") {
    expect_named(s, errc::timeout, 0, fault, limit, who);
    expect(s.message().rfind("rank 0, the publisher, published no plan for epoch 1 within 200 ms "
                             "(seen by rank 3)",
                             0) == 0,
           who + ": not rank 3's recorded failure: " + s.message());
  } else {
    expect_named(s, errc::peer_lost, 3, fault, limit, who);
  }
}

// Rank 2 serves from two threads at once: one serve() is refused at once, on its rank alone.
// The calls begin once every rank has met, which rank 2 does once one of its serve()s returned
// (the refused one), so the two overlap whichever claims first.
void two_serves(communicator& comm) {
  const int me = comm.rank();
  const auto timeout = comm.config().timeout;
  if (me < 2) {
    expect(comm.boot().barrier(timeout * 3).ok(), "the barrier before the calls");
    std::mt19937_64 rng(20261211);
    for (int i = 0; i < two_serves_calls; ++i) {
      const testing::served_case_t d = testing::served_case(rng, {0, 1}, 4, 4096);
      const std::string wrong = testing::call_and_check(comm, d);
      expect(wrong.empty(), "call " + std::to_string(i) + " (" + d.c.describe() + "): " + wrong);
    }
    const status s = serve::stop_serving(comm);
    expect(s.ok(), "stop_serving: " + s.to_string());
    return;
  }
  struct outcome {
    status s;
    serve::serve_report report;
    std::chrono::milliseconds took{0};
  };
  std::atomic<int> returned{0};
  auto run = [&comm, &returned](outcome& o) {
    const auto start = clock_type::now();
    o.s = serve::serve(comm, {}, &o.report);
    o.took = std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - start);
    ++returned;
  };
  if (me == 3) {
    expect(comm.boot().barrier(timeout * 3).ok(), "the barrier before the calls");
    outcome o;
    run(o);
    expect(o.s.ok() && o.report.calls == two_serves_calls,
           "rank 3 serve(): " + o.s.to_string() + ", " + std::to_string(o.report.calls) + " calls");
    return;
  }
  outcome a, b;
  std::thread first(run, std::ref(a)), second(run, std::ref(b));
  const auto start = clock_type::now();
  while (returned == 0 && clock_type::now() - start < timeout)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  expect(comm.boot().barrier(timeout * 3).ok(), "the barrier before the calls");
  first.join();
  second.join();
  // Whichever claimed second is refused; the other serves every call.
  const bool b_refused = b.s.code() == errc::invalid_argument;
  const outcome& refused = b_refused ? b : a;
  const outcome& served = b_refused ? a : b;
  expect(refused.s.code() == errc::invalid_argument && refused.s.peer() == -1 &&
             refused.s.message() ==
                 "rank 2 serves this communicator already (a serve() in another thread): one "
                 "serve() per communicator at a time",
         "the refused serve(): " + refused.s.to_string());
  expect(refused.took < std::chrono::seconds(1),
         "the refused serve() returned after " + std::to_string(refused.took.count()) + " ms");
  expect(refused.report.steps == 0, "the refused serve() took a step");
  expect(served.s.ok() && served.report.calls == two_serves_calls && served.report.failed == 0,
         "the other serve(): " + served.s.to_string() + ", " + std::to_string(served.report.calls) +
             " calls, " + std::to_string(served.report.failed) + " failed");
}

// Ranks 2 and 3 call, 0 and 1 serve; rank 2 alone stops the serving ranks after 3 calls; rank 3
// makes a fourth.
void stop_alone(communicator& comm, bool idle) {
  const int me = comm.rank();
  const auto timeout = comm.config().timeout;
  const auto linger = timeout + std::chrono::milliseconds(1500);
  if (me < 2) {
    serve::serve_report report;
    const status s = serve::serve(comm, {}, &report);
    expect(s.ok() && report.calls == served_calls,
           "serve(): " + s.to_string() + ", " + std::to_string(report.calls) + " calls");
    if (idle) std::this_thread::sleep_for(linger);  // open, not calling
    return;
  }
  std::mt19937_64 rng(20261212);
  for (int i = 0; i < served_calls; ++i) {
    const testing::served_case_t d = testing::served_case(rng, {2, 3}, 4, 4096);
    const std::string wrong = testing::call_and_check(comm, d);
    expect(wrong.empty(), "call " + std::to_string(i) + " (" + d.c.describe() + "): " + wrong);
  }
  if (me == 2) {
    const status s = serve::stop_serving(comm);
    expect(s.ok(), "stop_serving: " + s.to_string());
    std::this_thread::sleep_for(linger);  // open: the serving ranks' leaving is what rank 3 meets
    return;
  }
  const testing::served_case_t d = testing::served_case(rng, {2, 3}, 4, 4096);
  const auto inputs = testing::all_inputs(d.c);
  testing::rank_frame frame(d.c, me, inputs[static_cast<std::size_t>(me)]);
  const std::vector<std::byte> before = frame.bytes;
  const auto start = clock_type::now();
  const status s = testing::call(comm, d.c, frame);
  expect_named(s, errc::peer_error, 2, start, timeout + std::chrono::seconds(1), "rank 3");
  expect(s.message().rfind("rank 2, the publisher, stopped the ranks that serve after call #3 "
                           "(stop_serving) and made no call since: they take no part in call #4",
                           0) == 0,
         "rank 3: " + s.message());
  expect(frame.bytes == before, "rank 3's failed call wrote its buffers");
}

// attach_plane with one rank's NCCL_RELAY_CONTROL_MAX_CALLS set to `value`, the others' unset:
// every rank fails naming `odd` first, its message starting with `text`.
void limits(communicator& comm, int odd, const char* value, const std::string& text) {
  if (comm.rank() == odd)
    ::setenv("NCCL_RELAY_CONTROL_MAX_CALLS", value, 1);
  else
    ::unsetenv("NCCL_RELAY_CONTROL_MAX_CALLS");
  const status s = serve::attach_plane(comm, serve::plane_role::call);
  expect(s.code() == errc::invalid_argument && s.peer() == odd,
         "attach_plane: " + s.to_string() + " (peer " + std::to_string(s.peer()) + ")");
  expect(s.message().rfind(text, 0) == 0, "attach_plane: " + s.message());
}

// The scenario on this rank's communicator; the process's exit status.
int run(const std::string& scenario) {
  auto comm = testing::connect_or_exit();
  const int me = comm->rank();
  if (scenario == "limit_differs") {
    limits(*comm, 2, "64", "rank 2 limits torchcomms plans to 64 counts, rank 0 to 128");
  } else if (scenario == "limit_too_large") {
    limits(*comm, 1, "9000",
           "rank 1: NCCL_RELAY_CONTROL_MAX_CALLS=9000 allows torchcomms plans of 9000 counts; the "
           "control plane's plan slots of 65536 bytes hold 8186");
  } else {
    const bool serves =
        (scenario == "two_serves" && me >= 2) || (scenario.rfind("stop_alone", 0) == 0 && me < 2);
    const status s =
        serve::attach_plane(*comm, serves ? serve::plane_role::serve : serve::plane_role::call);
    if (!s) {
      std::fprintf(stderr, "attach_plane: %s\n", s.to_string().c_str());
      return 2;
    }
    if (scenario == "two_serves")
      two_serves(*comm);
    else if (scenario == "stop_alone" || scenario == "stop_alone_idle")
      stop_alone(*comm, scenario == "stop_alone_idle");
    else
      consumer_fault(*comm, scenario);
    if (me == 3 && (scenario == "consumer_leaves" || scenario == "consumer_gives_up")) {
      const auto linger = comm->config().timeout + std::chrono::seconds(2);
      if (scenario == "consumer_leaves") comm.reset();  // closed while the others go on
      std::this_thread::sleep_for(linger);
    }
  }
  if (failures == 0) std::printf("%s: as promised\n", scenario.c_str());
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string scenario = argc > 1 ? argv[1] : "";
  const char* known[] = {"consumer_kill",     "consumer_exit", "consumer_leaves",
                         "consumer_gives_up", "two_serves",    "stop_alone",
                         "stop_alone_idle",   "limit_differs", "limit_too_large"};
  if (std::find(std::begin(known), std::end(known), scenario) == std::end(known)) {
    std::fprintf(stderr, "unknown scenario '%s'\n", scenario.c_str());
    return 2;
  }
  // The rank killed runs in a child, so that its rank's process (relay-run's) exits 0 once the
  // child died as planned.
  const char* rank = std::getenv("RELAY_RANK");
  if (scenario == "consumer_kill" && rank != nullptr && std::string(rank) == "3") {
    const pid_t child = ::fork();
    if (child == 0) std::_Exit(run(scenario));
    int st = 0;
    if (child < 0 || ::waitpid(child, &st, 0) != child) return 2;
    if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) return 0;
    std::fprintf(stderr, "FAILED: rank 3 was not killed (status %d)\n", st);
    return 1;
  }
  return run(scenario);
}
