// The caller's buffers against a plan: present, large enough, laid out in place exactly as NCCL
// lays them out, and otherwise not overlapping. Checked before anything is written, so a call
// that fails leaves every buffer as it was.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "relay/core/status.hpp"
#include "relay/plan/plan.hpp"

namespace relay {

namespace detail {

inline std::uintptr_t address(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p);
}

inline bool overlap(const buffer_view& a, std::uint64_t a_bytes, const buffer_view& b,
                    std::uint64_t b_bytes) {
  return a_bytes > 0 && b_bytes > 0 && address(a.data) < address(b.data) + b_bytes &&
         address(b.data) < address(a.data) + a_bytes;
}

// Where NCCL's in-place layout puts the output relative to the input, in bytes, for the active
// rank with index k of a group of count n (all-gather: the input inside the output instead).
// False for a count no plan takes (negative or above max_plan_count, which make_plan refuses):
// the product is only formed where it cannot overflow.
inline bool in_place_delta(collective c, int k, std::int64_t n, int element_size,
                           std::int64_t& delta) {
  if (n < 0 || n > max_plan_count || k < 0 || k > max_ranks || element_size < 0 ||
      element_size > 16)
    return false;
  const in_place_offsets at = in_place_layout(c, k, n);
  delta = (at.output - at.input) * element_size;
  return true;
}

// recv - send in bytes, as NCCL's in-place forms compare them (modular, never overflowing).
inline std::int64_t distance(const buffer_view& send, const buffer_view& recv) {
  return static_cast<std::int64_t>(address(recv.data) - address(send.data));
}

// One buffer of a rank: present, aligned to its elements, large enough for `needed` bytes.
inline status check_buffer(const char* what, std::size_t rank, const buffer_view& b,
                           std::uint64_t needed, int element_size) {
  if (needed == 0) return {};
  if (b.data == nullptr)
    return {errc::invalid_buffer,
            std::string(what) + " of rank " + std::to_string(rank) + " is null"};
  if (address(b.data) % static_cast<std::uintptr_t>(element_size) != 0)
    return {errc::invalid_buffer, std::string(what) + " of rank " + std::to_string(rank) +
                                      " is not aligned to its " + std::to_string(element_size) +
                                      "-byte elements"};
  if (b.bytes < needed)
    return {errc::invalid_buffer, std::string(what) + " of rank " + std::to_string(rank) +
                                      " holds " + std::to_string(b.bytes) +
                                      " bytes; the call needs " + std::to_string(needed)};
  return {};
}

// In place: the output where NCCL's layout puts it, `delta` bytes from the input.
inline status check_in_place(std::size_t rank, std::int64_t delta, const buffer_view& send,
                             const buffer_view& recv) {
  const std::int64_t at = distance(send, recv);
  if (at == delta) return {};
  return {errc::invalid_buffer, "in place, the output of rank " + std::to_string(rank) +
                                    " must start " + std::to_string(delta) +
                                    " bytes from its input (NCCL's in-place layout); it starts " +
                                    std::to_string(at)};
}

}  // namespace detail

// How the caller's buffers sit: in place when the active ranks' recv sits where NCCL's in-place
// form puts it relative to send (allreduce: the same; reduce-scatter: send + k*n; all-gather:
// send == recv + k*n). The collective calls use this to choose between the in-place and
// out-of-place plans. Ranks whose group's count is 0 (no buffers to speak of), and ranks and
// counts that make_plan refuses, have no vote. Where the ranks disagree, the majority decides
// (a tie: in place), so validate_buffers then names a rank that differs from the others: with
// every rank in place but one, that rank's output is not where the in-place form puts it.
inline bool buffers_in_place(collective c, const std::vector<std::vector<int>>& groups,
                             std::span<const std::int64_t> counts, int element_size,
                             std::span<const buffer_view> send, std::span<const buffer_view> recv) {
  if (!has_in_place(c)) return false;
  std::size_t placed = 0, apart = 0;
  for (std::size_t g = 0; g < groups.size() && g < counts.size(); ++g)
    for (std::size_t k = 0; k < groups[g].size(); ++k) {
      const int rank = groups[g][k];
      std::int64_t delta = 0;
      if (counts[g] == 0 || rank < 0 || static_cast<std::size_t>(rank) >= send.size() ||
          static_cast<std::size_t>(rank) >= recv.size() ||
          !detail::in_place_delta(c, static_cast<int>(k), counts[g], element_size, delta))
        continue;
      const auto r = static_cast<std::size_t>(rank);
      ++(detail::distance(send[r], recv[r]) == delta ? placed : apart);
    }
  return placed > 0 && placed >= apart;
}

// Checks the buffers for a run of `p`; the message names the rank and the buffer.
inline status validate_buffers(const plan& p, std::span<const buffer_view> inputs,
                               std::span<const buffer_view> outputs) {
  const auto R = static_cast<std::size_t>(p.ranks());
  if (inputs.size() != R || outputs.size() != R)
    return {errc::invalid_buffer, "the plan has " + std::to_string(R) + " ranks but " +
                                      std::to_string(inputs.size()) + " inputs and " +
                                      std::to_string(outputs.size()) + " outputs were given"};
  for (std::size_t r = 0; r < R; ++r) {
    if (status s =
            detail::check_buffer("the input", r, inputs[r], p.input_bytes[r], p.element_size());
        !s)
      return s;
    if (status s =
            detail::check_buffer("the output", r, outputs[r], p.output_bytes[r], p.element_size());
        !s)
      return s;
  }
  // In place: recv must sit where NCCL's layout puts it. Out of place: no output may overlap
  // any input or another output (a reduction would read what another rank already wrote).
  for (std::size_t g = 0; g < p.groups.size(); ++g)
    for (std::size_t k = 0; k < p.groups[g].size(); ++k) {
      const auto r = static_cast<std::size_t>(p.groups[g][k]);
      std::int64_t delta = 0;
      if (!p.in_place || p.output_bytes[r] == 0 ||
          !detail::in_place_delta(p.spec.coll, static_cast<int>(k), p.counts[g], p.element_size(),
                                  delta))
        continue;
      if (status s = detail::check_in_place(r, delta, inputs[r], outputs[r]); !s) return s;
    }
  for (std::size_t a = 0; a < R; ++a)
    for (std::size_t b = 0; b < R; ++b) {
      if (a == b && p.spec.coll == collective::all_to_all &&
          detail::overlap(outputs[a], p.output_bytes[a], inputs[a], p.input_bytes[a]))
        return {errc::unsupported, "all-to-all has no in-place form: the output of rank " +
                                       std::to_string(a) + " overlaps its input"};
      if (!p.in_place || a != b)
        if (detail::overlap(outputs[a], p.output_bytes[a], inputs[b], p.input_bytes[b]))
          return {errc::invalid_buffer,
                  "the output of rank " + std::to_string(a) + " overlaps the input of rank " +
                      std::to_string(b) +
                      (a == b ? " (out of place; pass the in-place layout for in place)" : "")};
      if (a < b && detail::overlap(outputs[a], p.output_bytes[a], outputs[b], p.output_bytes[b]))
        return {errc::invalid_buffer, "the outputs of ranks " + std::to_string(a) + " and " +
                                          std::to_string(b) + " overlap"};
    }
  return {};
}

}  // namespace relay
