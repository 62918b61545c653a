// The call's agreement rule (transport/agreement.hpp): hand-made records of 4 ranks, the verdict
// each rank reaches, and the status it returns. Every transport runs this one rule, so what is
// checked here is what every rank of every transport decides.
#include "relay/transport/agreement.hpp"

#include <array>
#include <catch2/catch.hpp>

using namespace relay;

namespace {

constexpr auto out_of_place = static_cast<std::uint8_t>(placement::out_of_place);
constexpr auto in_place = static_cast<std::uint8_t>(placement::in_place);
constexpr auto helper = static_cast<std::uint8_t>(placement::helper);

// Four ranks that agree: the same fingerprint, actives 0 and 1 out of place, 2 and 3 helpers.
std::array<entry_record, 4> agreeing() {
  std::array<entry_record, 4> r{};
  for (std::size_t q = 0; q < r.size(); ++q) {
    r[q].sequence = 7;
    r[q].fingerprint = 0xabc;
    r[q].placement = q < 2 ? out_of_place : helper;
  }
  return r;
}

std::string no_reason(int) {
  return {};
}

}  // namespace

TEST_CASE("agreeing records: every rank goes on", "[agreement]") {
  const auto r = agreeing();
  for (int me = 0; me < 4; ++me)
    CHECK(judge(r.data(), 4, me).kind == verdict_kind::go);
  static_assert(judge(std::array<entry_record, 1>{}.data(), 1, 0).kind == verdict_kind::go);
}

TEST_CASE("a rank with other arguments: mismatch on every rank, naming it", "[agreement]") {
  auto r = agreeing();
  r[2].fingerprint = 0xdef;
  r[3].fingerprint = 0xdef;
  for (int me = 0; me < 4; ++me) {
    const verdict v = judge(r.data(), 4, me);
    CHECK(v.kind == verdict_kind::arguments_differ);
    CHECK(v.rank == 2);
    CHECK(v.other == 0);
    const status s = verdict_status(v, r.data(), 4, {}, 7, no_reason);
    CHECK(s.code() == errc::mismatch);
    CHECK(s.message() == "rank(s) 2,3 called call #7 with arguments that differ from rank 0's");
  }
}

TEST_CASE("a rank refused with other arguments: a mismatch, and it says why it refused",
          "[agreement]") {
  auto r = agreeing();
  r[2].fingerprint = 0x111;
  r[2].code = static_cast<std::uint8_t>(errc::invalid_count);
  const status own{errc::invalid_count, "count -1 of group 0 is negative"};
  const verdict v = judge(r.data(), 4, 2);
  CHECK(v.kind == verdict_kind::arguments_differ);
  CHECK(verdict_status(v, r.data(), 4, own, 7, no_reason).message() ==
        "rank(s) 2 called call #7 with arguments that differ from rank 0's; this rank's own call "
        "was refused: invalid count: count -1 of group 0 is negative");
  CHECK(judge(r.data(), 4, 0).kind == verdict_kind::arguments_differ);
}

TEST_CASE("a refusal without a shape is not compared: the peers name the refusing rank",
          "[agreement]") {
  auto r = agreeing();
  r[0].fingerprint = 0;  // communicator::refuse on rank 0
  r[0].code = static_cast<std::uint8_t>(errc::invalid_argument);
  const verdict here = judge(r.data(), 4, 0);
  CHECK(here.kind == verdict_kind::refused_here);
  const status own{errc::invalid_argument, "tensor 'x' is float32; expected bfloat16"};
  CHECK(verdict_status(here, r.data(), 4, own, 7, no_reason).message() == own.message());
  for (int me = 1; me < 4; ++me) {
    const verdict v = judge(r.data(), 4, me);
    CHECK(v.kind == verdict_kind::refused_by_peer);
    CHECK(v.rank == 0);
    const status s = verdict_status(v, r.data(), 4, {}, 7, [](int q) {
      return q == 0 ? std::string("tensor 'x' is float32; expected bfloat16") : std::string();
    });
    CHECK(s.code() == errc::peer_error);
    CHECK(s.message() ==
          "rank 0 refused call #7: invalid argument: tensor 'x' is float32; expected bfloat16");
  }
}

TEST_CASE(
    "in place against out of place among active ranks: mismatch; helpers and refusing "
    "ranks do not vote",
    "[agreement]") {
  auto r = agreeing();
  r[1].placement = in_place;
  const verdict v = judge(r.data(), 4, 3);
  CHECK(v.kind == verdict_kind::placement_differs);
  CHECK(v.rank == 1);
  CHECK(v.other == 0);
  CHECK(verdict_status(v, r.data(), 4, {}, 7, no_reason).message() ==
        "rank 1 called call #7 in place but rank 0 out of place; every active rank must agree");
  // Rank 0 refused (its buffers): its placement is no vote; the refusal is what every rank sees.
  r[0].code = static_cast<std::uint8_t>(errc::invalid_buffer);
  CHECK(judge(r.data(), 4, 3).kind == verdict_kind::refused_by_peer);
  CHECK(judge(r.data(), 4, 0).kind == verdict_kind::refused_here);
}

TEST_CASE("the lowest refusing peer is named, a mismatch comes before any refusal", "[agreement]") {
  auto r = agreeing();
  r[3].code = static_cast<std::uint8_t>(errc::out_of_memory);
  r[1].code = static_cast<std::uint8_t>(errc::invalid_buffer);
  CHECK(judge(r.data(), 4, 0).rank == 1);
  CHECK(judge(r.data(), 4, 3).kind == verdict_kind::refused_here);
  r[2].fingerprint = 0x999;
  for (int me = 0; me < 4; ++me)
    CHECK(judge(r.data(), 4, me).kind == verdict_kind::arguments_differ);
}

// A serving rank passes on its publisher's refusal (errc::peer_error, serve/serve.hpp); the
// other ranks name the rank whose refusal is its own, though a lower rank passed it on.
TEST_CASE("a refusal passed on is named after the refusal it passes on", "[agreement]") {
  auto r = agreeing();
  r[1].code = static_cast<std::uint8_t>(errc::peer_error);  // passes on rank 3's
  r[3].code = static_cast<std::uint8_t>(errc::invalid_argument);
  r[3].fingerprint = 0;
  for (int me : {0, 2}) {
    const verdict v = judge(r.data(), 4, me);
    CHECK(v.kind == verdict_kind::refused_by_peer);
    CHECK(v.rank == 3);
  }
  CHECK(judge(r.data(), 4, 1).kind == verdict_kind::refused_here);
  CHECK(judge(r.data(), 4, 3).kind == verdict_kind::refused_here);
  // Only ranks that pass one on: the lowest of them.
  r[3].code = static_cast<std::uint8_t>(errc::peer_error);
  CHECK(judge(r.data(), 4, 0).rank == 1);
}
