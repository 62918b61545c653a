// A communicator split from another, as ncclCommSplit: the ranks that pass one color get a
// communicator of their own (bootstrap/split.hpp), ranked by key, over the transport `make`
// builds, on the parent's device with the parent's timeout. The split is a set-up: its waits, the
// new transport's creation included, have the set-up timeout of a job of the parent's size
// (setup_timeout_for), not the calls' timeout.
//
//   std::unique_ptr<relay::communicator> pair;
//   relay::split_communicator(*comm, comm->rank() / 2, comm->rank(), relay::shm_factory(), pair);
//
// Why split: one call of a communicator agrees across all of its ranks before any output is
// written (docs/multiprocess.md), so groups that share one communicator wait for each other on
// every call, even groups of a fused call that exchange no data. Groups that run apart, each on
// a communicator of its own, agree among their own members only (bench/results/ipc-transport.md
// says what that is worth with 8 processes on one GPU).
//
// Collective over the parent and all or nothing: ok on every rank, or an error on every rank
// (naming the rank that failed and why) with no communicator made anywhere. The parent stays
// usable either way, and the two are independent afterwards: either may be destroyed first.
#pragma once

#include <memory>

#include "relay/bootstrap/split.hpp"
#include "relay/comm/from_environment.hpp"
#include "relay/hosted/bootstrap.hpp"

namespace relay {

inline status split_communicator(communicator& parent, int color, int key,
                                 const transport_factory& make,
                                 std::unique_ptr<communicator>& out) {
  out.reset();
  // Every process of a communicator with hosted helpers refuses alike: a hosted rank takes only
  // its host's calls, and has no color of its own to pass.
  if (dynamic_cast<const hosted::view*>(&parent.boot()) != nullptr)
    return {errc::unsupported,
            "a communicator with hosted helpers cannot be split (docs/hosted-helpers.md): make "
            "the communicators of the parts from their own processes"};
  const auto timeout = setup_timeout_for(parent.size(), parent.config().timeout);
  std::unique_ptr<bootstrap> boot;
  if (status s = split_bootstrap(parent.boot(), color, key, timeout, boot); !s) return s;
  status made;
  std::unique_ptr<communicator> child;
  if (boot) {
    environment env;
    env.rank = env.local_rank = boot->rank();
    env.size = boot->size();
    env.device = parent.device();
    env.timeout = env.setup_timeout = timeout;  // the transport's creation: a set-up
    // The parent's ranks on this device go on driving it: a transport that divides the device
    // among its ranks (ipc) must count them, or the child's spinning kernels could fill it.
    env.device_share = parent.transport().device_share();
    std::shared_ptr<bootstrap> shared(std::move(boot));
    std::unique_ptr<transport> link;
    made = make(*shared, env, link);
    if (made) {
      comm_config config = parent.config();
      child = std::make_unique<communicator>(shared, std::move(link), config);
    }
  }
  // A member whose transport failed fails the split on every rank, so that no rank holds a
  // communicator whose peers have none.
  if (status s = detail::agree_on_outcome(parent.boot(), made, timeout, "split communicator"); !s)
    return s;
  out = std::move(child);
  return {};
}

// This rank refuses the split its peers are making now (its own checks of its arguments failed
// before it had a color to pass): it takes part in the split as a refusal, so every peer fails at
// once with errc::peer_error naming it, and the parent stays usable. Returns `why` (or the
// exchange's error where the split could not be made at all).
inline status refuse_split(communicator& parent, status why) {
  if (why.ok()) why = {errc::invalid_argument, "the caller refused the split"};
  std::unique_ptr<bootstrap> none;
  return split_bootstrap(parent.boot(), no_color, 0,
                         setup_timeout_for(parent.size(), parent.config().timeout), none, why);
}

}  // namespace relay
