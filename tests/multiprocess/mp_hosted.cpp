// Hosted helpers on the shm transport (docs/hosted-helpers.md): A processes over N = 8 ranks.
//
//   relay-run -n 8 -- relay_mp_hosted record A CALLS SEED FILE
//       the suite's calls with 8 processes (ranks A..7 helper processes with no buffers): each
//       active rank writes the digest of its output of every call to FILE.<rank>
//   RELAY_HELPER_DEVICES=... relay-run -n A -- relay_mp_hosted hosted A CALLS SEED FILE
//       the same calls from A processes hosting the 8 - A helpers: a fused call first (it makes
//       hosted ranks active: refused on every rank naming the lowest hosted rank, the communicator
//       usable after), then every call checked against the naive reference (run_and_check) and,
//       bit for bit, against FILE.<rank>
//   relay_mp_hosted faults [SCENARIO]
//       its own launcher: 2 processes hosting ranks 2-7, each scenario's checks below
//
// The suite's calls: one group of the A process ranks in a random order, every collective,
// dtype and operator, the routes of one group (relay, direct, legacy at A = 2, pipelined, and
// route::automatic), in and out of place, odd and zero counts, the fp8 wire now and then.
//
// Fault scenarios (RELAY_TIMEOUT 5 s but where said; every one: no call returns ok with wrong
// data, none that fails writes its output, nothing is left in /dev/shm):
//   host_kill      process 1 (ranks 1, 5, 6, 7) is SIGKILLed in a call: rank 0 fails naming rank 1,
//                  its pid and the ranks it ran (errc::peer_lost), within busy_margin (a loaded
//                  machine's, support/busy_margin.hpp; alone it takes milliseconds)
//   hosted_stall   hosted rank 5 stalls for the timeout (1 s) plus 500 ms before its part of a
//                  call: both processes fail that call naming rank 5 first (errc::timeout),
//                  within the timeout plus busy_margin
//   differ         process 1 names helper devices 2,3,4,5 (process 0: 2..7): creation fails on
//                  both, errc::mismatch naming rank 1 and both lists
//   unreadable     process 1's RELAY_HELPER_DEVICES is "2,x": creation fails on both, its own
//                  errc::invalid_argument naming the text there, errc::peer_error naming rank 1
//                  on process 0
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <set>
#include <thread>

#include "multiprocess/forked_job.hpp"
#include "multiprocess/hosted_suite.hpp"
#include "multiprocess/mp_support.hpp"
#include "relay/hosted/transport.hpp"
#include "support/dev_shm.hpp"
#include "support/steady_us.hpp"

using namespace relay;
using namespace relay::testing;
using clock_type = std::chrono::steady_clock;

