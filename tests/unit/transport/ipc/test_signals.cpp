// The ipc transport's mark rules (transport/ipc/signals.hpp), without a device: what a wait learns
// from a peer's word, and when a peer seen while waiting for another has given up. Worked by hand.
#include "relay/transport/ipc/signals.hpp"

#include <catch2/catch.hpp>

using namespace relay::ipc;

TEST_CASE("a wait reads a peer's word", "[transport][ipc]") {
  using m = mark_reading;
  const std::uint64_t abort5 = signal_mark(5, signal_abort);
  // The entry of call 5 (done 0).
  CHECK(read_mark(signal_mark(5, 0), 5, 0, false) == m::reached);
  CHECK(read_mark(signal_mark(4, 3), 5, 0, false) == m::waiting);  // still in call 4
  CHECK(read_mark(0, 1, 0, false) == m::waiting);                  // never entered anything
  CHECK(read_mark(signal_mark(6, 0), 5, 0, false) == m::reached);  // already in call 6
  // It gave up in call 5 after publishing its record (the verdict): it entered; without its
  // record of call 5 it gave up before entering.
  CHECK(read_mark(abort5, 5, 0, true) == m::reached);
  CHECK(read_mark(abort5, 5, 0, false) == m::failed);
  // It gave up in call 4: every later mark of it names call 4, so it never reads as "went on".
  CHECK(read_mark(signal_mark(4, signal_abort), 5, 0, true) == m::failed);
  CHECK(read_mark(signal_mark(4, signal_abort), 5, 2, false) == m::failed);
  // A gave-up peer that had finished call 5 and gave up in call 6.
  CHECK(read_mark(signal_mark(6, signal_abort), 5, 2, false) == m::reached);
  // Phase 1 of call 5 (done 2).
  CHECK(read_mark(signal_mark(5, 1), 5, 2, false) == m::waiting);
  CHECK(read_mark(signal_mark(5, 2), 5, 2, false) == m::reached);
  CHECK(read_mark(signal_mark(5, 7), 5, 2, false) == m::reached);
  CHECK(read_mark(abort5, 5, 2, true) == m::failed);  // a record says nothing past the entry
  // The host's dead mark ends every wait, whatever call.
  CHECK(read_mark(signal_dead, 5, 0, true) == m::failed);
  CHECK(read_mark(signal_dead, 1u << 30, 2, false) == m::failed);
  CHECK(signal_dead > signal_mark((std::uint64_t{1} << 44) - 2, signal_abort));
}

TEST_CASE("a peer seen while waiting for another", "[transport][ipc]") {
  CHECK(peer_gave_up(signal_dead, 5, false));
  CHECK(peer_gave_up(signal_mark(4, signal_abort), 5, false));
  // Its abort of this very call: a failure it passes on carries an alarm; a verdict's does not
  // (this rank reaches the same verdict from the same records).
  CHECK(peer_gave_up(signal_mark(5, signal_abort), 5, true));
  CHECK_FALSE(peer_gave_up(signal_mark(5, signal_abort), 5, false));
  CHECK_FALSE(peer_gave_up(signal_mark(6, signal_abort), 5, true));  // it finished call 5
  CHECK_FALSE(peer_gave_up(signal_mark(5, 3), 5, true));
  CHECK_FALSE(peer_gave_up(0, 5, true));
}
