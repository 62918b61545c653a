// nccl-tests' size, count and bandwidth conventions, against numbers worked out by hand.
#include "report/conventions.hpp"

#include <catch2/catch.hpp>

using namespace relay;
using namespace relay::bench;

TEST_CASE("bus factors: 2(A-1)/A for allreduce, (A-1)/A for the rest", "[bench]") {
  CHECK(bus_factor(collective::allreduce, 2) == 1.0);
  CHECK(bus_factor(collective::allreduce, 4) == 1.5);
  CHECK(bus_factor(collective::allreduce, 8) == 1.75);
  CHECK(bus_factor(collective::reduce_scatter, 4) == 0.75);
  CHECK(bus_factor(collective::all_gather, 2) == 0.5);
  CHECK(bus_factor(collective::all_to_all, 8) == 0.875);
}

TEST_CASE("size and count: the larger buffer of one active rank", "[bench]") {
  // 1 MiB of bf16 is 524288 elements. Allreduce: n = count. The others: n = count / A, and the
  // size is the A*n-element buffer (the input, or all-gather's output).
  CHECK(group_count(collective::allreduce, 4, 1 << 20, 2) == 524288);
  CHECK(group_count(collective::reduce_scatter, 4, 1 << 20, 2) == 131072);
  CHECK(group_count(collective::all_gather, 2, 1 << 20, 2) == 262144);
  CHECK(call_bytes(collective::all_gather, 2, 262144, 2) == 1 << 20);
  CHECK(call_bytes(collective::all_to_all, 4, 131072, 2) == 1 << 20);
  // Rounded down as nccl-tests rounds: 4100 bytes of float32 for A=4 is 256 per rank (4096 B).
  CHECK(group_count(collective::reduce_scatter, 4, 4100, 4) == 256);
  CHECK(call_bytes(collective::reduce_scatter, 4, 256, 4) == 4096);
}

TEST_CASE("algbw and busbw in GB/s (10^9 bytes)", "[bench]") {
  // 1 GB in 10 ms: 100 GB/s algbw; allreduce A=4 busbw 150 GB/s.
  CHECK(algbw_gbps(1000000000, 0.01) == Approx(100.0));
  CHECK(busbw_gbps(collective::allreduce, 4, 1000000000, 0.01) == Approx(150.0));
  CHECK(busbw_gbps(collective::all_to_all, 2, 1000000000, 0.01) == Approx(50.0));
  CHECK(algbw_gbps(4096, 0.0) == 0.0);
}
