// Splitting a job into disjoint sub-jobs, as MPI_Comm_split and ncclCommSplit: every rank of the
// parent calls split_bootstrap with a color and a key; the ranks of one color become a job of
// their own, ranked by (key, parent rank), with a bootstrap of its own that its members alone
// use. Its first member listens for the others on a port the kernel picks, at the address its
// parent bootstrap knows it by (bootstrap::address), so the parent's store gets no traffic
// after the split.
//
// Why a separate job and not a view of the parent's: everything a communicator agrees on, it
// agrees on over its whole bootstrap (every call's verdict, docs/multiprocess.md). Groups that
// never exchange data but share one communicator therefore wait for each other every call; on
// their own sub-jobs they wait for their own members only.
//
// The split is collective over the parent and all or nothing: it returns ok on every rank or an
// error on every rank (a bad color, a store that could not listen, a member that did not connect,
// named), and the parent stays usable either way.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "relay/bootstrap/exchange.hpp"
#include "relay/bootstrap/tcp_bootstrap.hpp"

namespace relay {

// The color of a rank that joins no sub-job (MPI_UNDEFINED, NCCL_SPLIT_NOCOLOR): it takes part
// in the split and gets none.
inline constexpr int no_color = -1;

namespace detail {

// After a collective step over `parent`: every rank's outcome to every rank, so that the step
// fails everywhere where it failed anywhere. A rank's own error comes back as it was; the others
// get errc::peer_error naming the rank whose error is the cause (the lowest rank whose error is
// not a timeout, a peer's or a peer lost: a member that waited for a failed one times out or
// loses it, and that is not why) and what it was.
inline status agree_on_outcome(bootstrap& parent, const status& mine, milliseconds timeout,
                               const std::string& what) {
  std::vector<with_text<errc>> all;
  if (status s = exchange(parent, mine.code(), mine.message(), all, timeout, "outcome"); !s)
    return s;
  if (!mine) return mine;
  auto failed = [&](std::size_t r) { return all[r].value != errc::ok; };
  auto consequence = [&](std::size_t r) {
    const errc code = all[r].value;
    return code == errc::timeout || code == errc::peer_error || code == errc::peer_lost;
  };
  std::size_t cause = all.size();
  for (std::size_t r = all.size(); r-- > 0;)  // the lowest cause, else the lowest failure
    if (failed(r) && (!consequence(r) || cause == all.size() || consequence(cause))) cause = r;
  if (cause == all.size()) return {};
  return {errc::peer_error,
          "rank " + std::to_string(cause) + "'s " + what + " failed: " + all[cause].text,
          static_cast<int>(cause)};
}

// One rank's word in the split's exchange: these numbers, then the text of the store it offers
// (a member: its address, address_size bytes) and why it refuses the split (the rest).
struct split_word {
  std::int32_t color = no_color, key = 0, port = 0, address_size = 0;
};

// A word's address and refusal, from the text after it; false where the text is too short.
inline bool split_texts(const with_text<split_word>& w, std::string& address,
                        std::string& refusal) {
  const auto n = static_cast<std::size_t>(w.value.address_size);
  if (w.value.address_size < 0 || w.text.size() < n) return false;
  address = w.text.substr(0, n);
  refusal = w.text.substr(n);
  return true;
}

// The sub-job of `color`: its members' parent ranks in their new order, (key, parent rank).
inline std::vector<int> members_of(const std::vector<with_text<split_word>>& words, int color) {
  std::vector<int> members;
  for (std::size_t r = 0; r < words.size(); ++r)
    if (words[r].value.color == color) members.push_back(static_cast<int>(r));
  // (key, parent rank) orders every pair, so no stable sort is needed (libstdc++'s takes a
  // temporary buffer through an interface clang's C++20 mode warns of as deprecated).
  std::sort(members.begin(), members.end(), [&](int a, int b) {
    const std::int32_t ka = words[static_cast<std::size_t>(a)].value.key;
    const std::int32_t kb = words[static_cast<std::size_t>(b)].value.key;
    return ka != kb ? ka < kb : a < b;
  });
  return members;
}

}  // namespace detail

// Collective over `parent`: this rank's bootstrap in the sub-job of `color` (ranked by `key`,
// ties by parent rank) into `out`, or nullptr for no_color. Any other negative color is refused
// (errc::invalid_argument here, errc::peer_error naming this rank elsewhere), and so is every
// split of a rank whose `own_checks` failed (its checks of its arguments: it takes part as a
// refusal, so its peers fail at once naming it, and returns `own_checks`). Every
// wait has `timeout`, the sub-job's set-up included (a split is a set-up: callers pass
// setup_timeout_for the parent, as comm/split.hpp does).
inline status split_bootstrap(bootstrap& parent, int color, int key, milliseconds timeout,
                              std::unique_ptr<bootstrap>& out, const status& own_checks = {}) {
  using namespace detail;
  out.reset();
  split_word mine;
  mine.color = color < 0 || !own_checks.ok() ? no_color : color;
  mine.key = key;
  std::string address, refused;  // the store this rank offers; why it refuses the split
  unique_fd listener;
  if (!own_checks.ok())
    refused = own_checks.to_string();
  else if (color < 0 && color != no_color)
    refused = "color " + std::to_string(color) + " is neither >= 0 nor relay::no_color (-1)";
  // Every rank of a color offers a store, so the split needs one exchange; all but each color's
  // first member close theirs unused.
  sockaddr_in at{};
  if (refused.empty() && color >= 0) {
    environment here;
    here.store_addr = parent.address();
    if (status s = resolve(here, at, steady::now(), timeout); !s)
      refused = s.message();
    else if (status l = listen_at(at, parent.size(), "the split's store",
                                  here.store_addr + " (this rank's address in the parent job)",
                                  listener, mine.port);
             !l)
      refused = l.message();
    address = here.store_addr;
  }
  mine.address_size = static_cast<std::int32_t>(address.size());
  std::vector<with_text<split_word>> words;
  if (status s = exchange(parent, mine, address + refused, words, timeout, "split word"); !s)
    return s;
  std::vector<std::string> addresses(words.size()), refusals(words.size());
  for (std::size_t r = 0; r < words.size(); ++r)
    if (!split_texts(words[r], addresses[r], refusals[r]))
      return {errc::system_error, "rank " + std::to_string(r) + "'s split word is malformed"};
  if (!own_checks.ok()) return own_checks;
  if (!refused.empty()) return {errc::invalid_argument, refused};
  for (std::size_t r = 0; r < words.size(); ++r)
    if (!refusals[r].empty())
      return {errc::peer_error, "rank " + std::to_string(r) + " refused the split: " + refusals[r],
              static_cast<int>(r)};
  status joined;
  if (color >= 0) {
    const std::vector<int> members = members_of(words, color);
    const auto me = std::find(members.begin(), members.end(), parent.rank()) - members.begin();
    const auto first = static_cast<std::size_t>(members[0]);
    environment e;
    e.rank = static_cast<int>(me);
    e.size = static_cast<int>(members.size());
    e.store_addr = addresses[first];
    e.store_port = words[first].value.port;
    e.timeout = timeout;
    e.setup_timeout = timeout;
    if (e.rank != 0) listener = unique_fd();
    const auto start = steady::now();
    sockaddr_in store{};
    joined = resolve(e, store, start, timeout);
    if (joined) joined = join_job(e, std::move(listener), store, start, out);
    if (!joined)
      joined = status(joined.code(), "color " + std::to_string(color) + ": " + joined.message());
  }
  if (status s = agree_on_outcome(parent, joined, timeout, "split"); !s) {
    out.reset();
    return s;
  }
  return {};
}

}  // namespace relay
