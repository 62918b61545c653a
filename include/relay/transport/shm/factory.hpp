// The shm transport as code outside transport/shm/ reaches it: its options and its factory.
//
//   std::unique_ptr<relay::communicator> comm;
//   relay::status s = relay::communicator_from_environment(relay::shm_factory(), comm);
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "relay/bootstrap/bootstrap.hpp"
#include "relay/bootstrap/environment.hpp"
#include "relay/transport/shm/transport.hpp"

namespace relay {

struct shm_options {
  // Bytes of data area per rank: a call's input, output and scratch lie there (a larger call
  // runs in pieces, plan/pieces.hpp). RELAY_SHM_BYTES overrides the default.
  std::size_t bytes_per_rank = std::size_t{64} << 20;
  // A verdict that is not `go` is returned to the ranks that did not refuse the call afterwards
  // (transport::take_failed_call), as a stream transport's device reports it: for tests of the
  // layers above (shm/transport.hpp). RELAY_SHM_VERDICTS=deferred sets it (any other value but
  // `host`, the default, is refused).
  bool deferred_verdicts = false;
};

// Reads RELAY_SHM_BYTES (bytes; K, M, G suffixes) and RELAY_SHM_VERDICTS (host or deferred)
// into `o`, leaving each as it is when unset.
inline status shm_options_from_environment(shm_options& o) {
  if (status s = size_from_environment("RELAY_SHM_BYTES", o.bytes_per_rank); !s) return s;
  if (const char* v = std::getenv("RELAY_SHM_VERDICTS"); v != nullptr && *v != 0) {
    const std::string_view text(v);
    if (text != "host" && text != "deferred")
      return {errc::invalid_argument,
              "RELAY_SHM_VERDICTS='" + std::string(text) + "': give host or deferred"};
    o.deferred_verdicts = text == "deferred";
  }
  return {};
}

// Creates and maps the segment (collective: every rank of `boot` calls it).
inline status make_shm_transport(bootstrap& boot, const shm_options& o,
                                 std::chrono::milliseconds timeout,
                                 std::unique_ptr<transport>& out) {
  auto t = std::make_unique<shm::transport>(boot.rank(), o.deferred_verdicts);
  if (status s = t->seg().open(boot, o.bytes_per_rank, timeout); !s) return s;
  out = std::move(t);
  return {};
}

// The shm transport for communicator_from_environment (comm/from_environment.hpp), sized by
// RELAY_SHM_BYTES where set.
inline auto shm_factory(shm_options o = {}) {
  return [o](bootstrap& boot, const environment& env, std::unique_ptr<transport>& out) {
    shm_options sized = o;
    if (status s = shm_options_from_environment(sized); !s) return s;
    return make_shm_transport(boot, sized, env.timeout, out);
  };
}

}  // namespace relay
