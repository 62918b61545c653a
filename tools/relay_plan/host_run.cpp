#include "host_run.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

#include "call.hpp"
#include "relay/api/collectives.hpp"
#include "relay/check/reference.hpp"
#include "relay/check/wire_reference.hpp"
#include "relay/exec/host_executor.hpp"
#include "relay/plan/make_plan.hpp"
#include "relay/topology/parse.hpp"

namespace relay_plan {
namespace {

using bytes = std::vector<std::byte>;

// Floating values uniform in [-1, 1), so sums stay far from overflow and the reference's error
// bound stays tight; integers take every bit pattern (their sums wrap, the reference's too).
template <class T>
T random_value(std::mt19937_64& rng) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(rng());
  } else {
    const float x = std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
      return static_cast<T>(x);
    else
      return T::from_float(x);
  }
}

void fill_random(bytes& b, relay::dtype type, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  relay::visit_dtype(type, [&](auto zero) {
    using T = decltype(zero);
    for (std::size_t at = 0; at + sizeof(T) <= b.size(); at += sizeof(T)) {
      const T x = random_value<T>(rng);
      std::memcpy(b.data() + at, &x, sizeof(T));
    }
  });
}

// Every rank's memory for the call. Out of place: an input and an output allocation. In place:
// one allocation holding both where NCCL's layout puts them (the collective API recognizes the
// in-place form from exactly that layout).
struct call_memory {
  std::vector<bytes> storage;  // per rank: the input, or the one in-place buffer
  std::vector<bytes> outputs;  // per rank: the output, out of place
  std::vector<bytes> initial;  // storage as filled, to start every call from the same data
  std::vector<relay::buffer_view> send, recv;
};

call_memory allocate(const options& o, const std::vector<std::int64_t>& counts) {
  const relay::schedule_spec& s = o.spec;
  const auto R = static_cast<std::size_t>(s.ranks);
  const auto es = static_cast<std::size_t>(relay::size_of(o.type));
  call_memory m;
  m.storage.resize(R);
  m.outputs.resize(R);
  m.send.resize(R);
  m.recv.resize(R);
  for (int g = 0; g < s.groups(); ++g)
    for (int k = 0; k < s.active; ++k) {
      const auto rank = static_cast<std::size_t>(g * s.active + k);
      const std::int64_t n = counts[static_cast<std::size_t>(g)];
      const auto in = static_cast<std::size_t>(relay::input_elements(s.coll, s.active, n)) * es;
      const auto out = static_cast<std::size_t>(relay::output_elements(s.coll, s.active, n)) * es;
      bytes& mem = m.storage[rank];
      if (o.in_place) {
        const relay::in_place_offsets at = relay::in_place_layout(s.coll, k, n);
        const auto in_at = static_cast<std::size_t>(at.input) * es;
        const auto out_at = static_cast<std::size_t>(at.output) * es;
        mem.resize(std::max(in_at + in, out_at + out));
        m.send[rank] = {mem.data() + in_at, in};
        m.recv[rank] = {mem.data() + out_at, out};
      } else {
        mem.resize(in);
        m.outputs[rank].resize(out);
        m.send[rank] = {mem.data(), in};
        m.recv[rank] = {m.outputs[rank].data(), out};
      }
      fill_random(mem, o.type, 0x5eed0000 + rank);
    }
  m.initial = m.storage;
  return m;
}

// Back to the initial inputs, and outputs that hold nothing a correct call could leave: a call
// that skips an element is caught.
void reset(call_memory& m) {
  for (std::size_t r = 0; r < m.storage.size(); ++r) {
    std::copy(m.initial[r].begin(), m.initial[r].end(), m.storage[r].begin());
    std::fill(m.outputs[r].begin(), m.outputs[r].end(), std::byte{0xa5});
  }
}

// Copies of what the reference reads: each rank's input or output region, from its start.
std::vector<bytes> regions(const std::vector<relay::buffer_view>& views) {
  std::vector<bytes> out;
  for (const relay::buffer_view& v : views) {
    const auto* first = static_cast<const std::byte*>(v.data);
    out.emplace_back(first, first + v.bytes);
  }
  return out;
}

}  // namespace

