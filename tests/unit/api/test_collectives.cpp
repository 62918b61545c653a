// Small calls whose results are worked out by hand, and every validation error leaving the
// caller's buffers exactly as they were.
#include "relay/api/collectives.hpp"

#include <array>
#include <cstdint>
#include <cstring>

#include <catch2/catch.hpp>

#include "relay/exec/host_executor.hpp"

using namespace relay;

namespace {

template <class T>
std::vector<buffer_view> views(std::vector<std::vector<T>>& buffers) {
  std::vector<buffer_view> v;
  for (auto& b : buffers)
    v.push_back({b.data(), b.size() * sizeof(T)});
  return v;
}

// The host executor, remembering the spec of the last plan it was given.
struct recording_executor {
  host_executor inner;
  schedule_spec last{};
  status run(const plan& p, std::span<const buffer_view> in, std::span<const buffer_view> out) {
    last = p.spec;
    return inner.run(p, in, out);
  }
  void release_scratch() { inner.release_scratch(); }
};

}  // namespace

TEST_CASE("allreduce of small integers, by hand", "[api]") {
  host_executor ex;
  // Fused, N=4, A=2: groups {0,1} and {2,3}; count 3 and 2 (heterogeneous, below any chunk).
  std::vector<std::vector<std::int32_t>> send{{1, 2, 3}, {10, 20, 30}, {-5, 7}, {5, 1}};
  std::vector<std::vector<std::int32_t>> recv{{-1, -1, -1}, {-1, -1, -1}, {-1, -1}, {-1, -1}};
  const std::vector<std::int64_t> counts{3, 2};
  REQUIRE(allreduce(ex, {{0, 1}, {2, 3}}, views(send), views(recv), counts, dtype::int32,
                    reduce_op::sum)
              .ok());
  CHECK(recv[0] == std::vector<std::int32_t>{11, 22, 33});
  CHECK(recv[1] == std::vector<std::int32_t>{11, 22, 33});
  CHECK(recv[2] == std::vector<std::int32_t>{0, 8});
  CHECK(recv[3] == std::vector<std::int32_t>{0, 8});
  CHECK(send[0] == std::vector<std::int32_t>{1, 2, 3});  // out of place: inputs untouched
}

TEST_CASE("a group covering the node: the direct route, no helpers, by hand", "[api]") {
  host_executor ex;
  options direct;
  direct.route = route::direct;
  const std::vector<std::int64_t> counts{5};
  // A = N = 4 allreduce, count 5 (not a multiple of 4: the last piece takes the remainder).
  std::vector<std::vector<std::int32_t>> send{
      {1, 2, 3, 4, 5}, {10, 20, 30, 40, 50}, {100, 200, 300, 400, 500}, {-1, -2, -3, -4, -5}};
  std::vector<std::vector<std::int32_t>> recv(4, std::vector<std::int32_t>(5, -9));
  REQUIRE(allreduce(ex, {{0, 1, 2, 3}}, views(send), views(recv), counts, dtype::int32,
                    reduce_op::sum, direct)
              .ok());
  for (const auto& r : recv)
    CHECK(r == std::vector<std::int32_t>{110, 220, 330, 440, 550});
  // A = N = 2 all-gather, in place: rank k's input is slot k of its output.
  std::vector<std::vector<std::int64_t>> buf{{7, 8, -1, -1}, {-1, -1, 9, 6}};
  std::vector<buffer_view> out = views(buf), in = views(buf);
  in[1].data = buf[1].data() + 2;
  REQUIRE(
      all_gather(ex, {{0, 1}}, in, out, std::vector<std::int64_t>{2}, dtype::int64, direct).ok());
  CHECK(buf[0] == std::vector<std::int64_t>{7, 8, 9, 6});
  CHECK(buf[1] == std::vector<std::int64_t>{7, 8, 9, 6});
  // The relay route still needs a helper.
  const status s =
      allreduce(ex, {{0, 1, 2, 3}}, views(send), views(recv), counts, dtype::int32, reduce_op::sum);
  CHECK(s.code() == errc::invalid_schedule);
  CHECK(s.message().find("A = N: route direct") != std::string::npos);
}

