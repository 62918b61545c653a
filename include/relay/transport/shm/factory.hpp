// The shm transport as code outside transport/shm/ reaches it: its options and its factory.
//
//   std::unique_ptr<relay::communicator> comm;
//   relay::status s = relay::communicator_from_environment(relay::shm_factory(), comm);
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>

#include "relay/bootstrap/bootstrap.hpp"
#include "relay/bootstrap/environment.hpp"
#include "relay/transport/shm/transport.hpp"

namespace relay {

struct shm_options {
  // Bytes of data area per rank: a call needs its input, output and scratch there (a larger
  // call fails on every rank with errc::out_of_memory naming the size). RELAY_SHM_BYTES
  // overrides the default.
  std::size_t bytes_per_rank = std::size_t{64} << 20;
};

// Reads RELAY_SHM_BYTES (bytes; K, M, G suffixes) into `o`, leaving it as it is when unset.
inline status shm_options_from_environment(shm_options& o) {
  return size_from_environment("RELAY_SHM_BYTES", o.bytes_per_rank);
}

// Creates and maps the segment (collective: every rank of `boot` calls it).
inline status make_shm_transport(bootstrap& boot, const shm_options& o,
                                 std::chrono::milliseconds timeout,
                                 std::unique_ptr<transport>& out) {
  auto t = std::make_unique<shm::transport>(boot.rank());
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
