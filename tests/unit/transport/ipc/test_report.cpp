// The ipc transport's reports (transport/ipc/report.hpp), without a device: the verdict the entry
// kernel records of a call it skips (note_verdict, the very function the kernel runs) read back
// as the host transports' status (verdict_status of transport/agreement.hpp, the reference) and
// as messages worked out by hand; and the failures an alarm carries, found here or passed on by a
// peer.
#include "relay/transport/ipc/report.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using namespace relay;
using namespace relay::ipc;

namespace {

entry_record rec(std::uint64_t fingerprint, errc code = errc::ok,
                 placement where = placement::out_of_place) {
  entry_record r;
  r.sequence = 5;
  r.fingerprint = fingerprint;
  r.code = static_cast<std::uint8_t>(code);
  r.placement = static_cast<std::uint8_t>(where);
  return r;
}

// What the entry kernel of rank `me` records of call #5 of these records, which it skips (call 0:
// none, where the verdict is go), with `text` the refusing rank's reason text in its control
// block.
failed_call judged_call(const std::vector<entry_record>& all, int me,
                        const std::string& text = "") {
  failed_call f;
  const verdict v = judge(all.data(), static_cast<int>(all.size()), me);
  if (v.kind == verdict_kind::go) return f;
  f.call = 5;
  note_verdict(f.verdict, v, all.data(), static_cast<int>(all.size()));
  if (v.kind == verdict_kind::refused_by_peer) put_text(f.text, text);
  return f;
}

report_context context_of(int me, int ranks) {
  report_context c;
  c.me = me;
  c.ranks = ranks;
  c.timeout_ms = 2000;
  return c;
}

}  // namespace

TEST_CASE("the entry's verdict reads as the host transports' status", "[transport][ipc]") {
  const status own{errc::invalid_count, "invalid count -1 for group 0"};
  struct scene {
    const char* what;
    std::vector<entry_record> all;
    int me;
    status own;
    errc code;
    const char* message;  // worked out by hand
  };
  const std::vector<scene> scenes = {
      {"rank 2 on another shape",
       {rec(11), rec(11), rec(12), rec(11)},
       0,
       {},
       errc::mismatch,
       "rank(s) 2 called call #5 with arguments that differ from rank 0's"},
      {"ranks 1 and 3 on another shape, seen by rank 1",
       {rec(11), rec(12), rec(11), rec(12)},
       1,
       {},
       errc::mismatch,
       "rank(s) 1,3 called call #5 with arguments that differ from rank 0's"},
      {"a refusal before any arguments (fingerprint 0) is not compared",
       {rec(0, errc::invalid_group), rec(11), rec(11)},
       1,
       {},
       errc::peer_error,
       "rank 0 refused call #5: invalid group: groups overlap"},
      {"rank 2 refused its arguments, seen by a peer",
       {rec(11), rec(11), rec(11, errc::invalid_count), rec(11)},
       3,
       {},
       errc::peer_error,
       "rank 2 refused call #5: invalid count: groups overlap"},
      {"rank 2 refused its arguments, seen by itself",
       {rec(11), rec(11), rec(11, errc::invalid_count), rec(11)},
       2,
       own,
       errc::invalid_count,
       "invalid count -1 for group 0"},
      {"in place on rank 0, out of place on rank 1",
       {rec(11, errc::ok, placement::in_place), rec(11), rec(11, errc::ok, placement::helper)},
       2,
       {},
       errc::mismatch,
       "rank 0 called call #5 in place but rank 1 out of place; every active rank must agree"},
  };
  for (const scene& s : scenes) {
    INFO(s.what);
    const int R = static_cast<int>(s.all.size());
    const std::string text = "groups overlap";
    const failed_call f = judged_call(s.all, s.me, text);
    REQUIRE(f.call == 5);
    const status got = failed_call_status(f, s.own);
    CHECK(got.code() == s.code);
    CHECK(got.message() == s.message);
    // The same words as the host transports' (the reference: the rule's own status).
    const status want = verdict_status(judge(s.all.data(), R, s.me), s.all.data(), R, s.own, 5,
                                       [&](int) { return text; });
    CHECK(got.code() == want.code());
    CHECK(got.message() == want.message());
  }
  // Every rank alike: nothing recorded, and no report at all.
  CHECK(judged_call({rec(11), rec(11, errc::ok, placement::helper), rec(11)}, 1).call == 0);
  CHECK(report_status(report{}, context_of(0, 2)).ok());
}

