// A GPU executor's output bytes against the host executor's: what the GPU executor's tests and
// the nccl transport's share (exec/test_gpu_properties.cpp,
// transport/nccl/test_nccl_transport.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "relay/api/collectives.hpp"
#include "relay/exec/host_executor.hpp"
#include "support/property_suite.hpp"

namespace relay::test {

// `coll` (allreduce or reduce-scatter, SUM) of random values in [-1, 1] on `ex` (an executor
// with device memory by rank: write, read, allocate, synchronize; ex.ranks() ranks) and on the
// host executor, in groups of A (ranks 0..A-1, A..2A-1, ...), with `opt`: every output byte the
// same (outputs poisoned alike on both).
template <class E>
void check_host_bits(E& ex, collective coll, dtype t, int A, const options& opt,
                     std::mt19937_64& rng) {
  const int N = ex.ranks();
  INFO(name(coll) << " " << name(t) << " A=" << A << " N=" << N);
  group_list groups;
  for (int g = 0; g < N / A; ++g) {
    groups.emplace_back();
    for (int j = 0; j < A; ++j)
      groups.back().push_back(g * A + j);
  }
  const std::int64_t count = 40'000 + 37;  // no chunk divides it
  const std::vector<std::int64_t> counts(groups.size(), count);
  const auto n = static_cast<std::size_t>(count), es = static_cast<std::size_t>(size_of(t));
  const std::size_t out_bytes = n * es;
  const std::size_t in_bytes =
      (coll == collective::reduce_scatter ? static_cast<std::size_t>(A) : 1) * out_bytes;
  std::vector<std::vector<std::byte>> input(static_cast<std::size_t>(N));
  std::vector<std::vector<std::byte>> host_out(  // poisoned on both executors
      static_cast<std::size_t>(N), std::vector<std::byte>(out_bytes, std::byte{0xA5}));
  std::vector<buffer_view> hs(static_cast<std::size_t>(N)), hr(hs.size()), ds(hs.size()),
      dr(hs.size());
  std::vector<void*> device;
  for (std::size_t r = 0; r < input.size(); ++r) {
    input[r].resize(in_bytes);
    visit_dtype(t, [&](auto zero) { testing::detail::fill_random<decltype(zero)>(input[r], rng); });
    hs[r] = {input[r].data(), in_bytes};
    hr[r] = {host_out[r].data(), out_bytes};
    void* d = ex.allocate(static_cast<int>(r), in_bytes + out_bytes);
    REQUIRE(d != nullptr);
    device.push_back(d);
    REQUIRE(ex.write(static_cast<int>(r), d, input[r].data(), in_bytes).ok());
    REQUIRE(ex.write(static_cast<int>(r), static_cast<char*>(d) + in_bytes, host_out[r].data(),
                     out_bytes)
                .ok());
    ds[r] = {d, in_bytes};
    dr[r] = {static_cast<char*>(d) + in_bytes, out_bytes};
  }
  host_executor host;
  auto run = [&](auto& e, buffer_views send, buffer_views recv) {
    return coll == collective::allreduce
               ? allreduce(e, groups, send, recv, counts, t, reduce_op::sum, opt)
               : reduce_scatter(e, groups, send, recv, counts, t, reduce_op::sum, opt);
  };
  REQUIRE(run(host, hs, hr).ok());
  REQUIRE(run(ex, ds, dr).ok());
  REQUIRE(ex.synchronize().ok());
  for (std::size_t r = 0; r < device.size(); ++r) {
    std::vector<std::byte> back(out_bytes);
    REQUIRE(ex.read(static_cast<int>(r), back.data(), dr[r].data, out_bytes).ok());
    // Counted, not compared as vectors: Catch2 would print every byte of both under -s.
    std::size_t differ = 0, first = 0;
    for (std::size_t i = 0; i < out_bytes; ++i)
      if (back[i] != host_out[r][i] && differ++ == 0) first = i;
    INFO("rank " << r << ": first differing byte " << first << " of " << out_bytes);
    CHECK(differ == 0);
    ex.deallocate(static_cast<int>(r), device[r]);
  }
}

}  // namespace relay::test
