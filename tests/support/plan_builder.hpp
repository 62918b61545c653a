// Builds a plan by hand, phase by phase: for tests of what runs plans (executors, lowering,
// validation) on plans that make_plan would never produce. And the request of a plain direct
// allreduce, for tests that want make_plan's plan of the simplest call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "relay/core/dtype.hpp"
#include "relay/plan/make_plan.hpp"
#include "relay/plan/plan.hpp"

namespace relay::test {

class plan_builder {
 public:
  plan_builder(int ranks, dtype t, int divisor = 1) {
    p_.spec.ranks = ranks;
    p_.type = t;
    p_.divisor = divisor;
    p_.input_bytes.assign(static_cast<std::size_t>(ranks), 0);
    p_.output_bytes.assign(static_cast<std::size_t>(ranks), 0);
    p_.scratch_bytes.assign(static_cast<std::size_t>(ranks), 0);
  }
  void sizes(int rank, std::uint64_t in, std::uint64_t out, std::uint64_t scratch) {
    const auto r = static_cast<std::size_t>(rank);
    p_.input_bytes[r] = in;
    p_.output_bytes[r] = out;
    p_.scratch_bytes[r] = scratch;
  }
  void begin(phase ph) {
    p_.phases.push_back({static_cast<std::uint16_t>(p_.phases.size()), ph,
                         static_cast<std::uint32_t>(p_.ops.size()), 0});
  }
  void copy(plan_operand src, plan_operand dst, std::uint64_t count) {
    add(phase::transfer, {src}, dst, count, false);
  }
  void reduce(const std::vector<plan_operand>& srcs, plan_operand dst, std::uint64_t count,
              bool finalize) {
    add(phase::reduce, srcs, dst, count, finalize);
  }
  const plan& get() const { return p_; }
  plan& edit() { return p_; }

 private:
  void add(phase ph, const std::vector<plan_operand>& srcs, plan_operand dst, std::uint64_t count,
           bool finalize) {
    if (p_.phases.empty() || p_.phases.back().phase != ph) begin(ph);
    p_.append({.step = p_.phases.back().step,
               .phase = ph,
               .dst = dst,
               .count = count,
               .finalize = finalize},
              srcs);
  }
  plan p_;
};

// An int32 allreduce on the direct route over `groups` of a node of `ranks`, one count per group;
// the other fields are plan_request's defaults.
inline plan_request direct_allreduce(mode m, int ranks, std::vector<std::vector<int>> groups,
                                     std::vector<std::int64_t> counts) {
  plan_request r;
  r.coll = collective::allreduce;
  r.mode = m;
  r.route = route::direct;
  r.ranks = ranks;
  r.groups = std::move(groups);
  r.counts = std::move(counts);
  r.type = dtype::int32;
  return r;
}

}  // namespace relay::test
