// Failures with serving ranks (serve/serve.hpp), each with its timing. The program is its own
// launcher: it forks the 8 ranks of each scenario (TCP bootstrap, shm transport), ranks 0 and 1
// call (one group, {0, 1}: rank 0 publishes) and ranks 2-7 serve; every rank reports each call
// (the active ranks) or its serve() (the others) through a pipe.
//
//   relay_mp_serve_faults [SCENARIO]        every scenario, or the one named
//
// Scenarios, and what every one checks besides: no ok call returns wrong data (each active rank
// checks its output against the naive reference), no failed call writes its output, nothing is
// left in /dev/shm. "In time" is within the timeout plus busy_margin (a loaded machine's); only
// a stall waits the timeout out, the other faults are seen without it (RELAY_SERVE_FAULTS_VERBOSE
// prints how soon).
//   publisher_exit, publisher_kill   rank 0 exits before call 2 / is SIGKILLed in it: every
//                                    serving rank's serve() fails naming rank 0 (peer_lost, its
//                                    pid) in time, with a timeout of 5 s; so does rank 1's call
//   publisher_stall                  rank 0 stops (SIGSTOP) before call 2: every serving rank's
//                                    serve() fails naming rank 0 in time (a timeout of 1 s);
//                                    rank 1 too; rank 0, resumed once they all failed, fails its
//                                    call
//   publisher_leaves                 rank 0 closes its communicator without stop_serving: every
//                                    serving rank fails naming it, in time
//   helper_kill, helper_exit         rank 5 is SIGKILLed in call 2 (or, as the scheduler has
//                                    it, a later one: the active ranks call on until one fails) /
//                                    exits having read call 2: the call fails on every rank
//                                    naming rank 5 in time
//   helper_active, too_large,        call 2 cannot be served (it makes serving rank 5 active / even
//   refused_arguments,               its smallest piece exceeds RELAY_SHM_BYTES / its counts are
//   publisher_refuses, misread       refused / rank 0 refuses it / rank 4 reads its shape wrong):
//                                    it fails on every
//                                    rank alike (the same cause first; misread: a mismatch), the
//                                    plane stays in step: every other call is right, and every
//                                    serving rank returns ok at stop having served every call,
//                                    one failed
//   stop_in_flight                   rank 0 stops the serving ranks from a second thread while
//                                    its last call (4 MB) is in flight: that call completes right
//                                    on both active ranks, then every serving rank returns ok,
//                                    having served it, in time from its end
//   in_pieces                        call 2 (8 MB) exceeds the 1 MB segment: every rank, the
//                                    serving ones too, cuts it into the same pieces; every call is
//                                    right and every serving rank returns ok having served all
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "multiprocess/forked_job.hpp"
#include "multiprocess/serve_support.hpp"
#include "relay/serve/serve.hpp"
#include "support/busy_margin.hpp"
#include "support/dev_shm.hpp"
#include "support/steady_us.hpp"

using namespace relay;
using namespace relay::testing;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr int ranks = 8;
constexpr int calls = 4;
constexpr int at = 2;  // the call where the fault is

struct scenario {
  const char* name;
  int faulty;
  std::chrono::milliseconds timeout;
  bool usable;  // the communicator stays usable: every other call is right
  errc code;    // what every rank's error is (usable scenarios), or the cause's (the others)
  std::size_t shm_bytes = 0;  // RELAY_SHM_BYTES, where not the default
};

const scenario scenarios[] = {
    {"publisher_exit", 0, std::chrono::milliseconds(5000), false, errc::peer_lost},
    {"publisher_kill", 0, std::chrono::milliseconds(5000), false, errc::peer_lost},
    {"publisher_stall", 0, std::chrono::milliseconds(1000), false, errc::timeout},
    {"publisher_leaves", 0, std::chrono::milliseconds(5000), false, errc::peer_lost},
    {"helper_kill", 5, std::chrono::milliseconds(5000), false, errc::peer_lost},
    {"helper_exit", 5, std::chrono::milliseconds(5000), false, errc::peer_lost},
    {"helper_active", 5, std::chrono::milliseconds(5000), true, errc::invalid_argument},
    {"too_large", -1, std::chrono::milliseconds(5000), true, errc::out_of_memory, 1 << 20},
    {"refused_arguments", -1, std::chrono::milliseconds(5000), true, errc::invalid_count},
    {"publisher_refuses", 0, std::chrono::milliseconds(5000), true, errc::invalid_argument},
    {"misread", 4, std::chrono::milliseconds(5000), true, errc::mismatch},
    {"stop_in_flight", -1, std::chrono::milliseconds(5000), true, errc::ok},
    {"in_pieces", -1, std::chrono::milliseconds(5000), true, errc::ok, 1 << 20},
};

