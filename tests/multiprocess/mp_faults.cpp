// Randomized faults across processes: in each scenario a random rank does a random wrong thing
// at a random call, and every rank's outcome is checked against what docs/multiprocess.md
// promises. The program is its own launcher: it forks the ranks of each scenario (they find each
// other through the TCP bootstrap, as under relay-run), injects the fault and collects one record
// per call from every rank through a pipe.
//
//   relay_mp_faults [SCENARIOS] [SEED]
//   relay_mp_faults late [SCENARIOS] [SEED]     late ranks only (below)
//
// Faults: refused arguments (a count make_plan refuses), another shape (other counts), another
// collective, a bad buffer (a null output), communicator::refuse, an exit, SIGKILL mid-call, and
// SIGSTOP past the timeout (SIGCONT later); and late ranks: every rank but one enters a call
// after that one gave up on it, or one rank enters after the others gave up (N = 3, 4 and 8,
// the on-time rank a group's member or a helper, below or above the others). Checked in every
// scenario:
//   - no ok call returns wrong data (each rank checks its own output against the naive reference);
//   - every call of a surviving rank returns within the timeout plus busy_margin (2 s: the
//     timeout is waited out only where a rank stops, every other fault is seen without it), and
//     the faulty call is an error on every surviving rank (the kill and the exit: that call or
//     the next), a gone process's as peer_lost naming it whenever its exit is seen;
//   - where the communicator promises to stay usable (every fault but exit, kill and stop), the
//     faulty call is an error on every rank and every other call is right, the next one included;
//   - late ranks: one outcome for the call on every rank, the late ones included: an error
//     naming the same rank first as its cause (the first late rank), then nothing more;
//   - nothing is left in /dev/shm.
// A failure prints the scenario (its seed replays it alone: relay_mp_faults 1 SEED). The run ends
// with how soon each kind of fault was seen: a gone process from its exit (or kill, or the
// survivor's entry into its call) to each survivor's error, a stop past the timeout, the others
// the faulty call's time.
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "multiprocess/mp_support.hpp"
#include "support/dev_shm.hpp"
#include "support/steady_us.hpp"

using namespace relay;
using namespace relay::testing;
using clock_type = std::chrono::steady_clock;

