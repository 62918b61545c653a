// The step kernel's device trace, its host side (transport/ipc/stage_trace.hpp): which row of the
// host block a stage launch of a call writes, worked out by hand. The device side is compiled only
// where RELAY_IPC_TRACE=1 and runs on a GPU (relay_ipc_tests stages).
#include "relay/transport/ipc/stage_trace.hpp"

#include <catch2/catch.hpp>

using relay::ipc::stage_trace_row;

// 8 calls of 8 stages fill the host block's 64 rows: call 9's stage 2 is row 1 * 8 + 2; a ninth
// stage shares the eighth's row.
static_assert(stage_trace_row(0, 0) == 0);
static_assert(stage_trace_row(9, 2) == 10);
static_assert(stage_trace_row(7, 7) == 63);
static_assert(stage_trace_row(7, 12) == 63);
static_assert(stage_trace_row(16, 3) == 3);

TEST_CASE("every stage row of 8 calls of up to 8 stages is a row of the host block, once",
          "[ipc][trace]") {
  bool seen[relay::ipc::trace_calls] = {};
  for (std::uint64_t call = 8; call < 16; ++call)
    for (std::uint32_t stage = 0; stage < 8; ++stage) {
      const int row = stage_trace_row(call, stage);
      REQUIRE(row >= 0);
      REQUIRE(row < relay::ipc::trace_calls);
      REQUIRE_FALSE(seen[row]);
      seen[row] = true;
    }
}