TEST_CASE("integer AVG wraps in the type's width, then divides once (NCCL's semantics)", "[api]") {
  host_executor ex;
  // int8: 100 + 100 = 200 wraps to -56; -56 / 2 = -28. 7 + 2 = 9; 9 / 2 = 4 (truncated).
  std::vector<std::vector<std::int8_t>> send{{100, 7}, {100, 2}, {}, {}};
  std::vector<std::vector<std::int8_t>> recv{{0x5a, 0x5a}, {0x5a, 0x5a}, {}, {}};
  const std::vector<std::int64_t> counts{2};
  REQUIRE(
      allreduce(ex, {{0, 1}}, views(send), views(recv), counts, dtype::int8, reduce_op::avg).ok());
  CHECK(recv[0] == std::vector<std::int8_t>{-28, 4});
  CHECK(recv[1] == std::vector<std::int8_t>{-28, 4});
}

TEST_CASE("reduce-scatter, all-gather and all-to-all in place, by hand", "[api]") {
  host_executor ex;
  const std::vector<std::int64_t> one{2};
  {  // reduce-scatter A=2 (single, N=3): rank k's output is its own block of its input.
    std::vector<std::vector<float>> buf{{1, 2, 3, 4}, {10, 20, 30, 40}, {}};
    std::vector<buffer_view> send = views(buf), recv = views(buf);
    recv[1].data = buf[1].data() + 2;  // rank 1's block is the second
    REQUIRE(reduce_scatter(ex, {{0, 1}}, send, recv, one, dtype::float32, reduce_op::sum).ok());
    CHECK(buf[0][0] == 11);
    CHECK(buf[0][1] == 22);
    CHECK(buf[1][2] == 33);
    CHECK(buf[1][3] == 44);
  }
  {  // all-gather A=2 in place: the input is the rank's own slot of the output.
    std::vector<std::vector<double>> buf{{1.5, 2.5, -7, -7}, {-7, -7, 3.25, 4.25}, {}};
    std::vector<buffer_view> recv = views(buf), send = views(buf);
    send[1].data = buf[1].data() + 2;
    REQUIRE(all_gather(ex, {{0, 1}}, send, recv, one, dtype::float64).ok());
    CHECK(buf[0] == std::vector<double>{1.5, 2.5, 3.25, 4.25});
    CHECK(buf[1] == std::vector<double>{1.5, 2.5, 3.25, 4.25});
  }
  {  // all-to-all A=2: segment j of rank k's output is segment k of rank j's input.
    std::vector<std::vector<std::uint8_t>> send{{1, 2, 3, 4}, {5, 6, 7, 8}, {}};
    std::vector<std::vector<std::uint8_t>> recv{{9, 9, 9, 9}, {9, 9, 9, 9}, {}};
    REQUIRE(all_to_all(ex, {{0, 1}}, views(send), views(recv), one, dtype::uint8).ok());
    CHECK(recv[0] == std::vector<std::uint8_t>{1, 2, 5, 6});
    CHECK(recv[1] == std::vector<std::uint8_t>{3, 4, 7, 8});
  }
}

