// What the ipc transport's kernels tell the host, and what a rank that gave up tells its peers
// (transport/ipc/transport.hpp, transport/ipc/kernels.hpp): plain structs in memory both sides
// read, the entry's verdict as the kernel records it (judge() of transport/agreement.hpp over every
// rank's entry record), and the host's reading of a report as a status. Host-only but for the
// RELAY_HOST_DEVICE functions, so that the rules are unit-tested without a device.
//
// A failure travels as an alarm: the rank that finds it (a wait past the timeout, a peer process
// gone, abort() on its host) writes what it found into every peer's control block, then raises
// its abort mark there; a peer that sees the mark, whatever it waits for, gives up and passes the
// same alarm on, so every rank's error names the rank that failed first. A verdict that is not
// `go` is no failure of the transport: every rank judges the same records, skips the call alone
// (no data moves) and goes on; the entry kernel records the call in the host block's ring of
// failed calls (failed_call), which the host reads when it asks (transport::take_failed_call).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "relay/core/config.hpp"
#include "relay/core/status.hpp"
#include "relay/schedule/schedule.hpp"
#include "relay/transport/agreement.hpp"
#include "relay/transport/processes.hpp"

namespace relay::ipc {

// Bytes of a rank's reason text (a refusal's or an abort's) that reach its peers.
inline constexpr int text_bytes = 96;

// Why a rank gave up (report::code) or what an alarm says (alarm::code).
enum report_code : std::uint32_t {
  report_ok = 0,
  report_timed_out = 1,     // a wait outlasted the timeout
  report_peer_gave_up = 2,  // a peer's abort mark; report::first is its alarm
  report_peer_exited = 4,   // this rank's host found a peer process gone
  report_aborted = 5,       // abort() on the host of alarm::by
};

// What a wait names: a peer's entry into the call, or a phase of either kind, or a phase's fp8
// arrivals. wait_read: the pull form's last wait, for a peer that reads this rank's input in
// place. wait_barrier: this rank's own blocks meeting (the one-shot kernel's grid barrier, the
// pull kernel's count of its blocks).
enum wait_kind : std::uint32_t {
  wait_transfer = 0,
  wait_reduce = 1,
  wait_arrival = 2,
  wait_read = 3,
  wait_barrier = 4
};

// The first failure of a chain, as the rank that found it (`by`) saw it.
struct alarm_record {
  std::uint32_t code = report_ok;  // report_timed_out, report_peer_exited or report_aborted
  std::uint32_t by = 0;            // the rank that found it
  std::uint32_t peer = 0;          // the rank it names (waited for; exited; `by` when aborted)
  std::int32_t phase = -1;         // what `by` waited for: -1 the peer's entry, else a plan phase
  std::uint32_t step = 0;
  std::uint32_t kind = wait_transfer;
  std::uint64_t call = 0;  // `by`'s call then
};
static_assert(sizeof(alarm_record) == 32);

// The verdict of a call whose agreement did not let it go, and the records it was judged from.
struct judged {
  std::uint32_t kind = 0;  // relay::verdict_kind
  std::int32_t rank = -1, other = -1;
  std::uint32_t ranks = 0;
  entry_record records[max_ranks];
};

// The first reason this rank gave up, written once by the device thread that did (host memory
// mapped into the device); `code` last, after a system fence, so a reader that sees it non-zero
// sees the rest.
struct report {
  std::uint32_t code = report_ok;
  std::uint32_t via = 0;       // report_peer_gave_up: the rank whose abort mark this rank saw
  std::uint64_t call = 0;      // this rank's call when it gave up
  alarm_record first;          // the failure (first.by is this rank when it found it itself)
  char text[text_bytes] = {};  // the reason text of the rank the failure names, if it gave one
};

// A call whose agreement was not `go` (every rank skipped it): its verdict and the records it was
// judged from, and the reason text of the peer that refused it, where one did.
struct failed_call {
  std::uint64_t call = 0;
  judged verdict;
  char text[text_bytes] = {};
};
// The host block's ring of them: the device writes call n's record at [n % slots], then counts
// it; the host reads those it has not read, and says how many it missed when it fell behind.
inline constexpr int failed_call_slots = 8;

// The host block: host memory mapped into the device, one per rank. The kernels write `rep` and
// poll `raised` (this rank's host tells its kernels to stop: a dead peer, abort()); the host
// writes `own_text` before a launch that refuses the call, and the rest are the sources of the
// copies abort() makes into the peers' control blocks.
// The pull form's trace points (transport/ipc/pull.hpp): start, announced, input ready and
// told, judged, inputs ready, summed, done told, readers done, end.
inline constexpr int trace_points = 9, trace_calls = 64;

struct host_block {
  report rep;
  failed_call failed[failed_call_slots];
  std::uint64_t failed_written = 0;  // failed calls recorded so far (after a system fence)
  alarm_record raised;
  char own_text[text_bytes] = {};
  alarm_record leaving;  // abort(): this rank's alarm for its peers
  char leaving_text[text_bytes] = {};
  std::uint64_t dead = 0;  // abort(): the mark that ends every wait on this rank
  // Device-side traces (built with RELAY_IPC_TRACE=1 only; zeros otherwise): the pull and the ll
  // form's per call (call % trace_calls), block 0's wall clock at each of its trace_points; the
  // step kernel's per stage launch (ipc/stage_trace.hpp: stage_trace_row, stage_point).
  std::uint64_t trace[trace_calls][trace_points] = {};
};

// What `s` says, cut to the bytes a text slot holds (always 0-terminated).
inline void put_text(char (&slot)[text_bytes], std::string_view s) {
  std::memset(slot, 0, sizeof slot);
  std::memcpy(slot, s.data(), std::min<std::size_t>(s.size(), text_bytes - 1));
}
inline std::string text_of(const char (&slot)[text_bytes]) {
  return std::string(slot, strnlen(slot, text_bytes));
}

// A verdict that is not `go` and the records it was judged from, into the report (what the entry
// kernel writes when judge() says no; every field through the volatile view, word by word).
RELAY_HOST_DEVICE inline void note_verdict(volatile judged& j, const verdict& v,
                                           const entry_record* all, int ranks) {
  j.kind = static_cast<std::uint32_t>(v.kind);
  j.rank = v.rank;
  j.other = v.other;
  j.ranks = static_cast<std::uint32_t>(ranks);
  static_assert(sizeof(entry_record) % 8 == 0);
  for (int q = 0; q < ranks && q < max_ranks; ++q) {
    auto* d = reinterpret_cast<volatile std::uint64_t*>(&j.records[q]);
    const auto* s = reinterpret_cast<const std::uint64_t*>(&all[q]);
    for (std::size_t w = 0; w < sizeof(entry_record) / 8; ++w)
      d[w] = s[w];
  }
}

// What a wait was for: "enter call #3", "finish step 1 (transfer, phase 0) of call #3",
// "finish reading this rank's input in call #3", "bring every block of its kernel to a grid
// barrier in call #3" (a block never resident: other work filled the device).
inline std::string waited_for(const alarm_record& a) {
  const std::string call = "call #" + std::to_string(a.call);
  if (a.kind == wait_barrier) return "bring every block of its kernel to a grid barrier in " + call;
  if (a.phase < 0) return "enter " + call;
  if (a.kind == wait_read) return "finish reading this rank's input in " + call;
  const char* kind = a.kind == wait_reduce    ? " (reduce"
                     : a.kind == wait_arrival ? " (fp8 arrivals"
                                              : " (transfer";
  return "finish step " + std::to_string(a.step) + kind + ", phase " + std::to_string(a.phase) +
         ") of " + call;
}

// What a rank's transport counts of its calls so far (transport::counts()): calls whose input
// was read from, and whose output written to, the caller's buffers (no copy in, no copy out),
// and more; tests check that registration took effect.
struct call_counts {
  std::uint64_t calls = 0, inputs = 0, outputs = 0, one_shot = 0;
  std::uint64_t pull = 0;     // of the one-shot calls, those of the pull form (ipc/pull.hpp)
  std::uint64_t ll = 0;       // of the one-shot calls, those of the ll form (ipc/ll.hpp)
  std::uint64_t entries = 0;  // entries launched, refused ones and void pieces too
  // Pull calls captured with a staged input (each given a word), and of those the inputs that
  // register_graph_inputs let replays read in place (ipc/graph_inputs.hpp).
  std::uint64_t captured_inputs = 0, graph_inputs = 0;
};

// What the host knows beside a report: who this rank is, its timeout, the peers' process ids
// and why it aborted (if it did).
struct report_context {
  int me = 0;
  int ranks = 0;
  long long timeout_ms = 0;
  std::span<const std::uint64_t> pids;
  status aborted;
};

// The failure an alarm names, as found by `a.by`.
inline status alarm_status(const alarm_record& a, const std::string& text,
                           const report_context& c) {
  const std::string peer = "rank " + std::to_string(a.peer);
  switch (a.code) {
    case report_timed_out:
      return {
          errc::timeout,
          peer + " did not " + waited_for(a) + " within " + std::to_string(c.timeout_ms) + " ms",
          static_cast<int>(a.peer)};
    case report_peer_exited: {
      const std::string pid =
          a.peer < c.pids.size()
              ? process_of(static_cast<int>(a.peer), static_cast<int>(c.pids.size()),
                           [&](int r) { return c.pids[static_cast<std::size_t>(r)]; })
              : "";
      return {errc::peer_lost, peer + pid + " exited during call #" + std::to_string(a.call),
              static_cast<int>(a.peer)};
    }
    case report_aborted:
      if (a.by == static_cast<std::uint32_t>(c.me) && !c.aborted.ok()) return c.aborted;
      return {errc::peer_error,
              peer + " left the job (abort) at call #" + std::to_string(a.call) +
                  (text.empty() ? "" : ": " + text),
              static_cast<int>(a.peer)};
    default:
      return {errc::peer_error,
              "rank " + std::to_string(a.by) + " gave up on call #" + std::to_string(a.call),
              static_cast<int>(a.by)};
  }
}

// A failed call's record as its status: the host transports' words for the same verdict
// (verdict_status), naming the call. `own`: this rank's refusal of it, where it refused.
inline status failed_call_status(const failed_call& f, const status& own) {
  const judged& j = f.verdict;
  const verdict v{static_cast<verdict_kind>(j.kind), j.rank, j.other};
  const std::string text = text_of(f.text);
  return verdict_status(v, j.records, static_cast<int>(j.ranks), own, f.call,
                        [&](int q) { return q == j.rank ? text : std::string(); });
}

// The report as this rank's status (ok when the device reported nothing).
inline status report_status(const report& r, const report_context& c) {
  const std::string text = text_of(r.text);
  switch (r.code) {
    case report_ok: return {};
    case report_peer_gave_up: {
      if (r.first.code == report_ok)  // its alarm had not landed: its abort mark alone
        return {errc::peer_error,
                "rank " + std::to_string(r.via) + " gave up on call #" + std::to_string(r.call),
                static_cast<int>(r.via)};
      // The cause first, then who found it: the alarm travels whole from rank to rank.
      const status origin = alarm_status(r.first, text, c);
      if (r.first.code == report_aborted) return origin;  // names the rank that left
      return {origin.code(),
              origin.message() + " (seen by rank " + std::to_string(r.first.by) +
                  "; every rank stopped)",
              origin.peer()};
    }
    default: return alarm_status(r.first, text, c);
  }
}

}  // namespace relay::ipc