// What a rank reports: one record per call (active ranks) or for its serve() (call = -1), one
// write() each (below PIPE_BUF: records never mix).
struct report {
  int rank = 0, call = 0;
  int code = 0, peer = -1;
  int wrong = 0;              // an active's wrong elements; -1: written on an error
  long long micros = 0;       // how long the call or the serve() took
  long long returned_us = 0;  // when it returned (steady clock, shared by the processes)
  std::uint64_t served = 0, failed = 0;
  int last_code = 0, last_peer = -1;  // serve(): its report's last failure
  char message[240] = {};
};

// When the fault happened (steady clock, microseconds), written by the faulty rank (or the
// launcher, for a stop) into memory mapped before the fork; how many ranks have reported a
// failure.
struct fault_board {
  std::atomic<long long> at_us{0};
  std::atomic<int> failed{0};
};
fault_board* board = nullptr;

void send(int out, report r) {
  r.returned_us = steady_us();
  (void)!::write(out, &r, sizeof r);
  if (r.code != 0) ++board->failed;
}

// The case of call i: an int32 call of {0, 1} (the four collectives in turn), 4096 elements, the
// last of stop_in_flight 1M (4 MB), call `at` of in_pieces 2M (8 MB: past the 1 MB segment), and
// of too_large an alignment of 2^20 elements (its smallest piece, 4 MB, past it).
served_case_t case_of(const scenario& s, int i) {
  served_case_t d;
  property_case& c = d.c;
  c.ranks = ranks;
  c.active = 2;
  c.mode = mode::single;
  c.coll = all_collectives[static_cast<std::size_t>(i % 4)];
  c.type = dtype::int32;
  c.groups = {{0, 1}};
  c.counts = {4096};
  c.seed = 1000 + static_cast<std::uint64_t>(i);
  if (std::string(s.name) == "stop_in_flight" && i == calls - 1) c.counts = {1 << 20};
  if (std::string(s.name) == "in_pieces" && i == at) c.counts = {1 << 21};
  if (std::string(s.name) == "too_large" && i == at) {
    c.counts = {1 << 21};
    c.alignment = std::int64_t{1} << 20;
  }
  if (std::string(s.name) == "helper_active" && i == at) c.groups = {{0, 5}};
  return d;
}

const scenario* current = nullptr;

// A serving rank's hook on the shape it read (serve/serve.hpp): the faults of rank 4 and 5.
void on_reading(call_shape& shape, std::uint64_t sequence) {
  if (sequence != static_cast<std::uint64_t>(at) + 1) return;
  const std::string name = current->name;
  if (name == "misread") shape.counts[0] += 1;
  if (name == "helper_exit") {
    board->at_us = steady_us();
    std::_Exit(3);
  }
  if (name == "helper_kill")
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      board->at_us = steady_us();
      ::kill(::getpid(), SIGKILL);
    }).detach();
}

