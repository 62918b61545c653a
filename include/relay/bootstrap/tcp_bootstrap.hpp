// A bootstrap over TCP: rank 0 listens at the store address, every other rank connects to it, and
// rank 0 relays each all-gather (every rank sends its bytes, rank 0 answers with everyone's).
// Configured from the environment (bootstrap/environment.hpp): relay-run, torchrun and
// mpirun-style launchers work unchanged. One TCP connection per rank, kept for the job.
//
// A rank that does not connect or contribute within the timeout, or whose connection closes,
// fails the call on every rank with errc::timeout naming it (rank 0 tells the others).
#pragma once

#include <memory>

#include "relay/bootstrap/bootstrap.hpp"
#include "relay/bootstrap/environment.hpp"

namespace relay {

// Connects the job (collective: every rank calls it). Fails, naming the ranks that did not
// arrive, when the job is not complete within `timeout`.
inline status make_tcp_bootstrap(const environment& env, std::unique_ptr<bootstrap>& out);

}  // namespace relay
