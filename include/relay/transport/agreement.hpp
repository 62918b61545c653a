// The call's agreement: before any data of a call moves, every rank says what it called and
// whether it can take part, and every rank judges all ranks' words by one rule. Every call has
// one, refused or not, on every transport: a rank whose arguments or buffers are refused still
// enters the agreement, so its peers learn of it at once and the ranks stay in step.
//
// A rank's word is an entry_record; `judge` is the rule, a plain function over the records so
// that a transport can run it wherever the records are (the shm transport on the host, in the
// shared segment; the nccl transport on the host, over the bootstrap; the ipc transport in its
// entry kernel, on the device). Every rank sees the same records, so every rank reaches the same
// verdict: all go on, or none does and no user memory is written anywhere.
#pragma once

#include <cstdint>
#include <string>

#include "relay/core/config.hpp"
#include "relay/core/status.hpp"
#include "relay/plan/rank_buffers.hpp"

namespace relay {

// What one rank says when it enters call `sequence`.
struct entry_record {
  std::uint64_t sequence = 0;
  // Of the arguments every rank must pass alike (the call's shape, not its buffers). 0: the rank
  // refused before it had a shape to show (communicator::refuse); it is not compared.
  std::uint64_t fingerprint = 0;
  std::uint8_t code = 0;       // errc: this rank's own refusal (its arguments or buffers); 0 ok
  std::uint8_t placement = 0;  // relay::placement (helpers and count-0 ranks do not vote)
  std::uint8_t pad[6] = {};
};
static_assert(sizeof(entry_record) == 24);

enum class verdict_kind : std::uint8_t {
  go,                 // every rank takes part with the same arguments
  arguments_differ,   // `rank` is the lowest whose fingerprint differs from the reference's
  placement_differs,  // `rank` called in place, `other` out of place
  refused_here,       // this rank refused (its own status says why)
  refused_by_peer,    // `rank` is the lowest peer that refused
};

struct verdict {
  verdict_kind kind = verdict_kind::go;
  int rank = -1;
  int other = -1;
};

// The rule, in order: arguments that differ (from the first rank that showed a fingerprint),
// then in place against out of place among the active ranks, then this rank's own refusal, then
// a peer's (its own reason before one passed on: errc::peer_error). `all` holds every rank's record
// of the same call, indexed by rank.
RELAY_HOST_DEVICE constexpr verdict judge(const entry_record* all, int ranks, int me) {
  std::uint64_t reference = 0;
  int reference_rank = -1;
  for (int q = 0; q < ranks && reference_rank < 0; ++q)
    if (all[q].fingerprint != 0) {
      reference = all[q].fingerprint;
      reference_rank = q;
    }
  for (int q = 0; q < ranks; ++q)
    if (all[q].fingerprint != 0 && all[q].fingerprint != reference)
      return {verdict_kind::arguments_differ, q, reference_rank};
  int in_place = -1, out_of_place = -1;
  for (int q = 0; q < ranks; ++q) {
    if (all[q].code != 0) continue;  // a refusing rank's placement says nothing
    if (all[q].placement == static_cast<std::uint8_t>(placement::in_place) && in_place < 0)
      in_place = q;
    if (all[q].placement == static_cast<std::uint8_t>(placement::out_of_place) && out_of_place < 0)
      out_of_place = q;
  }
  if (in_place >= 0 && out_of_place >= 0)
    return {verdict_kind::placement_differs, in_place, out_of_place};
  if (all[me].code != 0) return {verdict_kind::refused_here, me, -1};
  // The lowest peer whose refusal is its own; a peer_error refusal passes on another rank's (a
  // serving helper mirroring its publisher's refusal, serve/serve.hpp), so it is named last.
  int passed_on = -1;
  for (int q = 0; q < ranks; ++q) {
    if (all[q].code == static_cast<std::uint8_t>(errc::peer_error) && passed_on < 0) passed_on = q;
    if (all[q].code != 0 && all[q].code != static_cast<std::uint8_t>(errc::peer_error))
      return {verdict_kind::refused_by_peer, q, -1};
  }
  if (passed_on >= 0) return {verdict_kind::refused_by_peer, passed_on, -1};
  return {};
}

// Whether two ranks' records alone rule out `go`: judge() reaches another verdict for every set of
// records that holds both (either refused; both showed a fingerprint and they differ; both take
// part, one in place and one out of place). A transport that waits for a peer's data may stop
// waiting on this, before it has every record to judge: the verdict it reaches then is not `go`.
RELAY_HOST_DEVICE constexpr bool records_rule_out_go(const entry_record& a, const entry_record& b) {
  if (a.code != 0 || b.code != 0) return true;
  if (a.fingerprint != 0 && b.fingerprint != 0 && a.fingerprint != b.fingerprint) return true;
  constexpr auto in_place = static_cast<std::uint8_t>(placement::in_place);
  constexpr auto out_of_place = static_cast<std::uint8_t>(placement::out_of_place);
  return (a.placement == in_place && b.placement == out_of_place) ||
         (a.placement == out_of_place && b.placement == in_place);
}

// Whether record `r` takes part on the terms of this rank's own (`mine`): neither refused, the
// same fingerprint, and the same placement or a helper's (which says nothing). Where every rank's
// record does (this rank's own included), judge() says go. A transport that compares each peer's
// record with its own where it reads it, in parallel, judges the whole set only where one does not.
RELAY_HOST_DEVICE constexpr bool records_promise_go(const entry_record& r,
                                                    const entry_record& mine) {
  return r.code == 0 && mine.code == 0 && r.fingerprint == mine.fingerprint &&
         (r.placement == mine.placement ||
          r.placement == static_cast<std::uint8_t>(placement::helper));
}

// The verdict as this rank's status. `own` is this rank's refusal (for refused_here);
// `peer_reason(q)` the text rank q gave for its refusal, where the transport carries one (empty
// where it does not: then the code's name stands alone).
template <class PeerReason>
status verdict_status(const verdict& v, const entry_record* all, int ranks, const status& own,
                      std::uint64_t sequence, PeerReason&& peer_reason) {
  const std::string call = "call #" + std::to_string(sequence);
  switch (v.kind) {
    case verdict_kind::go: return {};
    case verdict_kind::arguments_differ: {
      std::string differ;
      for (int q = 0; q < ranks; ++q)
        if (all[q].fingerprint != 0 && all[q].fingerprint != all[v.other].fingerprint)
          differ.append(differ.empty() ? "" : ",").append(std::to_string(q));
      std::string text = "rank(s) " + differ + " called " + call +
                         " with arguments that differ from rank " + std::to_string(v.other) + "'s";
      if (!own.ok()) text += "; this rank's own call was refused: " + own.to_string();
      return {errc::mismatch, text, v.rank};
    }
    case verdict_kind::placement_differs:
      return {errc::mismatch,
              "rank " + std::to_string(v.rank) + " called " + call + " in place but rank " +
                  std::to_string(v.other) + " out of place; every active rank must agree",
              v.rank};
    case verdict_kind::refused_here: return own;
    case verdict_kind::refused_by_peer: {
      const std::string reason = peer_reason(v.rank);
      return {errc::peer_error,
              "rank " + std::to_string(v.rank) + " refused " + call + ": " +
                  std::string(name(static_cast<errc>(all[v.rank].code))) +
                  (reason.empty() ? "" : ": " + reason),
              v.rank};
    }
  }
  return {};
}

}  // namespace relay
