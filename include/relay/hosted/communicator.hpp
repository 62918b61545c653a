// A communicator of A processes over N ranks: each process's own rank, and the helpers it hosts
// (docs/hosted-helpers.md).
//
//   std::unique_ptr<relay::communicator> comm;   // 2 processes, 6 helpers: 8 ranks
//   relay::communicator_with_helpers(processes, env, std::vector{2, 3, 4, 5, 6, 7},
//                                    relay::shm_factory(), comm);
//
// Collective over the job's processes, all or nothing: the helper devices are agreed first
// (hosting.hpp: a list that differs anywhere fails everywhere, naming the process); then every
// rank a process runs makes its transport over its own view (bootstrap.hpp), each in its own
// thread, on its own device; a rank whose transport fails fails the creation on every process,
// naming it. With no helper it is the plain communicator of the processes.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "relay/comm/communicator.hpp"
#include "relay/comm/transport_factory.hpp"
#include "relay/hosted/bootstrap.hpp"
#include "relay/hosted/hosting.hpp"
#include "relay/hosted/transport.hpp"

namespace relay {

namespace hosted::detail {

// A process's word after its ranks made their transports: its first failure (the rank it names,
// -1: none).
struct start_word {
  std::int32_t code = 0, rank = -1;
};

// Whether a failure is another's consequence (a rank that waited for a failed one times out or
// loses it): the cause is looked for among the others first.
inline bool consequence(errc code) {
  return code == errc::timeout || code == errc::peer_error || code == errc::peer_lost;
}

// Collective over the processes: every rank's outcome of making its transport, so that the
// creation fails on every process where it failed on any rank, naming the cause.
inline status agree_on_start(const views& group, const std::vector<status>& made,
                             std::chrono::milliseconds timeout) {
  const std::vector<int>& ranks = group.local_ranks();
  start_word mine;
  std::string text;
  for (std::size_t k = 0; k < made.size(); ++k) {
    if (made[k]) continue;
    const bool better = mine.rank < 0 ||
                        (consequence(static_cast<errc>(mine.code)) && !consequence(made[k].code()));
    if (better) {
      mine = {static_cast<std::int32_t>(made[k].code()), ranks[k]};
      text = made[k].message();
    }
  }
  std::vector<with_text<start_word>> all;
  if (status s = exchange(group.processes(), mine, text, all, timeout, "hosted start"); !s)
    return s;
  std::size_t cause = all.size();
  for (std::size_t q = 0; q < all.size(); ++q) {
    const start_word& w = all[q].value;
    if (w.rank < 0) continue;
    if (cause == all.size() || (consequence(static_cast<errc>(all[cause].value.code)) &&
                                !consequence(static_cast<errc>(w.code))))
      cause = q;
  }
  if (cause == all.size()) return {};
  const int r = all[cause].value.rank;
  for (std::size_t k = 0; k < made.size(); ++k)
    if (ranks[k] == r) {
      if (k == 0) return made[k];
      return {made[k].code(), rank_name(group.rule(), r) + ": " + made[k].message(), r};
    }
  return {errc::peer_error,
          rank_name(group.rule(), r) + " failed to start (" +
              std::string(name(static_cast<errc>(all[cause].value.code))) + "): " + all[cause].text,
          r};
}

}  // namespace hosted::detail

// Collective over `processes` (the job's bootstrap, one rank per process): agrees on `devices`
// (every process passes the same; `refused` not ok: this process could not read its list, and
// every process fails naming it), then makes this process's communicator: of N = A + H ranks,
// its own rank over its view and each hosted rank's part beside it (hosted/transport.hpp), or,
// with no helper, the plain communicator of the processes. `env` is the process's own.
inline status communicator_with_helpers(std::shared_ptr<bootstrap> processes,
                                        const environment& env, std::span<const int> devices,
                                        const transport_factory& make,
                                        std::unique_ptr<communicator>& out,
                                        const status& refused = {}) {
  out.reset();
  // Set-up waits with the set-up timeout (setup_timeout_of: of the N ranks once they are known),
  // the calls with the environment's.
  hosting rule;
  if (status s = agree_on_hosting(*processes, devices, refused, setup_timeout_of(env), rule); !s)
    return s;
  environment setup = env;
  setup.size = rule.ranks();
  setup.timeout = setup_timeout_of(setup);
  setup.size = env.size;
  comm_config config;
  config.timeout = env.timeout;
  if (rule.helpers() == 0) {
    std::unique_ptr<transport> link;
    if (status s = make(*processes, setup, link); !s) return s;
    // The transport's device where it drives one (ipc: the environment's modulo the devices the
    // process sees), so that communicator::device() names the GPU the calls use.
    config.device = link->device() >= 0 ? link->device() : env.device;
    out = std::make_unique<communicator>(std::move(processes), std::move(link), config);
    return {};
  }
  auto group = std::make_shared<hosted::views>(processes, rule);
  const std::vector<int>& ranks = group->local_ranks();
  const std::size_t L = ranks.size();
  std::shared_ptr<bootstrap> own = group->view(0);
  std::vector<std::unique_ptr<bootstrap>> boots(L);
  for (std::size_t k = 1; k < L; ++k)
    boots[k] = group->view(static_cast<int>(k));
  std::vector<std::unique_ptr<transport>> links(L);
  std::vector<status> made(L);
  hosted::crew starting(static_cast<int>(L) - 1);
  auto make_rank = [&](int k) {
    const auto i = static_cast<std::size_t>(k);
    environment e = setup;
    e.rank = ranks[i];
    e.size = rule.ranks();
    if (k > 0) {
      e.local_rank = e.rank;
      e.device = rule.device_of(e.rank);
      e.host = ranks[0];
    }
    made[i] = make(k == 0 ? *own : *boots[i], e, links[i]);
    // A stream transport runs its hosted ranks' kernels beside the caller's: it must say how.
    if (made[i] && !links[i]->judges_on_host() &&
        dynamic_cast<hosted::stream_side*>(links[i].get()) == nullptr)
      made[i] = {errc::unsupported, "the " + std::string(links[i]->name()) +
                                        " transport cannot run hosted helpers' calls beside its "
                                        "own (hosted/streams.hpp)"};
    if (!made[i]) group->leave(k, made[i]);
  };
  group->begin_together();
  starting.run(make_rank);
  group->end_together();
  if (status s = hosted::detail::agree_on_start(*group, made, setup.timeout); !s) {
    // Every rank's transport goes, at once (their teardown may meet their peers').
    group->begin_together();
    for (std::size_t k = 0; k < L; ++k)
      if (!made[k]) group->leave(static_cast<int>(k), made[k]);
    auto drop = [&](int k) { links[static_cast<std::size_t>(k)].reset(); };
    starting.run(drop);
    group->end_together();
    return s;
  }
  config.device = links[0]->device() >= 0 ? links[0]->device() : env.device;
  auto link = std::make_unique<hosted::transport>(group, std::move(boots), std::move(links));
  out = std::make_unique<communicator>(std::move(own), std::move(link), config);
  return {};
}

// The job's bootstrap of processes behind `comm`: where its process hosts helpers, the one its
// ranks' views exchange over (one rank per process, numbered as the process's own rank); else
// comm.boot(). For a program's own exchanges (its results, its timings), which hosted ranks take
// no part in.
inline bootstrap& processes_of(communicator& comm) {
  if (auto* v = dynamic_cast<hosted::view*>(&comm.boot())) return v->group().processes();
  return comm.boot();
}

}  // namespace relay