namespace {

// A fused call makes hosted ranks active: every process's call fails naming rank A, the lowest
// hosted rank, whose refusal says it holds no buffers; nothing is written.
std::string fused_is_refused(communicator& comm, int A) {
  group_list pairs;
  for (int r = 0; r < hosted_ranks; r += A) {
    pairs.emplace_back();
    for (int k = 0; k < A; ++k)
      pairs.back().push_back(r + k);
  }
  std::vector<float> in(64, 1.0f), out(64, -7.0f);
  const std::vector<std::int64_t> counts(pairs.size(), 64);
  const status s = allreduce(comm, pairs, {in.data(), 256}, {out.data(), 256}, counts,
                             dtype::float32, reduce_op::sum);
  if (s.code() != errc::peer_error || s.peer() != A ||
      s.message().find("is a hosted helper (it holds no buffers)") == std::string::npos)
    return "a fused call returned " + s.to_string() + ", not a refusal naming rank " +
           std::to_string(A);
  if (out != std::vector<float>(64, -7.0f)) return "a refused fused call wrote its output";
  return {};
}

int suite(bool hosted, int A, int calls, std::uint64_t seed, const std::string& file) {
  auto comm = connect_or_exit();
  if (hosted && comm->size() == hosted_ranks && comm->rank() < A)
    if (const std::string f = fused_is_refused(*comm, A); !f.empty()) {
      std::fprintf(stderr, "FAILED: %s\n", f.c_str());
      return 1;
    }
  return hosted_suite(*comm, hosted, A, calls, seed, file, "",
                      [&](const property_case& c, rank_frame& f) { return call(*comm, c, f); });
}

// ---- faults: the launcher, its scenarios and their checks -----------------------------------

constexpr int processes = 2;
constexpr int at = 2;  // the call where the fault is

struct scenario {
  const char* name;
  std::chrono::milliseconds timeout;
  errc code;       // the cause's
  int cause;       // the rank every error names first
  bool at_create;  // the creation fails
};

const scenario scenarios[] = {
    {"host_kill", std::chrono::milliseconds(5000), errc::peer_lost, 1, false},
    {"hosted_stall", std::chrono::milliseconds(1000), errc::timeout, 5, false},
    {"differ", std::chrono::milliseconds(5000), errc::mismatch, 1, true},
    {"unreadable", std::chrono::milliseconds(5000), errc::invalid_argument, 1, true},
};

// What a process reports: per call (or its creation: call -1), one write() each.
struct report {
  int rank = 0, call = 0, code = 0, peer = -1;
  int wrong = 0;  // wrong elements of an ok call; -1: a failed call wrote its output
  long long returned_us = 0;
  char message[400] = {};
};

struct fault_board {
  std::atomic<long long> at_us{0};
};
fault_board* board = nullptr;

void send(int out, report r) {
  r.returned_us = steady_us();
  (void)!::write(out, &r, sizeof r);
}

const scenario* current = nullptr;

// hosted_stall: rank 5 stalls before its part of call `at`.
void stall_rank_5(int rank, std::uint64_t sequence) {
  if (rank != 5 || sequence != static_cast<std::uint64_t>(at) + 1) return;
  board->at_us = steady_us();
  std::this_thread::sleep_for(current->timeout + std::chrono::milliseconds(500));
}

[[noreturn]] void run_process(const scenario& s, int rank, int port, int out) {
  const std::string name = s.name;
  set_rank_environment(rank, processes, port, s.timeout);
  std::string helpers = "2,3,4,5,6,7";
  if (rank == 1 && name == "differ") helpers = "2,3,4,5";
  if (rank == 1 && name == "unreadable") helpers = "2,x";
  ::setenv("RELAY_HELPER_DEVICES", helpers.c_str(), 1);
  current = &s;
  if (name == "hosted_stall") hosted::detail::before_part = stall_rank_5;
  std::unique_ptr<communicator> comm;
  if (status st = communicator_from_environment(shm_factory(), comm); !st) {
    report r;
    r.rank = rank;
    r.call = -1;
    r.code = static_cast<int>(st.code());
    r.peer = st.peer();
    st.message().copy(r.message, sizeof r.message - 1);
    send(out, r);
    std::_Exit(0);
  }
  // A kill lands when the scheduler lets it: the ranks go on calling until a call fails.
  for (int i = 0; i < (name == "host_kill" ? 2000 : at + 2); ++i) {
    property_case c;
    c.ranks = hosted_ranks;
    c.active = 2;
    c.mode = mode::single;
    c.coll = all_collectives[static_cast<std::size_t>(i % 4)];
    c.type = dtype::int32;
    c.groups = {{0, 1}};
    c.counts = {1 << 14};
    c.seed = 1000 + static_cast<std::uint64_t>(i);
    if (name == "host_kill" && rank == 1 && i == at)
      std::thread([] {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
        board->at_us = steady_us();
        ::kill(::getpid(), SIGKILL);
      }).detach();
    const auto inputs = all_inputs(c);
    rank_frame frame(c, rank, inputs[static_cast<std::size_t>(rank)]);
    const std::vector<std::byte> before = frame.bytes;
    const status st = call(*comm, c, frame);
    report r;
    r.rank = rank;
    r.call = i;
    r.code = static_cast<int>(st.code());
    r.peer = st.peer();
    st.message().copy(r.message, sizeof r.message - 1);
    if (st.ok()) {
      std::vector<std::vector<std::byte>> outputs(inputs.size());
      outputs[static_cast<std::size_t>(rank)] = frame.output();
      const reference::call_data data{c.coll, c.type, c.op, c.groups, c.counts, inputs, outputs};
      r.wrong = static_cast<int>(reference::check_outputs(data, c.precision, false, rank).wrong);
      if (!frame.canaries_intact()) ++r.wrong;
    } else if (frame.bytes != before) {
      r.wrong = -1;
    }
    send(out, r);
    if (!st.ok()) break;
  }
  comm.reset();
  std::_Exit(0);
}

// Whether `message` names rank q first: "rank 1 ...".
bool names_first(const std::string& message, int q) {
  const std::string p = "rank " + std::to_string(q);
  return message.rfind(p, 0) == 0 && message.size() > p.size() &&
         !std::isdigit(static_cast<unsigned char>(message[p.size()]));
}

std::vector<std::string> run_scenario(const scenario& s) {
  std::vector<std::string> failures_seen;
  auto fail = [&](const std::string& what) {
    failures_seen.push_back(std::string(s.name) + ": " + what);
  };
  int port = 0;
  if (status p = free_loopback_port(port); !p) return {"no free port: " + p.to_string()};
  board->at_us = 0;
  forked_job<report> job;
  const auto deadline = clock_type::now() + s.timeout * 6 + std::chrono::seconds(20);
  if (status f = fork_job<report>(
          processes, [&](int r, int out) { run_process(s, r, port, out); }, deadline, job);
      !f)
    return {f.to_string()};
  const std::vector<pid_t>& pids = job.pids;
  const std::vector<std::vector<report>>& by_rank = job.reports;
  const bool hung = job.hung;
  if (hung) fail("a process hung past every deadline");
  if (std::getenv("RELAY_HOSTED_FAULTS_VERBOSE") != nullptr)
    for (const auto& reps : by_rank)
      for (const report& x : reps)
        std::printf("  rank %d call %d: %s (%lld us after the fault) %s\n", x.rank, x.call,
                    std::string(name(static_cast<errc>(x.code))).c_str(),
                    board->at_us.load() ? x.returned_us - board->at_us.load() : 0LL, x.message);
  const std::string what = s.name;
  // A loaded machine's margin (support/busy_margin.hpp): the timeout plus it, or it alone where
  // the fault is seen at once (a process gone).
  const auto limit = s.code == errc::timeout ? s.timeout + testing::busy_margin
                                             : std::chrono::milliseconds(testing::busy_margin);
  for (int q = 0; q < processes; ++q) {
    const auto& reps = by_rank[static_cast<std::size_t>(q)];
    const std::string who = "rank " + std::to_string(q);
    for (const report& x : reps) {
      if (x.code == 0 && x.wrong > 0)
        fail(who + " call " + std::to_string(x.call) + " returned ok with wrong data");
      if (x.code != 0 && x.wrong < 0)
        fail(who + " call " + std::to_string(x.call) + " failed but wrote its output");
    }
    if (what == "host_kill" && q == 1) continue;  // it died
    const report* first = nullptr;
    for (const report& x : reps)
      if (x.code != 0) {
        first = &x;
        break;
      }
    if (first == nullptr) {
      fail(who + " never failed");
      continue;
    }
    const std::string message = first->message;
    if (s.at_create) {
      if (first->call != -1) fail(who + " did not fail its creation: " + message);
      const errc want = q == s.cause || s.code == errc::mismatch ? s.code : errc::peer_error;
      if (first->code != static_cast<int>(want) || first->peer != s.cause)
        fail(who + "'s creation failed with " + std::string(name(static_cast<errc>(first->code))) +
             " naming rank " + std::to_string(first->peer) + ", not " + std::string(name(want)) +
             " naming rank " + std::to_string(s.cause) + ": " + message);
      const std::string lists = "helper devices 2,3,4,5 but rank 0 for 2,3,4,5,6,7";
      if (what == "differ" && message.find(lists) == std::string::npos)
        fail(who + "'s error does not show both lists: " + message);
      if (what == "unreadable" && message.find("'2,x'") == std::string::npos)
        fail(who + "'s error does not show rank 1's text: " + message);
      continue;
    }
    if (what == "host_kill" ? first->call < at : first->call != at)
      fail(who + " first failed at call " + std::to_string(first->call));
    if (first->peer != s.cause || !names_first(message, s.cause))
      fail(who + "'s error does not name rank " + std::to_string(s.cause) + " first (peer " +
           std::to_string(first->peer) + "): " + message);
    if (first->code != static_cast<int>(s.code))
      fail(who + "'s error is " + std::string(name(static_cast<errc>(first->code))) + ", not " +
           std::string(name(s.code)) + ": " + message);
    // The process and the ranks it ran, named: "rank 1 (pid N, which also ran ranks 5, 6, 7)".
    if (what == "host_kill" && message.find("(pid " + std::to_string(pids[1]) +
                                            ", which also ran ranks 5, 6, 7)") == std::string::npos)
      fail(who + "'s error does not name process 1 and the ranks it ran: " + message);
    if (board->at_us.load() == 0)
      fail("the fault was never marked");
    else if (std::chrono::microseconds(first->returned_us - board->at_us.load()) > limit)
      fail(who + " failed " + std::to_string((first->returned_us - board->at_us.load()) / 1000) +
           " ms after the fault (limit " + std::to_string(limit.count()) + " ms): " + message);
  }
  for (std::size_t q = 0; q < pids.size(); ++q)
    if (!(what == "host_kill" && q == 1) && !hung &&
        !(WIFEXITED(job.statuses[q]) && WEXITSTATUS(job.statuses[q]) == 0))
      fail("rank " + std::to_string(q) + " ended with status " + std::to_string(job.statuses[q]));
  return failures_seen;
}

int faults(const std::string& only) {
  void* shared = ::mmap(nullptr, sizeof(fault_board), PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) return 2;
  board = new (shared) fault_board{};
  return run_scenarios(scenarios, only, run_scenario);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "";
  if ((what == "record" || what == "hosted") && argc > 5)
    return suite(what == "hosted", std::atoi(argv[2]), std::atoi(argv[3]),
                 std::strtoull(argv[4], nullptr, 10), argv[5]);
  if (what == "faults") return faults(argc > 2 ? argv[2] : "");
  std::fprintf(stderr,
               "usage: relay_mp_hosted record|hosted A CALLS SEED FILE | faults [SCENARIO]\n");
  return 2;
}