TEST_CASE("a failed call leaves every buffer as it was", "[api]") {
  host_executor ex;
  const std::int64_t n = 3000;
  auto fresh = [&] {
    std::vector<std::vector<float>> b(8, std::vector<float>(2 * n));
    for (std::size_t r = 0; r < 8; ++r)
      for (std::size_t i = 0; i < b[r].size(); ++i)
        b[r][i] = static_cast<float>(r * 10000 + i) + 0.5f;
    return b;
  };
  const group_list fused{{0, 1}, {2, 3}, {4, 5}, {6, 7}};
  const std::vector<std::int64_t> counts(4, n);
  struct bad_call {
    const char* what;
    errc code;
    std::function<status(std::vector<std::vector<float>>&, std::vector<std::vector<float>>&)> call;
  };
  const std::vector<bad_call> calls{
      {"power of two", errc::invalid_schedule,
       [&](auto& s, auto& r) {
         return allreduce(ex, {{0, 1, 2}}, views(s), views(r), std::vector<std::int64_t>{n},
                          dtype::float32, reduce_op::sum);
       }},
      {"at least one helper", errc::invalid_schedule,
       [&](auto& s, auto& r) {
         return allreduce(ex, {{0, 1, 2, 3, 4, 5, 6, 7}}, views(s), views(r),
                          std::vector<std::int64_t>{n}, dtype::float32, reduce_op::sum);
       }},
      {"covering every rank", errc::invalid_group,
       [&](auto& s, auto& r) {
         return allreduce(ex, {{0, 1}, {2, 3}}, views(s), views(r), std::vector<std::int64_t>{n, n},
                          dtype::float32, reduce_op::sum);
       }},
      {"active in two groups", errc::invalid_group,
       [&](auto& s, auto& r) {
         return allreduce(ex, {{0, 1}, {1, 3}, {4, 5}, {6, 7}}, views(s), views(r), counts,
                          dtype::float32, reduce_op::sum);
       }},
      {"appears twice", errc::invalid_group,
       [&](auto& s, auto& r) {
         return allreduce(ex, {{2, 2}}, views(s), views(r), std::vector<std::int64_t>{n},
                          dtype::float32, reduce_op::sum);
       }},
      {"outside", errc::invalid_group,
       [&](auto& s, auto& r) {
         return allreduce(ex, {{0, 9}}, views(s), views(r), std::vector<std::int64_t>{n},
                          dtype::float32, reduce_op::sum);
       }},
      {"is null", errc::invalid_buffer,
       [&](auto& s, auto& r) {
         auto send = views(s);
         send[5].data = nullptr;
         return allreduce(ex, fused, send, views(r), counts, dtype::float32, reduce_op::sum);
       }},
      {"holds", errc::invalid_buffer,
       [&](auto& s, auto& r) {
         auto recv = views(r);
         recv[6].bytes = 4;
         return allreduce(ex, fused, views(s), recv, counts, dtype::float32, reduce_op::sum);
       }},
      {"no in-place form", errc::unsupported,
       [&](auto& s, auto&) {
         return all_to_all(ex, fused, views(s), views(s), counts, dtype::float32);
       }},
      {"unknown dtype", errc::unsupported,
       [&](auto& s, auto& r) {
         return allreduce(ex, fused, views(s), views(r), counts, static_cast<dtype>(42),
                          reduce_op::sum);
       }},
      {"unknown reduction operator", errc::unsupported,
       [&](auto& s, auto& r) {
         return reduce_scatter(ex, fused, views(s), views(r), counts, dtype::float32,
                               static_cast<reduce_op>(9));
       }},
      {"one count per group", errc::invalid_count,
       [&](auto& s, auto& r) {
         return allreduce(ex, fused, views(s), views(r), std::vector<std::int64_t>{n},
                          dtype::float32, reduce_op::sum);
       }},
  };
  for (const bad_call& c : calls) {
    auto send = fresh(), recv = fresh();
    const auto send_before = send, recv_before = recv;
    const status s = c.call(send, recv);
    INFO(c.what << " -> " << s.to_string());
    CHECK(s.code() == c.code);
    CHECK_THAT(s.message(), Catch::Contains(c.what));
    CHECK(send == send_before);
    CHECK(recv == recv_before);
  }
}