[[noreturn]] void run_rank(const scenario& s, int rank, int port, int out) {
  ::setenv("RELAY_RANK", std::to_string(rank).c_str(), 1);
  ::setenv("RELAY_WORLD_SIZE", std::to_string(ranks).c_str(), 1);
  ::setenv("RELAY_STORE_ADDR", "127.0.0.1", 1);
  ::setenv("RELAY_STORE_PORT", std::to_string(port).c_str(), 1);
  ::setenv("RELAY_TIMEOUT", std::to_string(s.timeout.count() / 1000.0).c_str(), 1);
  if (s.shm_bytes) ::setenv("RELAY_SHM_BYTES", std::to_string(s.shm_bytes).c_str(), 1);
  std::unique_ptr<communicator> comm;
  status st = communicator_from_environment(shm_factory(), comm);
  const bool active = rank < 2;
  if (st)
    st = serve::attach_plane(*comm, active ? serve::plane_role::call : serve::plane_role::serve);
  if (!st) {
    report r;
    r.rank = rank;
    r.call = -2;
    r.code = static_cast<int>(st.code());
    st.to_string().copy(r.message, sizeof r.message - 1);
    send(out, r);
    std::_Exit(2);
  }
  const std::string name = s.name;
  if (!active) {
    current = &s;
    if (rank == s.faulty || (name == "misread" && rank == 4))
      serve::detail::after_reading = on_reading;
    serve::serve_report sr;
    const auto start = clock_type::now();
    st = serve::serve(*comm, {}, &sr);
    report r;
    r.rank = rank;
    r.call = -1;
    r.code = static_cast<int>(st.code());
    r.peer = st.peer();
    r.micros =
        std::chrono::duration_cast<std::chrono::microseconds>(clock_type::now() - start).count();
    r.served = sr.calls;
    r.failed = sr.failed;
    r.last_code = static_cast<int>(sr.last_failure.code());
    r.last_peer = sr.last_failure.peer();
    st.message().copy(r.message, sizeof r.message - 1);
    send(out, r);
    comm.reset();
    std::_Exit(0);
  }
  // A kill lands when the scheduler lets it: the active ranks go on calling until a call fails.
  const bool killed = name == "publisher_kill" || name == "helper_kill";
  for (int i = 0; i < (killed ? 2000 : calls); ++i) {
    const served_case_t d = case_of(s, i);
    const bool faulty_here = rank == s.faulty && i == at;
    if (faulty_here && name == "publisher_exit") {
      board->at_us = steady_us();
      std::_Exit(3);
    }
    if (faulty_here && name == "publisher_stall") {
      board->at_us = steady_us();
      ::raise(SIGSTOP);  // the launcher resumes it
    }
    if (faulty_here && name == "publisher_leaves") {
      board->at_us = steady_us();
      comm.reset();
      std::_Exit(0);
    }
    if (faulty_here && name == "publisher_kill")
      std::thread([] {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
        board->at_us = steady_us();
        ::kill(::getpid(), SIGKILL);
      }).detach();
    std::thread stopper;
    if (name == "stop_in_flight" && rank == 0 && i == calls - 1) {
      // Once the call is published (it is in flight), stop: from another thread.
      serve::control_plane* plane = serve::plane_of(*comm);
      const std::uint64_t before = plane->published();
      stopper = std::thread([&comm, plane, before] {
        while (plane->published() == before)
          std::this_thread::yield();
        board->at_us = steady_us();
        if (status x = serve::stop_serving(*comm); !x)
          std::fprintf(stderr, "stop_serving: %s\n", x.to_string().c_str());
      });
    }
    const auto inputs = all_inputs(d.c);
    rank_frame frame(d.c, rank, inputs[static_cast<std::size_t>(rank)]);
    const std::vector<std::byte> before = frame.bytes;
    property_case c = d.c;
    if (name == "refused_arguments" && i == at) c.counts = {-1};
    const auto start = clock_type::now();
    if (faulty_here && name == "publisher_refuses")
      st = comm->refuse({errc::invalid_argument, "this rank's tensor is the wrong dtype"});
    else
      st = call(*comm, c, frame);
    if (stopper.joinable()) stopper.join();
    report r;
    r.rank = rank;
    r.call = i;
    r.code = static_cast<int>(st.code());
    r.peer = st.peer();
    r.micros =
        std::chrono::duration_cast<std::chrono::microseconds>(clock_type::now() - start).count();
    st.message().copy(r.message, sizeof r.message - 1);
    if (st.ok()) {
      std::vector<std::vector<std::byte>> outputs(inputs.size());
      outputs[static_cast<std::size_t>(rank)] = frame.output();
      const reference::call_data data{d.c.coll,   d.c.type, d.c.op, d.c.groups,
                                      d.c.counts, inputs,   outputs};
      r.wrong = static_cast<int>(reference::check_outputs(data, d.c.precision, false, rank).wrong);
      if (!frame.canaries_intact()) ++r.wrong;
    } else if (frame.bytes != before) {
      r.wrong = -1;
    }
    send(out, r);
    if (!st.ok() && comm->transport().broken()) break;
  }
  if (name != "stop_in_flight" || rank != 0) (void)serve::stop_serving(*comm);
  comm.reset();
  std::_Exit(0);
}

// Whether `message` names rank q first: "rank 5 ...", "rank 0, the publisher, ...".
bool names_first(const std::string& message, int q) {
  const std::string p = "rank " + std::to_string(q);
  return message.rfind(p, 0) == 0 && message.size() > p.size() &&
         !std::isdigit(static_cast<unsigned char>(message[p.size()]));
}