TEST_CASE("a failure names the rank that failed first, on every rank", "[transport][ipc]") {
  const std::vector<std::uint64_t> pids = {100, 101, 102, 103, 104, 105, 106, 4242};
  report_context c = context_of(0, 8);
  c.pids = pids;
  alarm_record a;
  a.code = report_timed_out;
  a.by = 0;
  a.peer = 3;
  a.call = 2;
  report r;
  r.code = report_timed_out;
  r.call = 2;
  r.first = a;
  // Found here: the peer's entry, then a step.
  status s = report_status(r, c);
  CHECK(s.code() == errc::timeout);
  CHECK(s.message() == "rank 3 did not enter call #2 within 2000 ms");
  r.first.phase = 0;
  r.first.step = 1;
  r.first.kind = wait_transfer;
  CHECK(report_status(r, c).message() ==
        "rank 3 did not finish step 1 (transfer, phase 0) of call #2 within 2000 ms");
  r.first.phase = 3;
  r.first.kind = wait_arrival;
  CHECK(report_status(r, c).message() ==
        "rank 3 did not finish step 1 (fp8 arrivals, phase 3) of call #2 within 2000 ms");
  // The pull form's last wait: a peer reading this rank's input in place.
  r.first.phase = 0;
  r.first.kind = wait_read;
  CHECK(report_status(r, c).message() ==
        "rank 3 did not finish reading this rank's input in call #2 within 2000 ms");
  // This rank's own blocks that never met (one never resident): the rank names itself.
  r.first.peer = 0;
  r.first.kind = wait_barrier;
  CHECK(report_status(r, c).message() ==
        "rank 0 did not bring every block of its kernel to a grid barrier in call #2 within "
        "2000 ms");
  r.first.peer = 3;
  // Passed on: rank 6 saw rank 1's abort mark; rank 1 had timed out on rank 3.
  report passed;
  passed.code = report_peer_gave_up;
  passed.via = 1;
  passed.call = 2;
  passed.first = a;
  passed.first.by = 1;
  passed.first.phase = 0;
  passed.first.step = 1;
  passed.first.kind = wait_reduce;
  c.me = 6;
  s = report_status(passed, c);  // the cause first, its status and rank, then who found it
  CHECK(s.code() == errc::timeout);
  CHECK(s.peer() == 3);
  CHECK(s.message() ==
        "rank 3 did not finish step 1 (reduce, phase 0) of call #2 within 2000 ms (seen by rank 1; "
        "every rank stopped)");
  // A dead process, named with its pid, whoever found it.
  report dead;
  dead.code = report_peer_exited;
  dead.first.code = report_peer_exited;
  dead.first.by = 6;
  dead.first.peer = 7;
  dead.first.call = 4;
  s = report_status(dead, c);
  CHECK(s.code() == errc::peer_lost);
  CHECK(s.peer() == 7);
  CHECK(s.message() == "rank 7 (pid 4242) exited during call #4");
  dead.code = report_peer_gave_up;
  dead.first.by = 2;
  c.me = 0;
  s = report_status(dead, c);
  CHECK(s.code() == errc::peer_lost);
  CHECK(s.peer() == 7);
  CHECK(s.message() ==
        "rank 7 (pid 4242) exited during call #4 (seen by rank 2; every rank stopped)");
  // abort() on rank 5: its peers name it with its reason; rank 5 itself returns its own status.
  report left;
  left.code = report_peer_gave_up;
  left.via = 5;
  left.first.code = report_aborted;
  left.first.by = left.first.peer = 5;
  left.first.call = 9;
  put_text(left.text, "the job is over");
  s = report_status(left, c);
  CHECK(s.code() == errc::peer_error);
  CHECK(s.message() == "rank 5 left the job (abort) at call #9: the job is over");
  report mine = left;
  mine.code = report_aborted;
  c.me = 5;
  c.aborted = {errc::system_error, "SIGTERM"};
  CHECK(report_status(mine, c).to_string() == c.aborted.to_string());
  // An abort mark whose alarm had not landed: the rank alone.
  report bare;
  bare.code = report_peer_gave_up;
  bare.via = 4;
  bare.call = 9;
  c.me = 0;
  s = report_status(bare, c);
  CHECK(s.code() == errc::peer_error);
  CHECK(s.peer() == 4);
  CHECK(s.message() == "rank 4 gave up on call #9");
}

TEST_CASE("reason texts are cut to their slot", "[transport][ipc]") {
  char slot[text_bytes];
  put_text(slot, std::string(200, 'x'));
  CHECK(text_of(slot) == std::string(text_bytes - 1, 'x'));
  put_text(slot, "short");
  CHECK(text_of(slot) == "short");
}