TEST_CASE("counts of any integer type: NCCL code's std::vector<size_t>, int, uint32_t", "[api]") {
  host_executor ex;
  std::vector<std::vector<std::int32_t>> send{{1, 2, 3}, {10, 20, 30}, {-5, 7}, {5, 1}};
  std::vector<std::vector<std::int32_t>> recv(4);
  auto poison = [&] {
    for (std::size_t r = 0; r < 4; ++r)
      recv[r].assign(send[r].size(), -1);
  };
  poison();
  const std::vector<std::size_t> sizes{3, 2};
  REQUIRE(
      allreduce(ex, {{0, 1}, {2, 3}}, views(send), views(recv), sizes, dtype::int32, reduce_op::sum)
          .ok());
  CHECK(recv[1] == std::vector<std::int32_t>{11, 22, 33});
  CHECK(recv[3] == std::vector<std::int32_t>{0, 8});
  poison();
  const std::array<int, 2> ints{3, 2};
  REQUIRE(
      allreduce(ex, {{0, 1}, {2, 3}}, views(send), views(recv), ints, dtype::int32, reduce_op::sum)
          .ok());
  CHECK(recv[0] == std::vector<std::int32_t>{11, 22, 33});
  // all-gather A=2 (N=4 fused): rank k's 2 elements land at block k of both outputs.
  std::vector<std::vector<std::int32_t>> gathered(4, std::vector<std::int32_t>(4, -1));
  std::vector<std::vector<std::int32_t>> parts{{1, 2}, {3, 4}, {5, 6}, {7, 8}};
  const std::vector<std::uint32_t> two{2, 2};
  REQUIRE(all_gather(ex, {{0, 1}, {2, 3}}, views(parts), views(gathered), two, dtype::int32).ok());
  CHECK(gathered[0] == std::vector<std::int32_t>{1, 2, 3, 4});
  CHECK(gathered[3] == std::vector<std::int32_t>{5, 6, 7, 8});
}

TEST_CASE("counts that do not fit std::int64_t are refused, buffers untouched", "[api]") {
  host_executor ex;
  std::vector<std::vector<float>> send(4, std::vector<float>(4, 1.0f));
  std::vector<std::vector<float>> recv(4, std::vector<float>(4, -7.0f));
  const std::vector<std::uint64_t> huge{4, std::uint64_t{1} << 63};
  const status st = allreduce(ex, {{0, 1}, {2, 3}}, views(send), views(recv), huge, dtype::float32,
                              reduce_op::sum);
  CHECK(st.code() == errc::invalid_count);
  CHECK(st.to_string() ==
        "invalid count: count 9223372036854775808 of group 1 does not fit std::int64_t");
  for (const auto& r : recv)
    CHECK(r == std::vector<float>(4, -7.0f));
  // A negative int reaches the plan's own check, which names it.
  const std::vector<int> negative{4, -1};
  CHECK(reduce_scatter(ex, {{0, 1}, {2, 3}}, views(send), views(recv), negative, dtype::float32,
                       reduce_op::sum)
            .code() == errc::invalid_count);
}

TEST_CASE("7 inputs and 8 outputs: the error names the mismatch, not a group's rank", "[api]") {
  host_executor ex;
  std::vector<std::vector<float>> send(7, std::vector<float>(4, 1.0f));
  std::vector<std::vector<float>> recv(8, std::vector<float>(4, -7.0f));
  const group_list fused{{0, 1}, {2, 3}, {4, 5}, {6, 7}};
  const status st = allreduce(ex, fused, views(send), views(recv), std::vector<std::int64_t>(4, 4),
                              dtype::float32, reduce_op::sum);
  CHECK(st.to_string() ==
        "invalid buffer: 7 inputs (send) and 8 outputs (recv) were given; give one of each per "
        "rank");
  for (const auto& r : recv)
    CHECK(r == std::vector<float>(4, -7.0f));
}