std::int64_t run_memory_bytes(const options& o) {
  const std::vector<std::int64_t> counts = group_counts(o);
  const relay::schedule_spec& s = o.spec;
  const std::int64_t es = relay::size_of(o.type);
  std::int64_t bytes = 0;
  for (std::size_t g = 0; g < counts.size(); ++g)
    for (int k = 0; k < s.active; ++k) {
      const std::int64_t in = relay::input_elements(s.coll, s.active, counts[g]) * es;
      const std::int64_t out = relay::output_elements(s.coll, s.active, counts[g]) * es;
      std::int64_t storage = in;  // allocate(): the input, or the one in-place buffer
      if (o.in_place) {
        const relay::in_place_offsets at = relay::in_place_layout(s.coll, k, counts[g]);
        storage = std::max(at.input * es + in, at.output * es + out);
      }
      // storage, its initial copy, the output (out of place), the reference's input and output
      // copies (regions()).
      bytes += 2 * storage + (o.in_place ? 0 : out) + in + out;
    }
  relay::plan p;
  const relay::topology machine = *relay::parse_topology(o.topology, o.spec.ranks);
  if (relay::make_plan(make_request(o, counts, &machine), p))
    for (const std::uint64_t scratch : p.scratch_bytes)
      bytes += static_cast<std::int64_t>(scratch);
  // The executor's threads, the plans (the report's and the call's) and the allocator's own
  // bookkeeping (tests/tools/relay_plan/run_memory.py checks the estimate against the measured
  // peak).
  constexpr std::int64_t overhead = std::int64_t{16} << 20;
  return bytes + overhead;
}

run_result run_on_host(const options& o) {
  const std::vector<std::int64_t> counts = group_counts(o);
  const auto groups = canonical_groups(o.spec);
  call_memory m = allocate(o, counts);
  const std::vector<bytes> inputs = regions(m.send);
  relay::host_executor executor;
  const relay::topology machine = *relay::parse_topology(o.topology, o.spec.ranks);
  relay::wire_choice wire;
  relay::options call_options;
  call_options.route = o.spec.route;
  call_options.permille = o.spec.permille;
  call_options.tiles = o.spec.tiles;
  call_options.alignment = o.alignment;
  call_options.machine = &machine;
  call_options.wire = o.wire;
  call_options.wire_threshold = o.wire_threshold;
  call_options.wire_report = &wire;
  auto call = [&] {
    return relay::run_collective(executor, o.spec.coll, groups, m.send, m.recv, counts, o.type,
                                 o.op, call_options);
  };

  run_result r;
  r.memory_estimate = run_memory_bytes(o);
  r.status = call();  // a warm-up: the executor starts its rank threads on the first call
  if (!r.status.ok()) return r;
  reset(m);
  const auto start = std::chrono::steady_clock::now();
  r.status = call();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!r.status.ok()) return r;

  for (std::size_t g = 0; g < groups.size(); ++g)
    r.checked += o.spec.active * relay::output_elements(o.spec.coll, o.spec.active, counts[g]);
  const std::vector<bytes> outputs = regions(m.recv);
  const relay::reference::call_data data{o.spec.coll, o.type, o.op,   groups,
                                         counts,      inputs, outputs};
  if (wire.taken != relay::wire_format::native) {  // within the fp8 bound, not the native one
    const relay::reference::wire_check report = relay::reference::check_outputs_fp8(
        data, relay::fp8_format_of(wire.taken),
        relay::reference::wire_hops(o.spec.coll, o.spec.route, o.spec.active));
    r.wrong = report.wrong;
    r.first_wrong = report.first;
    r.max_relative_error = static_cast<double>(report.max_relative_error);
    return r;
  }
  const relay::reference::mismatch_report report = relay::reference::check_outputs(data);
  r.wrong = report.wrong;
  r.first_wrong = report.first;
  return r;
}

}  // namespace relay_plan