namespace {

enum class fault : int {
  refused_arguments,
  other_shape,
  other_collective,
  bad_buffer,
  refuse,
  exit,
  sigkill,
  sigstop,
  late_others,  // every rank but the faulty one enters the call after it gave up
  late_one,     // the faulty rank enters the call after the others gave up
};
constexpr int fault_kinds = 10;
constexpr int random_kinds = 8;  // the random scenarios' kinds; the late ones run on their own
constexpr const char* fault_names[fault_kinds] = {
    "refused arguments", "another shape", "another collective", "a bad buffer",
    "refuse()",          "exit",          "SIGKILL mid-call",   "SIGSTOP past the timeout",
    "late others",       "late one"};
bool is_late(fault f) {
  return f == fault::late_others || f == fault::late_one;
}
bool keeps_usable(fault f) {
  return f != fault::exit && f != fault::sigkill && f != fault::sigstop && !is_late(f);
}

// RELAY_TIMEOUT where no rank waits a peer out (every fault but a stop and the late ones: a gone
// process, a refusal and a mismatch are seen without it): it bounds only a slow rank's calls, so
// it is long and costs nothing. A stop's and a late rank's is waited out once per scenario: long
// enough for the calls before it on a loaded machine. (Set-up waits longer: setup_timeout_for.)
constexpr std::chrono::milliseconds unused_timeout{10'000};
constexpr std::chrono::milliseconds waited_out_timeout{2'000};

struct scenario {
  std::uint64_t seed = 0;
  int ranks = 4;
  int calls = 4;
  int faulty = 0;
  int at = 0;  // the call at which the faulty rank misbehaves
  fault what = fault::refused_arguments;
  std::chrono::milliseconds timeout = unused_timeout;  // RELAY_TIMEOUT
  int kill_after_us = 0;                               // SIGKILL: this long into the call
  int index = -1;  // a late scenario's place in its run (it picks N, the kind and the rank)
  std::vector<property_case> cases;

  std::string describe() const {
    return std::string(fault_names[static_cast<int>(what)]) + " by rank " + std::to_string(faulty) +
           " of " + std::to_string(ranks) + " at call " + std::to_string(at) + " of " +
           std::to_string(calls) + " (seed " + std::to_string(seed) +
           (index >= 0 ? ", late index " + std::to_string(index) : std::string()) + ")";
  }
};

// Whether `message` names rank `q`: "rank 7 ..." or a list "rank(s) 2,7 ...".
bool names_rank(const std::string& message, int q) {
  const std::string n = std::to_string(q);
  for (std::size_t at = message.find("rank"); at != std::string::npos;
       at = message.find("rank", at + 4)) {
    std::size_t i = at + 4;
    if (message.compare(i, 3, "(s)") == 0) i += 3;
    if (i >= message.size() || message[i] != ' ') continue;
    ++i;
    std::size_t end = i;
    while (end < message.size() &&
           (std::isdigit(static_cast<unsigned char>(message[end])) || message[end] == ','))
      ++end;
    const std::string list = "," + message.substr(i, end - i) + ",";
    if (list.find("," + n + ",") != std::string::npos) return true;
  }
  return false;
}

// Helper rank 7 of one group {0,1} on 8 ranks killed before its second call (the case: a
// rank that waits on it directly and ranks that do not must all name it, as peer_lost).
scenario dead_helper() {
  scenario s;
  s.seed = 7;
  s.ranks = 8;
  s.calls = 3;
  s.faulty = 7;
  s.at = 1;
  s.what = fault::exit;
  for (int i = 0; i < s.calls; ++i) {
    property_case c;
    c.ranks = 8;
    c.active = 2;
    c.mode = mode::single;
    c.type = dtype::int32;
    c.groups = {{0, 1}};
    c.counts = {4096};
    c.seed = 100 + static_cast<std::uint64_t>(i);
    s.cases.push_back(c);
  }
  return s;
}

// The same helper SIGKILLed as it enters its second call.
scenario killed_helper() {
  scenario s = dead_helper();
  s.seed = 8;
  s.what = fault::sigkill;
  s.kill_after_us = 0;
  return s;
}

scenario draw(std::uint64_t seed) {
  scenario s;
  s.seed = seed;
  std::mt19937_64 rng(seed);
  auto below = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  s.ranks = below(3) == 0 ? 8 : 4;
  s.calls = 3 + below(2);
  s.faulty = below(s.ranks);
  s.at = below(s.calls - 1);  // a call follows the faulty one
  // Each kind as often, but a stop (it costs the timeout) one time in three of its share.
  s.what = static_cast<fault>(below(random_kinds));
  if (s.what == fault::sigstop && below(3) != 0)
    s.what = static_cast<fault>(below(random_kinds - 1));
  if (s.what == fault::sigstop) s.timeout = waited_out_timeout;
  s.kill_after_us = below(3000);
  std::mt19937_64 cases(rng());
  while (static_cast<int>(s.cases.size()) < s.calls) {
    property_case c = random_case(cases);
    if (c.ranks != s.ranks || c.active >= c.ranks) continue;
    for (auto& n : c.counts)
      n = std::min<std::int64_t>(n, 3000);
    s.cases.push_back(std::move(c));
  }
  if (s.what == fault::bad_buffer) {  // a rank with an output to pass badly, else refuse()
    const property_case& c = s.cases[static_cast<std::size_t>(s.at)];
    std::vector<int> holders;
    for (std::size_t g = 0; g < c.groups.size(); ++g)
      if (output_elements(c.coll, c.active, c.counts[g]) > 0)
        holders.insert(holders.end(), c.groups[g].begin(), c.groups[g].end());
    if (holders.empty())
      s.what = fault::refuse;
    else
      s.faulty = holders[static_cast<std::size_t>(below(static_cast<int>(holders.size())))];
  }
  return s;
}

// Late ranks, the i-th of a run: N = 3, 4 and 8 in turn, each kind in turn, the faulty (on-time
// or late) rank every rank in turn, so that it is a group's member or a helper, below or above
// the others. One group of two random ranks, single mode on the relay route, a random
// collective of 101 or 65521 elements (at 101 most ranks have nothing to move: the call is over
// as soon as it is agreed).
scenario draw_late(std::uint64_t seed, int i) {
  scenario s;
  s.seed = seed;
  s.index = i;
  std::mt19937_64 rng(seed);
  auto below = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  constexpr int sizes[] = {3, 4, 8};
  s.ranks = sizes[i % 3];
  s.what = (i / 3) % 2 == 0 ? fault::late_others : fault::late_one;
  s.faulty = (i / 6) % s.ranks;
  s.calls = 3;
  s.at = 1 + below(2);
  // Waited out once per scenario (waited_out_timeout), more where the processes run slower
  // (RELAY_TEST_LATE_TIMEOUT_MS: the sanitizer builds). Set-up and the harness's waits do not
  // depend on it.
  const char* slow = std::getenv("RELAY_TEST_LATE_TIMEOUT_MS");
  s.timeout = slow != nullptr ? std::chrono::milliseconds(std::atoi(slow)) : waited_out_timeout;
  const int a = below(s.ranks);
  const int b = (a + 1 + below(s.ranks - 1)) % s.ranks;
  for (int k = 0; k < s.calls; ++k) {
    property_case c;
    c.ranks = s.ranks;
    c.active = 2;
    c.mode = mode::single;
    c.coll = all_collectives[static_cast<std::size_t>(below(4))];
    c.in_place = has_in_place(c.coll) && below(2) == 0;
    c.type = dtype::int32;
    c.groups = {{a, b}};
    c.counts = {below(2) == 0 ? 101 : 65521};
    c.seed = rng();
    s.cases.push_back(c);
  }
  return s;
}

// What a rank reports of one call (one write() each: below PIPE_BUF, so records never mix).
struct report {
  int rank = 0, call = 0;
  int code = 0;  // errc
  int wrong = 0;
  int peer = -1;  // status::peer()
  long long micros = 0;
  long long returned_us = 0;  // when the call returned (the steady clock, the same in every rank)
  char message[200] = {};
};

// One rank of scenario `s`: its calls, in order, a record for each; after an error that leaves
// the communicator unusable it stops.
// Late scenarios: which ranks have returned from the faulty call, shared by the ranks (mapped
// before they fork), so that a late rank enters only once the ranks on time have given up (a
// margin of time alone does not hold on a loaded machine).
struct returned_board {
  std::uint32_t returned[64];
  long long fault_us;  // when the faulty rank exited, was killed or stopped (steady_us)
  void mark(int rank) {
    std::atomic_ref<std::uint32_t>(returned[rank]).store(1, std::memory_order_release);
  }
  bool has_returned(int rank) {
    return std::atomic_ref<std::uint32_t>(returned[rank]).load(std::memory_order_acquire) != 0;
  }
  void mark_fault() { std::atomic_ref<long long>(fault_us).store(steady_us()); }
  // Waits (up to `cap`) until every rank but the late ones has returned from the call.
  void wait_for_on_time(const scenario& s, std::chrono::milliseconds cap) {
    const auto until = clock_type::now() + cap;
    for (int q = 0; q < s.ranks; ++q) {
      const bool late = s.what == fault::late_one ? q == s.faulty : q != s.faulty;
      while (!late && clock_type::now() < until && !has_returned(q))
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
};

[[noreturn]] void run_rank(const scenario& s, int rank, int port, int out, returned_board* board) {
  ::setenv("RELAY_RANK", std::to_string(rank).c_str(), 1);
  ::setenv("RELAY_WORLD_SIZE", std::to_string(s.ranks).c_str(), 1);
  ::setenv("RELAY_STORE_ADDR", "127.0.0.1", 1);
  ::setenv("RELAY_STORE_PORT", std::to_string(port).c_str(), 1);
  ::setenv("RELAY_TIMEOUT", std::to_string(s.timeout.count() / 1000.0).c_str(), 1);
  std::unique_ptr<communicator> comm;
  if (status st = communicator_from_environment(shm_factory(), comm); !st) {
    report r;
    r.rank = rank;
    r.call = -1;
    r.code = static_cast<int>(st.code());
    st.to_string().copy(r.message, sizeof r.message - 1);
    (void)!::write(out, &r, sizeof r);
    std::_Exit(2);
  }
  const bool me_faulty = rank == s.faulty;
  for (int i = 0; i < s.calls; ++i) {
    property_case c = s.cases[static_cast<std::size_t>(i)];
    const bool misbehave = me_faulty && i == s.at;
    // A rank that dies or stops may do so only once every rank has finished the call before: a
    // process that exits without closing its communicator fails every call still running, whoever
    // it waits for, so a slow survivor still in call s.at-1 would rightly fail it (seen 2 in 30
    // runs of two suites side by side). The barrier keeps the promise under test strict: the
    // first failure is at call s.at on every rank.
    if (i == s.at && i > 0 &&
        (s.what == fault::exit || s.what == fault::sigkill || s.what == fault::sigstop ||
         is_late(s.what))) {
      if (status b = comm->boot().barrier(harness_wait); !b) {
        report r;
        r.rank = rank;
        r.call = i;
        r.code = static_cast<int>(b.code());
        ("the barrier before the fault failed: " + b.to_string())
            .copy(r.message, sizeof r.message - 1);
        (void)!::write(out, &r, sizeof r);
        std::_Exit(2);
      }
    }
    // Late past the timeout: the ranks on time give up on the call before the late ones enter.
    if (i == s.at &&
        (s.what == fault::late_one ? me_faulty : s.what == fault::late_others && !me_faulty))
      board->wait_for_on_time(s, harness_wait);
    if (misbehave && s.what == fault::exit) {
      board->mark_fault();
      std::_Exit(3);
    }
    if (misbehave && s.what == fault::sigstop) {
      board->mark_fault();
      ::raise(SIGSTOP);  // the launcher resumes it
    }
    if (misbehave && s.what == fault::sigkill)
      std::thread([us = s.kill_after_us, board] {
        std::this_thread::sleep_for(std::chrono::microseconds(us));
        board->mark_fault();
        ::kill(::getpid(), SIGKILL);
      }).detach();
    if (misbehave && s.what == fault::other_shape) c.counts[0] += 1;
    if (misbehave && s.what == fault::other_collective)
      c.coll = c.coll == collective::all_gather ? collective::all_to_all : collective::all_gather,
      c.in_place = false;
    const auto inputs = all_inputs(c);
    rank_frame frame(c, rank, inputs[static_cast<std::size_t>(rank)]);
    const std::vector<std::byte> before = frame.bytes;
    const auto start = clock_type::now();
    status st;
    if (misbehave && s.what == fault::refuse) {
      st = comm->refuse({errc::invalid_argument, "this rank's tensor is the wrong dtype"});
    } else if (misbehave && s.what == fault::refused_arguments) {
      property_case bad = c;
      bad.counts[0] = -1;
      st = call(*comm, bad, frame);
    } else if (misbehave && s.what == fault::bad_buffer) {
      st = call(*comm, c, frame.send(), buffer_view{nullptr, frame.recv().bytes});
    } else {
      st = call(*comm, c, frame);
    }
    report r;
    r.rank = rank;
    r.call = i;
    r.code = static_cast<int>(st.code());
    r.peer = st.peer();
    r.micros =
        std::chrono::duration_cast<std::chrono::microseconds>(clock_type::now() - start).count();
    r.returned_us = steady_us();
    st.message().copy(r.message, sizeof r.message - 1);
    const bool checked = st.ok() && !misbehave;
    if (checked) {
      std::vector<std::vector<std::byte>> outputs(inputs.size());
      outputs[static_cast<std::size_t>(rank)] = frame.output();
      const reference::call_data data{c.coll, c.type, c.op, c.groups, c.counts, inputs, outputs};
      r.wrong = static_cast<int>(reference::check_outputs(data, c.precision, false, rank).wrong);
      if (!frame.canaries_intact()) ++r.wrong;
    }
    if (!st.ok() && frame.bytes != before) r.wrong = -1;  // written on an error
    if (i == s.at) board->mark(rank);
    (void)!::write(out, &r, sizeof r);
    if (misbehave && s.what == fault::sigkill)
      for (;;)  // the kill lands before this rank's next call
        ::pause();
    if (!st.ok() && comm->async_status().code() != errc::ok) break;  // broken: nothing more
  }
  std::fflush(nullptr);
  comm.reset();
  std::_Exit(0);
}

// How soon each kind of fault was seen, in microseconds, one entry per rank that saw it: a gone
// process from its exit or kill (or from the survivor's entry into the call that failed, where
// that came later) to the survivor's first error; a stop, the faulty call's time past the
// timeout; every other kind, the faulty call's time.
using seen_after = std::array<std::vector<long long>, fault_kinds>;

// Runs scenario `s`; returns the failures found (empty: as promised). `pids` gets its ranks';
// `seen` how soon the fault was seen.
std::vector<std::string> run_scenario(const scenario& s, std::vector<pid_t>& pids,
                                      seen_after& seen) {
  std::vector<std::string> failures;
  auto fail = [&](const std::string& what) { failures.push_back(s.describe() + ": " + what); };
  int pipe_fd[2];
  if (::pipe(pipe_fd) != 0) return {"pipe: " + std::string(std::strerror(errno))};
  int port = 0;
  if (status p = free_loopback_port(port); !p) return {"no free port: " + p.to_string()};
  void* shared = ::mmap(nullptr, sizeof(returned_board), PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) return {"mmap: " + std::string(std::strerror(errno))};
  auto* board = new (shared) returned_board{};
  pids.clear();
  for (int r = 0; r < s.ranks; ++r) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(pipe_fd[0]);
      run_rank(s, r, port, pipe_fd[1], board);
    }
    pids.push_back(pid);
  }
  ::close(pipe_fd[1]);
  // Reap the ranks; resume a stopped one once every other rank has given up on its call (a time
  // alone does not hold on a loaded machine: resumed too soon, it would join the call); kill
  // all past the deadline.
  const auto deadline = clock_type::now() + s.timeout * (2 * s.calls + 4) + harness_wait;
  std::vector<int> exit_status(pids.size(), -1);
  std::size_t alive = pids.size();
  clock_type::time_point stopped_at{};
  auto others_returned = [&] {
    for (int q = 0; q < s.ranks; ++q)
      if (q != s.faulty && !board->has_returned(q)) return false;
    return true;
  };
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
        (others_returned() || clock_type::now() > stopped_at + harness_wait)) {
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
  std::vector<std::vector<report>> by_rank(pids.size());
  report r;
  while (::read(pipe_fd[0], &r, sizeof r) == static_cast<ssize_t>(sizeof r))
    if (r.rank >= 0 && r.rank < s.ranks) by_rank[static_cast<std::size_t>(r.rank)].push_back(r);
  ::close(pipe_fd[0]);
  const long long fault_us = std::atomic_ref<long long>(board->fault_us).load();
  ::munmap(shared, sizeof(returned_board));
  if (hung) fail("a rank hung past every deadline");

  // Every call ends within the timeout and the margin of a busy machine; only a stop is waited
  // out, every other fault is seen sooner (how soon: `seen`).
  const auto limit = s.timeout + busy_margin;
  auto& seen_here = seen[static_cast<std::size_t>(s.what)];
  for (int q = 0; q < s.ranks && !is_late(s.what); ++q)
    for (const report& c : by_rank[static_cast<std::size_t>(q)]) {
      const bool gone = s.what == fault::exit || s.what == fault::sigkill;
      if (gone && q != s.faulty && c.code != 0 && fault_us != 0) {
        seen_here.push_back(c.returned_us - std::max(fault_us, c.returned_us - c.micros));
        break;
      }
      if (!gone && c.call == s.at && (q != s.faulty || s.what != fault::sigstop))
        seen_here.push_back(c.micros - (s.what == fault::sigstop ? s.timeout.count() * 1000 : 0));
    }
  for (int q = 0; q < s.ranks; ++q) {
    const auto& calls = by_rank[static_cast<std::size_t>(q)];
    const std::string who = "rank " + std::to_string(q);
    const bool faulty = q == s.faulty;
    for (const report& c : calls) {
      const std::string at = who + " call " + std::to_string(c.call);
      if (c.call < 0) {
        fail(who + " could not set up: " + c.message);
        continue;
      }
      if (c.code == 0 && c.wrong > 0)
        fail(at + " returned ok with " + std::to_string(c.wrong) + " wrong elements");
      if (c.code != 0 && c.wrong < 0) fail(at + " failed (" + c.message + ") but wrote its output");
      if (!(faulty && s.what == fault::sigstop) && std::chrono::microseconds(c.micros) > limit)
        fail(at + " took " + std::to_string(c.micros / 1000) + " ms: " + c.message);
    }
    if (is_late(s.what)) {
      // One outcome: call s.at fails on every rank, late or not, and nothing runs after it.
      if (static_cast<int>(calls.size()) != s.at + 1 || calls.back().code == 0) {
        fail(who + " reported " + std::to_string(calls.size()) + " calls, the last " +
             (calls.empty() ? std::string("none") : std::string(calls.back().message)) +
             " (one outcome: call " + std::to_string(s.at) + " fails everywhere, then nothing)");
        continue;
      }
      for (const report& c : calls)
        if (c.call < s.at && c.code != 0)
          fail(who + " call " + std::to_string(c.call) + " failed: " + c.message);
      continue;
    }
    // A stopped rank resumes after the others gave up on its call: it fails that call too.
    if (faulty && s.what == fault::sigstop)
      for (const report& c : calls)
        if (c.call == s.at && c.code == 0)
          fail(who + " returned ok from the call the others gave up on while it was stopped");
    if (faulty && !keeps_usable(s.what)) continue;  // it left, or was stopped: no promise
    if (keeps_usable(s.what)) {
      if (static_cast<int>(calls.size()) != s.calls) {
        fail(who + " reported " + std::to_string(calls.size()) + " of " + std::to_string(s.calls) +
             " calls" +
             (calls.empty() ? std::string() : std::string(": last ") + calls.back().message));
        continue;
      }
      for (const report& c : calls) {
        if (c.call == s.at && c.code == 0)
          fail(who + " returned ok from the call where rank " + std::to_string(s.faulty) +
               " misbehaved");
        if (c.call == s.at && c.code != 0 && !faulty && !names_rank(c.message, s.faulty))
          fail(who + "'s error does not name rank " + std::to_string(s.faulty) + ": " + c.message);
        if (c.call != s.at && c.code != 0)
          fail(who + " call " + std::to_string(c.call) + " failed: " + c.message);
      }
      continue;
    }
    // A rank gone or stopped: every survivor fails the faulty call (or, killed mid-call, at
    // latest the next one) and makes no ok call after it.
    int first_error = -1;
    for (const report& c : calls)
      if (c.code != 0) {
        first_error = c.call;
        break;
      }
    const int latest = s.what == fault::sigkill ? s.at + 1 : s.at;
    if (first_error < 0)
      fail(who + " never returned an error (" + std::to_string(calls.size()) + " calls ok)");
    else if (first_error < s.at || first_error > latest)
      fail(who + " first failed at call " + std::to_string(first_error));
    else if (!names_rank(calls[static_cast<std::size_t>(first_error)].message, s.faulty))
      fail(who + "'s error does not name rank " + std::to_string(s.faulty) + ": " +
           calls[static_cast<std::size_t>(first_error)].message);
    // A process gone: its own status, its rank and pid first, and the status's peer.
    if (first_error >= 0 && (s.what == fault::exit || s.what == fault::sigkill)) {
      const report& c = calls[static_cast<std::size_t>(first_error)];
      const std::string cause = "rank " + std::to_string(s.faulty) + " (pid ";
      if (c.code != static_cast<int>(errc::peer_lost) || c.peer != s.faulty ||
          std::string(c.message).rfind(cause, 0) != 0)
        fail(who + " did not report rank " + std::to_string(s.faulty) +
             " lost, its pid first (status " + std::to_string(c.code) + ", peer " +
             std::to_string(c.peer) + "): " + c.message);
    }
  }
  if (is_late(s.what)) {
    // Every rank names one cause first: the late rank (late one), or the first late rank the
    // rank on time waited for (late others).
    std::set<int> causes;
    for (const auto& calls : by_rank)
      if (!calls.empty() && calls.back().code != 0) {
        const report& c = calls.back();
        causes.insert(c.peer);
        if (std::string(c.message).rfind("rank " + std::to_string(c.peer) + " ", 0) != 0)
          fail("rank " + std::to_string(c.rank) + "'s error does not start with its cause, rank " +
               std::to_string(c.peer) + ": " + c.message);
      }
    const int cause = causes.size() == 1 ? *causes.begin() : -1;
    if (causes.size() != 1 || cause < 0 ||
        (s.what == fault::late_one ? cause != s.faulty : cause == s.faulty))
      fail("the ranks name " + std::to_string(causes.size()) + " cause(s), the first " +
           std::to_string(causes.empty() ? -1 : *causes.begin()) + ", as the root of the failure");
  }
  for (std::size_t q = 0; q < pids.size(); ++q) {
    const int st = exit_status[q];
    const bool expected_death =
        static_cast<int>(q) == s.faulty && (s.what == fault::exit || s.what == fault::sigkill);
    if (!expected_death && !hung && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
      fail("rank " + std::to_string(q) + " ended with status " + std::to_string(st));
  }
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  const bool late = argc > 1 && std::string(argv[1]) == "late";
  if (late) --argc, ++argv;
  const int scenarios = argc > 1 ? std::atoi(argv[1]) : 200;
  const std::uint64_t seed = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 20261201;
  const std::set<std::string> before = relay_names_in_dev_shm();
  std::array<int, fault_kinds> tried{};
  seen_after seen;
  int failed = 0;
  const auto start = clock_type::now();
  for (int i = late ? 0 : -2; i < scenarios; ++i) {
    // First the dead helper, exited and killed, then the random ones (or the late ones, each of
    // which replays alone from its seed and index: relay_mp_faults late 1 SEED INDEX).
    const auto drawn = scenarios == 1 ? seed : seed + static_cast<std::uint64_t>(i);
    const int index = scenarios == 1 && argc > 3 ? std::atoi(argv[3]) : i;
    const scenario s = late     ? draw_late(drawn, index)
                       : i < -1 ? dead_helper()
                       : i < 0  ? killed_helper()
                                : draw(drawn);
    ++tried[static_cast<std::size_t>(s.what)];
    std::vector<pid_t> pids;
    for (const std::string& f : run_scenario(s, pids, seen)) {
      std::fprintf(stderr, "FAILED: %s\n", f.c_str());
      ++failed;
    }
    // Names made by this scenario's ranks (other jobs on the machine may come and go meanwhile).
    auto ours = [&](const std::string& n) {
      for (pid_t p : pids) {
        std::string tag(1, '-');  // appended in parts: GCC 12 -O3 warns (-Wrestrict) otherwise
        tag += std::to_string(p);
        tag += '-';
        if (n.find(tag) != std::string::npos) return true;
      }
      return false;
    };
    for (const std::string& n : relay_names_in_dev_shm())
      if (!before.count(n) && ours(n)) {
        std::fprintf(stderr, "FAILED: %s: /dev/shm/%s was left behind\n", s.describe().c_str(),
                     n.c_str());
        ++failed;
      }
  }
  std::printf("%d scenarios (seed %llu, %.1f s):", scenarios, static_cast<unsigned long long>(seed),
              std::chrono::duration<double>(clock_type::now() - start).count());
  for (int k = 0; k < fault_kinds; ++k)
    std::printf(" %s %d;", fault_names[k], tried[static_cast<std::size_t>(k)]);
  std::printf(" %s\n", failed == 0 ? "every promise held" : "FAILURES above");
  for (int k = 0; k < fault_kinds; ++k) {
    auto& us = seen[static_cast<std::size_t>(k)];
    if (us.empty()) continue;
    std::sort(us.begin(), us.end());
    const char* what = k == static_cast<int>(fault::exit) || k == static_cast<int>(fault::sigkill)
                           ? "seen after it went (or the call began)"
                       : k == static_cast<int>(fault::sigstop) ? "the call's time past the timeout"
                                                               : "the faulty call's time";
    std::printf("  %-26s %s: median %.1f ms, max %.1f ms (%zu ranks)\n", fault_names[k], what,
                static_cast<double>(us[us.size() / 2]) / 1000,
                static_cast<double>(us.back()) / 1000, us.size());
  }
  return failed == 0 ? 0 : 1;
}
