// What the multi-process tests share: the communicator from the environment (relay-run sets
// it), one rank's buffer frame with canaries, and every rank's inputs regenerated on every rank
// from the case's seed (so any rank can compute the naive reference for all of them).
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "relay/comm/collectives.hpp"
#include "relay/comm/from_environment.hpp"
#include "relay/transport/shm_transport.hpp"
#include "support/property_suite.hpp"

namespace relay::testing {

inline std::unique_ptr<communicator> connect_or_exit() {
  std::unique_ptr<communicator> comm;
  if (status s = communicator_from_environment(shm_factory(), comm); !s) {
    std::fprintf(stderr, "cannot make the communicator: %s\n", s.to_string().c_str());
    std::exit(2);
  }
  return comm;
}

// Every rank's input bytes for case `c`, as run_case draws them (one stream, group by group).
inline std::vector<std::vector<std::byte>> all_inputs(const property_case& c) {
  const auto es = static_cast<std::size_t>(size_of(c.type));
  std::mt19937_64 rng(c.seed ^ 0x9e3779b97f4a7c15ull);
  std::vector<std::vector<std::byte>> input(static_cast<std::size_t>(c.ranks));
  for (std::size_t g = 0; g < c.groups.size(); ++g)
    for (std::size_t k = 0; k < c.groups[g].size(); ++k) {
      auto& in = input[static_cast<std::size_t>(c.groups[g][k])];
      in.resize(static_cast<std::size_t>(input_elements(c.coll, c.active, c.counts[g])) * es);
      visit_dtype(c.type, [&](auto zero) { detail::fill_random<decltype(zero)>(in, rng); });
    }
  return input;
}

// This rank's buffers for case `c`: canary | input and output (NCCL's in-place layout when the
// case is in place) | canary, outputs poisoned. A helper's frame is empty.
struct rank_frame {
  std::vector<std::byte> bytes;
  std::size_t in_off = 0, out_off = 0, in_bytes = 0, out_bytes = 0;

  rank_frame(const property_case& c, int rank, const std::vector<std::byte>& input) {
    const auto es = static_cast<std::size_t>(size_of(c.type));
    for (std::size_t g = 0; g < c.groups.size(); ++g)
      for (std::size_t k = 0; k < c.groups[g].size(); ++k) {
        if (c.groups[g][k] != rank) continue;
        const std::int64_t n = c.counts[g];
        in_bytes = static_cast<std::size_t>(input_elements(c.coll, c.active, n)) * es;
        out_bytes = static_cast<std::size_t>(output_elements(c.coll, c.active, n)) * es;
        if (c.in_place) {
          const in_place_offsets at = in_place_layout(c.coll, static_cast<int>(k), n);
          in_off = detail::canary + static_cast<std::size_t>(at.input) * es;
          out_off = detail::canary + static_cast<std::size_t>(at.output) * es;
        } else {
          in_off = detail::canary;
          out_off = detail::canary + in_bytes;
        }
        bytes.assign(std::max(in_off + in_bytes, out_off + out_bytes) + detail::canary,
                     detail::poison_byte);
        std::fill_n(bytes.begin(), detail::canary, detail::canary_byte);
        std::fill_n(bytes.end() - detail::canary, detail::canary, detail::canary_byte);
        std::copy(input.begin(), input.end(), bytes.begin() + static_cast<std::ptrdiff_t>(in_off));
      }
  }
  buffer_view send() {
    return bytes.empty() ? buffer_view{} : buffer_view{bytes.data() + in_off, in_bytes};
  }
  buffer_view recv() {
    return bytes.empty() ? buffer_view{} : buffer_view{bytes.data() + out_off, out_bytes};
  }
  bool canaries_intact() const {
    auto is_canary = [](std::byte b) { return b == detail::canary_byte; };
    return bytes.empty() ||
           (std::all_of(bytes.begin(), bytes.begin() + detail::canary, is_canary) &&
            std::all_of(bytes.end() - detail::canary, bytes.end(), is_canary));
  }
  std::vector<std::byte> output() const {
    const auto at = bytes.begin() + static_cast<std::ptrdiff_t>(out_off);
    return bytes.empty() ? std::vector<std::byte>{}
                         : std::vector<std::byte>(at, at + static_cast<std::ptrdiff_t>(out_bytes));
  }
};

inline status call(communicator& comm, const property_case& c, rank_frame& f) {
  options opt;
  opt.route = c.route;
  opt.alignment = c.alignment;
  opt.tiles = c.tiles;
  return run_collective(comm, c.coll, c.groups, f.send(), f.recv(), c.counts, c.type, c.op, opt);
}

}  // namespace relay::testing
