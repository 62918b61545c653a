// What the multi-process tests share: the communicator from the environment (relay-run sets
// it), one rank's buffer frame with canaries, and every rank's inputs regenerated on every rank
// from the case's seed (so any rank can compute the naive reference for all of them).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "relay/comm/collectives.hpp"
#include "relay/comm/from_environment.hpp"
#include "relay/transport/shm/factory.hpp"
#include "support/busy_margin.hpp"
#include "support/property_suite.hpp"

namespace relay::testing {

// The communicator over the shm transport, or over the one `factory` makes.
inline std::unique_ptr<communicator> connect_or_exit(
    const transport_factory& factory = shm_factory()) {
  std::unique_ptr<communicator> comm;
  if (status s = communicator_from_environment(factory, comm); !s) {
    std::fprintf(stderr, "cannot make the communicator: %s\n", s.to_string().c_str());
    std::exit(2);
  }
  return comm;
}

// How long a test's own synchronization of its ranks waits (a barrier before a fault, a wait for
// the others to give up): long, since it is not under test and ends only where a rank hangs.
inline constexpr std::chrono::milliseconds harness_wait{30'000};

// A scenario's checks: each that fails is said on stderr and counted; the scenario's rank exits
// non-zero when any failed.
inline int failures = 0;
inline void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "FAILED: %s\n", what.c_str());
    ++failures;
  }
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
  if (c.wire != wire_format::native && fp8_wire_dtype(c.type))  // as run_case: fp8 data on top
    for (auto& in : input)
      visit_dtype(c.type, [&](auto zero) {
        using T = decltype(zero);
        if constexpr (fp8_wire_type<T>)
          detail::fill_fp8<T>(in, rng, c.wire_data, reduces(c.coll) ? 2 * c.active : 1);
      });
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

// This rank's call of case `c` with its buffers (on `stream`, for GPU transports).
inline status call(communicator& comm, const property_case& c, buffer_view send, buffer_view recv,
                   void* stream = nullptr) {
  options opt;
  opt.route = c.route;
  opt.alignment = c.alignment;
  opt.tiles = c.tiles;
  opt.wire = c.wire;
  opt.wire_threshold = 0;  // an fp8 case takes the wire at every count
  return run_collective(comm, c.coll, c.groups, send, recv, c.counts, c.type, c.op, opt, stream);
}
inline status call(communicator& comm, const property_case& c, rank_frame& f) {
  return call(comm, c, f.send(), f.recv());
}

// One case made on every rank through `run(c, frame)`, which makes this rank's call with its
// frame and leaves the frame as the call left it: every rank checks its canaries and its
// untouched input, then every rank checks every rank's output (all-gathered through the
// bootstrap) against the naive reference (fp8 wire cases: against the fp8 bound). Returns what
// failed, empty when nothing did.
template <class Run>
std::string run_and_check(communicator& comm, const property_case& c, Run&& run) {
  const int me = comm.rank();
  const auto inputs = all_inputs(c);
  rank_frame frame(c, me, inputs[static_cast<std::size_t>(me)]);
  const status s = run(c, frame);
  std::string failure;
  if (!s) failure = "the call failed: " + s.to_string();
  if (failure.empty() && !frame.canaries_intact()) failure = "a canary byte changed";
  if (failure.empty() && !c.in_place && frame.in_bytes > 0 &&
      !std::equal(inputs[static_cast<std::size_t>(me)].begin(),
                  inputs[static_cast<std::size_t>(me)].end(),
                  frame.bytes.begin() + static_cast<std::ptrdiff_t>(frame.in_off)))
    failure = "the input changed out of place";
  // Every rank's verdict and output, to every rank.
  std::vector<std::byte> mine(1, std::byte{failure.empty() ? std::uint8_t{1} : std::uint8_t{0}});
  const auto out = frame.output();
  mine.insert(mine.end(), out.begin(), out.end());
  std::vector<std::vector<std::byte>> all;
  if (status g = comm.boot().all_gather(mine, all, std::chrono::seconds(60)); !g)
    return "gathering the outputs failed: " + g.to_string();
  std::vector<std::vector<std::byte>> outputs(all.size());
  std::string bad_ranks;
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all[r].empty() || all[r][0] != std::byte{1}) {
      // Appended in two parts: GCC 12 at -O3 warns (-Wrestrict, a false positive) about
      // " " + std::to_string(r) inlined here.
      bad_ranks += ' ';
      bad_ranks += std::to_string(r);
    }
    if (!all[r].empty()) outputs[r].assign(all[r].begin() + 1, all[r].end());
  }
  if (failure.empty() && !bad_ranks.empty()) failure = "ranks" + bad_ranks + " failed";
  const reference::call_data call{c.coll, c.type, c.op, c.groups, c.counts, inputs, outputs};
  if (failure.empty() && c.wire != wire_format::native) {
    const reference::wire_check m = reference::check_outputs_fp8(
        call, fp8_format_of(c.wire), reference::wire_hops(c.coll, c.route, c.active));
    if (m.wrong > 0)
      failure = std::to_string(m.wrong) + " elements outside the fp8 bound; first: " + m.first;
  } else if (failure.empty()) {
    const reference::mismatch_report m = reference::check_outputs(call);
    if (m.wrong > 0) failure = std::to_string(m.wrong) + " wrong elements; first: " + m.first;
  }
  return failure;
}

// The property run: `calls` random cases (all four collectives, A=2 and 4, fused and single, every
// route, dtype and operator, odd and zero counts, in and out of place; counts capped at
// `max_count`; a job of 2, one group of both on the direct route: whole_job_case), each checked
// by run_and_check. Returns the process's exit status; a failure names the call, the seed and the
// case. `fp8`: every case made an fp8 wire case (make_fp8), checked against the fp8 bound.
template <class Run>
int property_run(communicator& comm, int calls, std::uint64_t seed, std::int64_t max_count,
                 const char* where, Run&& run, bool fp8 = false) {
  std::mt19937_64 cases(seed);
  const auto start = std::chrono::steady_clock::now();
  std::int64_t elements = 0;
  for (int i = 0; i < calls; ++i) {
    property_case c = random_case(cases);
    if (!drawn_job_size(comm.size()))
      c = whole_job_case(c, comm.size());
    else
      while (c.ranks != comm.size() || c.active >= c.ranks)
        c = random_case(cases);
    for (auto& n : c.counts)
      n = std::min<std::int64_t>(n, max_count);
    if (fp8) make_fp8(c);
    if (const std::string failure = run_and_check(comm, c, run); !failure.empty()) {
      std::fprintf(stderr, "call %d of seed %llu: %s: %s\n", i,
                   static_cast<unsigned long long>(seed), c.describe().c_str(), failure.c_str());
      return 1;
    }
    for (auto n : c.counts)
      elements += n;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (comm.rank() == 0)
    std::printf(
        "%d calls over %d processes%s, every output right on every rank (seed %llu, %lld "
        "elements per group in all, %.1f s)\n",
        calls, comm.size(), where, static_cast<unsigned long long>(seed),
        static_cast<long long>(elements), seconds);
  return 0;
}

}  // namespace relay::testing
