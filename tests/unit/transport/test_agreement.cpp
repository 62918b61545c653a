// The call's agreement rule (transport/agreement.hpp): hand-made records of 4 ranks, the verdict
// each rank reaches, and the status it returns. Every transport runs this one rule, so what is
// checked here is what every rank of every transport decides.
#include "relay/transport/agreement.hpp"

#include <array>
#include <catch2/catch.hpp>
#include <vector>

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

// Every record over small domains, all of one call: fingerprints 0, 1, 2; codes none, a refusal,
// one passed on; every placement (27 records).
std::vector<entry_record> small_domain() {
  const std::array<std::uint64_t, 3> fingerprints{0, 1, 2};
  const std::array<std::uint8_t, 3> codes{0, static_cast<std::uint8_t>(errc::invalid_count),
                                          static_cast<std::uint8_t>(errc::peer_error)};
  const std::array<std::uint8_t, 3> placements{helper, out_of_place, in_place};
  std::vector<entry_record> domain;
  for (auto f : fingerprints)
    for (auto c : codes)
      for (auto p : placements) {
        entry_record e;
        e.sequence = 5;
        e.fingerprint = f;
        e.code = c;
        e.placement = p;
        domain.push_back(e);
      }
  return domain;
}

// A record of the hand cases.
constexpr entry_record record_of(std::uint64_t f, std::uint8_t c, std::uint8_t p) {
  entry_record e;
  e.fingerprint = f;
  e.code = c;
  e.placement = p;
  return e;
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
    "in place against out of place among active ranks: mismatch, helpers and refusing "
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

// records_rule_out_go is what a waiting rank may stop on before it has every record: wherever it
// says two records rule out `go`, judge() must agree on every rank, for every third record. Every
// set of 3 records over small domains (fingerprints 0, 1, 2; codes none, a refusal, one passed on;
// every placement), every pair of them.
TEST_CASE("two records that rule out go: judge never says go with them", "[agreement]") {
  const std::vector<entry_record> domain = small_domain();
  int ruled_out = 0, sets = 0;
  for (const auto& a : domain)
    for (const auto& b : domain)
      for (const auto& c : domain) {
        const std::array<entry_record, 3> r{a, b, c};
        ++sets;
        for (int i = 0; i < 3; ++i)
          for (int j = 0; j < 3; ++j) {
            if (i == j || !records_rule_out_go(r[i], r[j])) continue;
            ++ruled_out;
            for (int me = 0; me < 3; ++me)
              if (judge(r.data(), 3, me).kind == verdict_kind::go)
                FAIL("judge says go on rank " << me << " though records " << i << " and " << j
                                              << " rule it out (set " << sets << ")");
          }
      }
  CHECK(sets == 19683);
  CHECK(ruled_out > 0);
  // Hand cases: what does not rule it out (a helper beside either placement, a fingerprint 0).
  static_assert(!records_rule_out_go(record_of(1, 0, helper), record_of(1, 0, in_place)));
  static_assert(!records_rule_out_go(record_of(0, 0, out_of_place), record_of(3, 0, out_of_place)));
  static_assert(records_rule_out_go(record_of(1, 0, out_of_place), record_of(1, 0, in_place)));
  static_assert(records_rule_out_go(record_of(1, 0, helper), record_of(2, 0, helper)));
  static_assert(records_rule_out_go(record_of(1, 7, helper), record_of(1, 0, helper)));
}

// records_promise_go is what lets a rank skip judge(): wherever every record of a set promises go
// beside this rank's own, judge() must say go. Every set of 3 records over the small domains
// above, every rank as this one.
TEST_CASE("records that all promise go: judge says go", "[agreement]") {
  const std::vector<entry_record> domain = small_domain();
  int promised = 0, sets = 0;
  for (const auto& a : domain)
    for (const auto& b : domain)
      for (const auto& c : domain) {
        const std::array<entry_record, 3> r{a, b, c};
        ++sets;
        for (int me = 0; me < 3; ++me) {
          bool all = true;
          for (int q = 0; q < 3; ++q)
            all = all && records_promise_go(r[q], r[me]);
          if (!all) continue;
          ++promised;
          if (judge(r.data(), 3, me).kind != verdict_kind::go)
            FAIL("every record promises go beside rank "
                 << me << "'s, yet judge says otherwise (set " << sets << ")");
        }
      }
  CHECK(sets == 19683);
  // A rank that stops waiting for a peer's data on records_rule_out_go(its own, the peer's) relies
  // on the thread that reads the peer's record finding no promise in it.
  for (const auto& mine : domain)
    for (const auto& r : domain)
      if (records_rule_out_go(mine, r) && records_promise_go(r, mine))
        FAIL("records rule out go, yet one promises it beside the other");
  // Promised: no refusal, one fingerprint (3 choices), and beside this rank (3 choices) the others'
  // placements this rank's or a helper's: 1 way where this rank is a helper, 2 x 2 where it is
  // out of place, 2 x 2 in place; 3 x 3 x (1 + 4 + 4) = 81.
  CHECK(promised == 81);
  static_assert(records_promise_go(record_of(4, 0, in_place), record_of(4, 0, in_place)));
  static_assert(records_promise_go(record_of(4, 0, helper), record_of(4, 0, in_place)));
  // Where judge may say go but the records are not alike, no promise: the full judgement decides
  // (an active rank beside a helper, whose own placement says nothing; a fingerprint 0).
  static_assert(!records_promise_go(record_of(4, 0, in_place), record_of(4, 0, helper)));
  static_assert(!records_promise_go(record_of(0, 0, in_place), record_of(4, 0, in_place)));
  static_assert(!records_promise_go(record_of(4, 0, in_place), record_of(4, 7, in_place)));
  static_assert(!records_promise_go(record_of(4, 7, in_place), record_of(4, 0, in_place)));
  static_assert(!records_promise_go(record_of(4, 0, in_place), record_of(5, 0, in_place)));
}