std::vector<std::string> run_scenario(const scenario& s, std::vector<pid_t>& pids) {
  std::vector<std::string> failures;
  auto fail = [&](const std::string& what) {
    failures.push_back(std::string(s.name) + ": " + what);
  };
  int pipe_fd[2];
  if (::pipe(pipe_fd) != 0) return {"pipe: " + std::string(std::strerror(errno))};
  int port = 0;
  if (status p = free_loopback_port(port); !p) return {"no free port: " + p.to_string()};
  board->at_us = 0;
  board->failed = 0;
  pids.clear();
  for (int r = 0; r < ranks; ++r) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(pipe_fd[0]);
      run_rank(s, r, port, pipe_fd[1]);
    }
    pids.push_back(pid);
  }
  ::close(pipe_fd[1]);
  const auto deadline = clock_type::now() + s.timeout * 6 + std::chrono::seconds(20);
  std::vector<int> exit_status(pids.size(), -1);
  std::size_t alive = pids.size();
  // A stopped rank is resumed once every other rank has failed (a time alone does not hold on a
  // loaded machine: resumed too soon, it would publish again), or after twice the timeout and
  // the margin.
  clock_type::time_point stopped_at{};
  bool hung = false;
  while (alive > 0) {
    int st = 0;
    const pid_t p = ::waitpid(-1, &st, WNOHANG | WUNTRACED);
    if (p > 0) {
      for (std::size_t r = 0; r < pids.size(); ++r)
        if (pids[r] == p) {
          if (WIFSTOPPED(st)) {
            stopped_at = clock_type::now();
          } else {
            exit_status[r] = st;
            --alive;
          }
        }
      continue;
    }
    if (stopped_at != clock_type::time_point{} &&
        (board->failed >= ranks - 1 ||
         clock_type::now() > stopped_at + 2 * (s.timeout + testing::busy_margin))) {
      ::kill(pids[static_cast<std::size_t>(s.faulty)], SIGCONT);
      stopped_at = {};
    }
    if (clock_type::now() > deadline && !hung) {
      hung = true;
      for (pid_t q : pids)
        ::kill(q, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::vector<std::vector<report>> by_rank(ranks);
  report r;
  while (::read(pipe_fd[0], &r, sizeof r) == static_cast<ssize_t>(sizeof r))
    if (r.rank >= 0 && r.rank < ranks) by_rank[static_cast<std::size_t>(r.rank)].push_back(r);
  ::close(pipe_fd[0]);
  if (hung) fail("a rank hung past every deadline");
  if (std::getenv("RELAY_SERVE_FAULTS_VERBOSE") != nullptr)
    for (const auto& reps : by_rank)
      for (const report& x : reps)
        std::printf("  rank %d %s%d: %s (%lld us after the fault) %s\n", x.rank,
                    x.call < 0 ? "serve " : "call ", x.call,
                    std::string(name(static_cast<errc>(x.code))).c_str(),
                    board->at_us.load() ? x.returned_us - board->at_us.load() : 0LL, x.message);

  const std::string what = s.name;
  const long long fault_us = board->at_us.load();
  // Named in time: within the timeout plus the margin (a stall is waited out; every other fault
  // is seen sooner: how soon, RELAY_SERVE_FAULTS_VERBOSE prints).
  const auto limit = s.timeout + testing::busy_margin;
  const std::string cause = "rank " + std::to_string(s.faulty);
  for (int q = 0; q < ranks; ++q) {
    const auto& reps = by_rank[static_cast<std::size_t>(q)];
    const std::string who = "rank " + std::to_string(q);
    const bool faulty = q == s.faulty;
    for (const report& x : reps) {
      if (x.call == -2) fail(who + " could not set up: " + x.message);
      if (x.code == 0 && x.wrong > 0)
        fail(who + " call " + std::to_string(x.call) + " returned ok with wrong data");
      if (x.code != 0 && x.wrong < 0)
        fail(who + " call " + std::to_string(x.call) + " failed but wrote its output");
    }
    // A stopped publisher, resumed, fails the call the others gave up on (one outcome).
    if (what == "publisher_stall" && faulty &&
        (reps.size() != at + 1 || reps.back().call != at || reps.back().code == 0))
      fail(who + ", resumed, did not fail call " + std::to_string(at) + " and stop" +
           (reps.empty() ? std::string() : std::string(": ") + reps.back().message));
    if (!s.usable && faulty) continue;  // it died, stopped or left: no promise
    if (!s.usable) {
      // The first error names the faulty rank first, with its status, within the limit of the
      // fault; serving ranks: serve() itself.
      const report* first = nullptr;
      for (const report& x : reps)
        if (x.code != 0 && x.call >= -1) {
          first = &x;
          break;
        }
      if (first == nullptr) {
        fail(who + " never failed");
        continue;
      }
      // A kill may land once the call is done on every rank: then a later call fails.
      const bool killed = what == "publisher_kill" || what == "helper_kill";
      if (q < 2 && (killed ? first->call < at : first->call != at))
        fail(who + " first failed at call " + std::to_string(first->call));
      if (first->peer != s.faulty || !names_first(first->message, s.faulty))
        fail(who + "'s error does not name " + cause + " first (peer " +
             std::to_string(first->peer) + "): " + first->message);
      if (static_cast<int>(first->code) != static_cast<int>(s.code) &&
          !(s.code == errc::timeout && first->code == static_cast<int>(errc::peer_lost)))
        fail(who + "'s error is " + std::string(name(static_cast<errc>(first->code))) + ", not " +
             std::string(name(s.code)) + ": " + first->message);
      if (fault_us == 0) {
        fail("the fault was never marked");
      } else if (std::chrono::microseconds(first->returned_us - fault_us) > limit) {
        fail(who + " failed " + std::to_string((first->returned_us - fault_us) / 1000) +
             " ms after the fault (limit " + std::to_string(limit.count()) +
             " ms): " + first->message);
      }
      continue;
    }
    // Usable: call `at` fails alike on both active ranks, every other call is right; every
    // serving rank returns ok having served every call, that one failed.
    if (q < 2) {
      if (static_cast<int>(reps.size()) != calls) {
        fail(who + " reported " + std::to_string(reps.size()) + " calls");
        continue;
      }
      for (const report& x : reps) {
        const bool expect_error = x.call == at && s.code != errc::ok;
        if (!expect_error && x.code != 0)
          fail(who + " call " + std::to_string(x.call) + " failed: " + x.message);
        if (expect_error) {
          const errc want =
              q == s.faulty || s.faulty < 0 || s.code == errc::mismatch ? s.code : errc::peer_error;
          if (x.code != static_cast<int>(want))
            fail(who + " call " + std::to_string(at) + " is " +
                 std::string(name(static_cast<errc>(x.code))) + ", not " + std::string(name(want)) +
                 ": " + x.message);
          if (s.faulty >= 0 && q != s.faulty && s.code != errc::mismatch &&
              (x.peer != s.faulty || !names_first(x.message, s.faulty)))
            fail(who + "'s error does not name " + cause + " first: " + x.message);
        }
      }
      continue;
    }
    if (reps.size() != 1 || reps[0].call != -1) {
      fail(who + " reported no serve()");
      continue;
    }
    const report& x = reps[0];
    const std::uint64_t want_failed = s.code == errc::ok ? 0 : 1;
    if (x.code != 0 || x.served != static_cast<std::uint64_t>(calls) || x.failed != want_failed)
      fail(who + " serve(): " + std::string(name(static_cast<errc>(x.code))) + " " + x.message +
           ", " + std::to_string(x.served) + " calls served, " + std::to_string(x.failed) +
           " failed");
    if (want_failed && s.faulty >= 0 && q != s.faulty && s.code != errc::mismatch &&
        x.last_peer != s.faulty)
      fail(who + "'s failed call names rank " + std::to_string(x.last_peer) + ", not " + cause);
    if (want_failed && q == s.faulty && x.last_code != static_cast<int>(s.code))
      fail(who + "'s own failure is " + std::string(name(static_cast<errc>(x.last_code))) +
           ", not " + std::string(name(s.code)));
    // Stopped while the last call was in flight: it returns once that call is done (its status
    // above: every call served, none failed), in time from the active ranks' end of it.
    if (what == "stop_in_flight") {
      long long done_us = 0;
      for (int a = 0; a < 2; ++a)
        for (const report& c : by_rank[static_cast<std::size_t>(a)])
          if (c.call == calls - 1) done_us = std::max(done_us, c.returned_us);
      if (done_us == 0 || std::chrono::microseconds(x.returned_us - done_us) > limit)
        fail(who + " returned " + std::to_string((x.returned_us - done_us) / 1000) +
             " ms after the last call ended on the active ranks");
    }
  }
  for (std::size_t q = 0; q < pids.size(); ++q) {
    const int st = exit_status[q];
    const bool expected_death =
        static_cast<int>(q) == s.faulty && (what == "publisher_exit" || what == "publisher_kill" ||
                                            what == "helper_kill" || what == "helper_exit");
    if (!expected_death && !hung && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
      fail("rank " + std::to_string(q) + " ended with status " + std::to_string(st));
  }
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string only = argc > 1 ? argv[1] : "";
  void* shared = ::mmap(nullptr, sizeof(fault_board), PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) return 2;
  board = new (shared) fault_board{};
  return run_scenarios(scenarios, only, [](const scenario& s) {
    std::vector<pid_t> pids;
    return run_scenario(s, pids);
  });
}