TEST_CASE("in place but for rank 1's output, one element on: the error names rank 1", "[api]") {
  host_executor ex;
  // The README's call: allreduce, 4 pairs, recv == send on every rank but rank 1, whose recv
  // starts one float (4 bytes) into its input. 7 of 8 ranks are in place, so the call is; rank 1
  // is not where NCCL's in-place layout puts it (0 bytes from its input).
  const std::int64_t n = 16;
  std::vector<std::vector<float>> buf(8, std::vector<float>(n + 1, 2.5f));
  std::vector<buffer_view> send, recv;
  for (std::size_t r = 0; r < 8; ++r) {
    send.push_back({buf[r].data(), n * sizeof(float)});
    recv.push_back({buf[r].data() + (r == 1 ? 1 : 0), n * sizeof(float)});
  }
  const auto before = buf;
  const status st = allreduce(ex, {{0, 1}, {2, 3}, {4, 5}, {6, 7}}, send, recv,
                              std::vector<std::int64_t>(4, n), dtype::float32, reduce_op::sum);
  CHECK(st.to_string() ==
        "invalid buffer: in place, the output of rank 1 must start 0 bytes from its input (NCCL's "
        "in-place layout); it starts 4");
  CHECK(buf == before);
  // The other way round: out of place on every rank but rank 3, whose recv == send. The call is
  // out of place, and rank 3's output overlaps its input.
  std::vector<std::vector<float>> out(8, std::vector<float>(n, -1.0f));
  for (std::size_t r = 0; r < 8; ++r)
    recv[r] = {out[r].data(), n * sizeof(float)};
  recv[3] = send[3];
  CHECK(allreduce(ex, {{0, 1}, {2, 3}, {4, 5}, {6, 7}}, send, recv, std::vector<std::int64_t>(4, n),
                  dtype::float32, reduce_op::sum)
            .to_string() ==
        "invalid buffer: the output of rank 3 overlaps the input of rank 3 (out of place; pass the "
        "in-place layout for in place)");
  CHECK(buf == before);
}

TEST_CASE("reduce-scatter with recv == send and count 2^61 + 1 (fp64) is refused by its count",
          "[api]") {
  // In-place detection forms no byte offset from a count a plan refuses (no signed overflow).
  host_executor ex;
  std::vector<std::vector<double>> buf(8, std::vector<double>(4, 1.0));
  std::vector<buffer_view> v = views(buf);
  const std::vector<std::int64_t> counts(4, (std::int64_t{1} << 61) + 1);
  CHECK(reduce_scatter(ex, {{0, 1}, {2, 3}, {4, 5}, {6, 7}}, v, v, counts, dtype::float64,
                       reduce_op::sum)
            .to_string() ==
        "invalid count: count 2305843009213693953 of group 0 is negative or too large");
  CHECK(buf == std::vector<std::vector<double>>(8, std::vector<double>(4, 1.0)));
}

TEST_CASE("route::automatic: direct for a small call, relay for a large one", "[api]") {
  // Allreduce A=2 N=8 fused, float32, priced on MI300X (48 GB/s a link, 10 us a step):
  //   relay  20 us + (n/4) * 4 B / 48 GB/s = 20 us + n / 48e9 s
  //   direct 10 us +  n    * 4 B / 48 GB/s = 10 us + n / 12e9 s
  // equal at n = 160,000. n = 1,000: direct 10.08 us, relay 20.02 us, so direct. n = 2^18: direct
  // 31.8 us, relay 25.5 us, so relay.
  recording_executor ex;
  options automatic;
  automatic.route = route::automatic;
  const group_list fused{{0, 1}, {2, 3}, {4, 5}, {6, 7}};
  for (const auto& [n, expected] :
       {std::pair<std::size_t, route>{1000, route::direct}, {std::size_t{1} << 18, route::relay}}) {
    INFO("n = " << n);
    std::vector<std::vector<float>> send(8, std::vector<float>(n)), recv(8, std::vector<float>(n));
    for (std::size_t r = 0; r < 8; ++r)
      for (std::size_t i = 0; i < n; ++i) {
        send[r][i] = static_cast<float>(r * 8 + i % 5);
        recv[r][i] = -1.0f;  // poison
      }
    REQUIRE(allreduce(ex, fused, views(send), views(recv), std::vector<std::size_t>(4, n),
                      dtype::float32, reduce_op::sum, automatic)
                .ok());
    CHECK(ex.last.route == expected);
    // Either route computes the same sums: ranks 2g and 2g+1 hold 8(4g + 1) + 2(i % 5).
    std::size_t wrong = 0;
    for (std::size_t r = 0; r < 8; ++r)
      for (std::size_t i = 0; i < n; ++i)
        wrong += recv[r][i] != static_cast<float>(8 * (4 * (r / 2) + 1) + 2 * (i % 5));
    CHECK(wrong == 0);
  }
}
