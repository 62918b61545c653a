// The communicator in one process: a callback bootstrap plays the other ranks and a recording
// transport stands in for shm, so the plan cache, what reaches the transport's agreement (every
// call, refused or not) and the explanation of a mismatch are checked exactly.
#include "relay/comm/communicator.hpp"

#include <catch2/catch.hpp>

#include "relay/bootstrap/callback_bootstrap.hpp"
#include "relay/comm/collectives.hpp"

using namespace relay;

namespace {

struct recorded {
  std::uint64_t sequence = 0, fingerprint = 0;
  placement where = placement::helper;
  errc local = errc::ok;
  int plan_ranks = -1;  // -1: no plan (refused before one was made)
  std::size_t slice_phases = 0;
  route plan_route = route::relay;
  precision plan_precision = precision::fp32_partials;
};

class recording_transport final : public transport {
 public:
  // `verdict`, where set, is what every call's agreement says (as the peers' records would).
  recording_transport(std::vector<recorded>& calls, const status& verdict)
      : calls_(calls), verdict_(verdict) {}
  std::string_view name() const override { return "recording"; }
  bool broken() const override { return false; }
  void abort(const status&) override {}
  status run(const call_context& c) override {
    recorded r{c.sequence, c.fingerprint, c.placement, c.local.code()};
    if (c.p != nullptr)
      r = {c.sequence,   c.fingerprint,          c.placement,     c.local.code(),
           c.p->ranks(), c.slice->phases.size(), c.p->spec.route, c.p->precision};
    calls_.push_back(r);
    return verdict_.ok() ? c.local : verdict_;
  }

 private:
  std::vector<recorded>& calls_;
  const status& verdict_;
};

// Rank 1 of 4. The other ranks contribute what this rank does, except that `odd_rank` (when
// >= 0) contributes `odd_text`.
struct fixture {
  std::vector<recorded> calls;
  int gathers = 0, odd_rank = -1;
  std::string odd_text = "allreduce something else";
  status verdict;  // what the transport's agreement returns (ok: each rank's own status)
  communicator comm;

  explicit fixture(std::size_t cache = 64)
      : comm(std::make_shared<callback_bootstrap>(
                 1, 4,
                 [this](std::span<const std::byte> mine, std::vector<std::vector<std::byte>>& all,
                        milliseconds) {
                   ++gathers;
                   all.assign(4, std::vector<std::byte>(mine.begin(), mine.end()));
                   if (odd_rank >= 0) {
                     const auto* p = reinterpret_cast<const std::byte*>(odd_text.data());
                     all[static_cast<std::size_t>(odd_rank)].assign(p, p + odd_text.size());
                   }
                   return status{};
                 }),
             std::make_unique<recording_transport>(calls, verdict),
             comm_config{0, milliseconds(100), cache}) {}

  status allreduce_pairs(std::int64_t count, buffer_view send, buffer_view recv) {
    const group_list groups{{0, 1}, {2, 3}};
    const std::vector<std::int64_t> counts{count, count};
    return relay::allreduce(comm, groups, send, recv, counts, dtype::int32, reduce_op::sum);
  }
};

}  // namespace

TEST_CASE("every call goes to the transport's agreement with its shape's fingerprint", "[comm]") {
  fixture f;
  alignas(8) std::byte memory[256];
  const buffer_view in{memory, 32}, out{memory + 64, 32};
  REQUIRE(f.allreduce_pairs(8, in, out));
  REQUIRE(f.allreduce_pairs(8, in, out));
  CHECK(f.gathers == 0);  // no bootstrap exchange on the call path, first call or not
  REQUIRE(f.calls.size() == 2);
  CHECK(f.calls[0].sequence == 1);
  CHECK(f.calls[1].sequence == 2);
  CHECK(f.calls[0].fingerprint != 0);
  CHECK(f.calls[0].fingerprint == f.calls[1].fingerprint);
  CHECK(f.calls[0].where == placement::out_of_place);
  CHECK(f.calls[0].plan_ranks == 4);
  CHECK(f.calls[0].slice_phases > 0);
  // Another count is another shape: another fingerprint. In place is no part of the shape (the
  // plan is the out-of-place one): same shape, the placement says in place.
  REQUIRE(f.allreduce_pairs(4, in, {memory + 64, 16}));
  REQUIRE(f.allreduce_pairs(4, {memory, 16}, {memory, 16}));
  CHECK(f.gathers == 0);
  REQUIRE(f.calls.size() == 4);
  CHECK(f.calls[2].fingerprint != f.calls[0].fingerprint);
  CHECK(f.calls[3].fingerprint == f.calls[2].fingerprint);
  CHECK(f.calls[3].where == placement::in_place);
  CHECK(f.comm.cached_shapes() == 2);
}

TEST_CASE("a mismatch verdict is explained: every rank shows what it called", "[comm]") {
  fixture f;
  f.odd_rank = 3;
  f.verdict = {errc::mismatch, "rank(s) 3 called call #1 with arguments that differ from rank 0's"};
  alignas(8) std::byte memory[256];
  std::vector<std::int32_t> poison(8, 0x7f7f7f7f);
  const status s = f.allreduce_pairs(8, {memory, 32}, {poison.data(), 32});
  CHECK(s.code() == errc::mismatch);
  CHECK(s.message().find("rank(s) 3 called allreduce something else; rank 0 called allreduce "
                         "fused relay") == 0);
  CHECK(s.message().find("(rank(s) 3 called call #1 with arguments that differ") !=
        std::string::npos);
  CHECK(f.gathers == 1);  // the explanation, after the verdict
  CHECK(f.calls.size() == 1);
  // The texts agree (the verdict was about in place): the verdict's message stands.
  f.odd_rank = -1;
  f.verdict = {errc::mismatch,
               "rank 2 called call #2 in place but rank 3 out of place; every "
               "active rank must agree"};
  const status t = f.allreduce_pairs(8, {memory, 32}, {poison.data(), 32});
  CHECK(t.message() == f.verdict.message());
  CHECK(f.gathers == 2);
}

TEST_CASE("arguments make_plan refuses still take part in the agreement", "[comm]") {
  fixture f;
  const group_list groups{{0, 1}, {2, 7}};
  const std::vector<std::int64_t> counts{8, 8};
  const status s = relay::allreduce(f.comm, groups, {}, {}, counts, dtype::int32, reduce_op::sum);
  CHECK(s.code() == errc::invalid_group);
  CHECK(f.gathers == 0);
  REQUIRE(f.calls.size() == 1);  // the transport tells the peers (p is null: no plan)
  CHECK(f.calls[0].plan_ranks == -1);
  CHECK(f.calls[0].local == errc::invalid_group);
  CHECK(f.calls[0].sequence == 1);
  CHECK(f.calls[0].fingerprint != 0);  // compared: a peer that passed others sees a mismatch
  CHECK(f.comm.cached_shapes() == 0);
  // A count make_plan refuses on a shape that is otherwise good: refused too, in step.
  const group_list pairs{{0, 1}, {2, 3}};
  const status t = relay::allreduce(f.comm, pairs, {}, {}, std::vector<std::int64_t>{8, -1},
                                    dtype::int32, reduce_op::sum);
  CHECK(t.code() == errc::invalid_count);
  REQUIRE(f.calls.size() == 2);
  CHECK(f.calls[1].sequence == 2);
  CHECK(f.calls[1].local == errc::invalid_count);
}

TEST_CASE("refuse() takes part in the current call as a refusal without a shape", "[comm]") {
  fixture f;
  const status s = f.comm.refuse({errc::invalid_argument, "tensor 'x' has 3 elements, not 4"});
  CHECK(s.code() == errc::invalid_argument);
  CHECK(s.message() == "tensor 'x' has 3 elements, not 4");
  REQUIRE(f.calls.size() == 1);
  CHECK(f.calls[0].fingerprint == 0);  // not compared with the peers' shapes
  CHECK(f.calls[0].local == errc::invalid_argument);
  CHECK(f.calls[0].plan_ranks == -1);
  // The next call is the next in sequence on every rank.
  alignas(8) std::byte memory[256];
  REQUIRE(f.allreduce_pairs(8, {memory, 32}, {memory + 64, 32}));
  CHECK(f.calls[1].sequence == 2);
}

TEST_CASE("this rank's bad buffer goes to the transport, which tells the peers", "[comm]") {
  fixture f;
  alignas(8) std::byte memory[256];
  const status s = f.allreduce_pairs(8, {memory, 32}, {nullptr, 32});
  CHECK(s.message() == "the output of rank 1 is null");
  REQUIRE(f.calls.size() == 1);  // the protocol still runs
  CHECK(f.calls[0].local == errc::invalid_buffer);
}

TEST_CASE("the plan cache keeps the most recently used shapes", "[comm]") {
  fixture f(2);
  alignas(8) std::byte memory[256];
  for (std::int64_t n : {1, 2, 3, 2, 1})
    REQUIRE(f.allreduce_pairs(n, {memory, 64}, {memory + 128, 64}));
  // 1, 2, 3 fill and evict 1; 2 is cached; 1 comes back (evicting 3).
  CHECK(f.comm.cached_shapes() == 2);
  REQUIRE(f.calls.size() == 5);
  CHECK(f.calls[4].fingerprint == f.calls[0].fingerprint);
}

TEST_CASE("the options reach the plan: precision, and route::automatic made concrete", "[comm]") {
  fixture f;
  alignas(8) std::byte memory[256];
  const buffer_view in{memory, 32}, out{memory + 64, 32};
  const group_list groups{{0, 1}, {2, 3}};
  const std::vector<std::int64_t> counts{16, 16};  // bf16: 32 bytes each
  options opt;
  opt.precision = precision::native_partials;
  REQUIRE(relay::reduce_scatter(f.comm, groups, {memory, 64}, out, counts, dtype::bfloat16,
                                reduce_op::sum, opt));
  // The same call with fp32 partials is another shape (another fingerprint), with its own plan.
  opt.precision = precision::fp32_partials;
  REQUIRE(relay::reduce_scatter(f.comm, groups, {memory, 64}, out, counts, dtype::bfloat16,
                                reduce_op::sum, opt));
  CHECK(f.calls.at(1).fingerprint != f.calls.at(0).fingerprint);
  // Allreduce A=2 N=4 fused, int32, on MI300X (48 GB/s a link, 10 us a step): relay 20 us +
  // (n/2) * 4 B / 48 GB/s, direct 10 us + n * 4 B / 48 GB/s; at n = 8 direct (10.0007 us).
  opt.route = route::automatic;
  REQUIRE(relay::allreduce(f.comm, groups, in, out, std::vector<std::int64_t>{8, 8}, dtype::int32,
                           reduce_op::sum, opt));
  REQUIRE(f.calls.size() == 3);
  CHECK(f.calls[0].plan_precision == precision::native_partials);
  CHECK(f.calls[1].plan_precision == precision::fp32_partials);
  CHECK(f.calls[2].plan_route == route::direct);
}

TEST_CASE("a cached shape is found by its arguments as passed, and its plan stays put", "[comm]") {
  // Plans are recognised by address downstream (the ipc transport's repeated-call path), so a
  // cached shape's plan must not move while other shapes come and go.
  std::vector<const plan*> plans;
  class address_transport final : public transport {
   public:
    explicit address_transport(std::vector<const plan*>& out) : out_(out) {}
    std::string_view name() const override { return "addresses"; }
    bool broken() const override { return false; }
    void abort(const status&) override {}
    status run(const call_context& c) override {
      out_.push_back(c.p);
      return {};
    }

   private:
    std::vector<const plan*>& out_;
  };
  int gathers = 0;
  communicator comm(std::make_shared<callback_bootstrap>(
                        0, 4,
                        [&](std::span<const std::byte> mine,
                            std::vector<std::vector<std::byte>>& all, milliseconds) {
                          ++gathers;
                          all.assign(4, std::vector<std::byte>(mine.begin(), mine.end()));
                          return status{};
                        }),
                    std::make_unique<address_transport>(plans),
                    comm_config{0, milliseconds(100), 3});
  alignas(8) std::byte memory[512];
  const buffer_view in{memory, 128}, out{memory + 256, 128};
  auto call = [&](group_list groups, std::int64_t n, route r) {
    options opt;
    opt.route = r;
    const std::vector<std::int64_t> counts(groups.size(), n);
    return relay::allreduce(comm, groups, in, out, counts, dtype::int32, reduce_op::sum, opt);
  };
  REQUIRE(call({{0, 1}, {2, 3}}, 8, route::relay));      // shape A
  REQUIRE(call({{1, 0}, {2, 3}}, 8, route::relay));      // B: the groups' order differs
  REQUIRE(call({{0, 1}, {2, 3}}, 8, route::automatic));  // C: the route as passed differs
  REQUIRE(call({{0, 1}, {2, 3}}, 8, route::relay));      // A again
  REQUIRE(call({{0, 1}, {2, 3}}, 8, route::automatic));  // C again (its route chosen once)
  CHECK(gathers == 0);
  REQUIRE(plans.size() == 5);
  CHECK(plans[3] == plans[0]);
  CHECK(plans[4] == plans[2]);
  CHECK(plans[1] != plans[0]);
  CHECK(plans[2] != plans[0]);
  // A fourth shape evicts the least recently used (B); A and C keep their plans where they were.
  REQUIRE(call({{0, 1}, {2, 3}}, 9, route::relay));
  REQUIRE(call({{0, 1}, {2, 3}}, 8, route::relay));
  REQUIRE(call({{0, 1}, {2, 3}}, 8, route::automatic));
  CHECK(plans[5] == plans[1]);  // the fourth shape took B's slot
  CHECK(plans[6] == plans[0]);
  CHECK(plans[7] == plans[2]);
  CHECK(comm.cached_shapes() == 3);
  REQUIRE(call({{1, 0}, {2, 3}}, 8, route::relay));  // B was evicted: made again, in D's slot
  CHECK(plans[8] == plans[1]);
  CHECK(gathers == 0);
}

TEST_CASE("buffer registration reaches the transport, one that stages every call accepts it",
          "[comm]") {
  // A transport that records what it is asked to register (the ipc transport exports and
  // exchanges; its behaviour is tested on a GPU: tests/gpu/ipc).
  struct call {
    void* p;
    std::size_t bytes;
    bool registering;
  };
  std::vector<call> asked;
  class registering_transport final : public transport {
   public:
    explicit registering_transport(std::vector<call>& out) : out_(out) {}
    std::string_view name() const override { return "registering"; }
    bool broken() const override { return false; }
    void abort(const status&) override {}
    status run(const call_context&) override { return {}; }
    status register_buffer(void* p, std::size_t bytes, milliseconds timeout) override {
      out_.push_back({p, bytes, true});
      return timeout == milliseconds(100) ? status{}
                                          : status{errc::invalid_argument, "not the timeout"};
    }
    status deregister_buffer(void* p, milliseconds) override {
      out_.push_back({p, 0, false});
      return {errc::invalid_argument, "not registered"};
    }

   private:
    std::vector<call>& out_;
  };
  auto gather = [](std::span<const std::byte>, std::vector<std::vector<std::byte>>&, milliseconds) {
    return status{};
  };
  alignas(8) std::byte memory[64];
  communicator comm(std::make_shared<callback_bootstrap>(0, 2, gather),
                    std::make_unique<registering_transport>(asked),
                    comm_config{0, milliseconds(100), 4});
  CHECK(comm.register_buffer(memory, 64));  // the communicator's timeout reaches it
  CHECK(comm.deregister_buffer(memory).message() == "not registered");
  REQUIRE(asked.size() == 2);
  CHECK(asked[0].p == memory);
  CHECK(asked[0].bytes == 64);
  CHECK(asked[0].registering);
  CHECK_FALSE(asked[1].registering);
  // The base transport (shm, nccl) stages every call: registration is accepted and changes nothing.
  fixture f;
  CHECK(f.comm.register_buffer(memory, 64));
  CHECK(f.comm.deregister_buffer(memory));
}

TEST_CASE("the slice reaching the transport is cut with the transport's fp8 ends", "[comm]") {
  // A transport whose receivers dequantize (ipc) gets two marks per phase, each phase's arrivals
  // being marks of their own; one whose senders run both ends (the default), one.
  struct ends_transport final : transport {
    ends_transport(fp8_ends e, int& m) : ends(e), marks(m) {}
    std::string_view name() const override { return "ends"; }
    bool broken() const override { return false; }
    void abort(const status&) override {}
    fp8_ends wire_ends() const override { return ends; }
    status run(const call_context& c) override {
      if (c.slice != nullptr) marks = c.slice->marks_per_phase;
      return c.local;
    }
    fp8_ends ends;
    int& marks;
  };
  for (const fp8_ends ends : {fp8_ends::sender, fp8_ends::receiver}) {
    int marks = 0;
    communicator comm(std::make_shared<callback_bootstrap>(
                          1, 4,
                          [](std::span<const std::byte> mine,
                             std::vector<std::vector<std::byte>>& all, milliseconds) {
                            all.assign(4, std::vector<std::byte>(mine.begin(), mine.end()));
                            return status{};
                          }),
                      std::make_unique<ends_transport>(ends, marks),
                      comm_config{0, milliseconds(100), 64});
    alignas(16) std::byte memory[256];
    options opt;
    opt.wire = wire_format::fp8_e4m3;
    opt.wire_threshold = 0;  // every size on the wire
    REQUIRE(relay::allreduce(comm, {{0, 1}, {2, 3}}, {memory, 128}, {memory + 128, 128},
                             std::vector<std::int64_t>{64, 64}, dtype::bfloat16, reduce_op::sum,
                             opt));
    CHECK(marks == (ends == fp8_ends::receiver ? 2 : 1));
  }
}

TEST_CASE("a call larger than the transport's area runs in pieces, each agreed on its own",
          "[comm][pieces]") {
  // A transport whose area holds 32768 bytes a rank. Reduce-scatter, fused A = 2 of N = 4 on the
  // direct route, float32, 8192 elements a group: a rank lays out its 2 input blocks, its output
  // and the peer's block in scratch, 16 bytes an element, 131072 bytes; 4 pieces of 2048 fit.
  struct seen {
    std::uint64_t sequence, fingerprint;
    errc local;
    std::int64_t plan_count;
    placement where;
    buffer_view send, recv;
    buffer_runs send_runs, recv_runs;
  };
  struct piece_transport final : transport {
    explicit piece_transport(std::vector<seen>& s) : calls(s) {}
    std::string_view name() const override { return "pieces"; }
    bool broken() const override { return false; }
    void abort(const status&) override {}
    std::uint64_t area_bytes() const override { return 32768; }
    status run(const call_context& c) override {
      calls.push_back({c.sequence, c.fingerprint, c.local.code(), c.p ? c.p->counts[0] : -1,
                       c.placement, c.send, c.recv, c.send_runs, c.recv_runs});
      return c.local;
    }
    std::vector<seen>& calls;
  };
  std::vector<seen> calls;
  communicator comm(std::make_shared<callback_bootstrap>(
                        1, 4,
                        [](std::span<const std::byte> mine,
                           std::vector<std::vector<std::byte>>& all, milliseconds) {
                          all.assign(4, std::vector<std::byte>(mine.begin(), mine.end()));
                          return status{};
                        }),
                    std::make_unique<piece_transport>(calls), comm_config{0, milliseconds(100), 8});
  std::vector<float> in(2 * 8192), out(8192);
  const group_list pairs{{0, 1}, {2, 3}};
  const std::vector<std::int64_t> counts{8192, 8192};
  options opt;
  opt.route = route::direct;
  REQUIRE(relay::reduce_scatter(comm, pairs, {in.data(), in.size() * 4},
                                {out.data(), out.size() * 4}, counts, dtype::float32,
                                reduce_op::sum, opt));
  REQUIRE(calls.size() == 4);
  auto* in_bytes = reinterpret_cast<std::byte*>(in.data());
  auto* out_bytes = reinterpret_cast<std::byte*>(out.data());
  for (std::size_t j = 0; j < 4; ++j) {
    const seen& c = calls[j];
    INFO("piece " << j);
    CHECK(c.sequence == j + 1);
    CHECK(c.plan_count == 2048);
    CHECK(c.where == placement::out_of_place);
    // Its elements 2048 j.. of each input block (8192 floats apart) and of the output.
    CHECK(c.send.data == in_bytes + j * 8192);
    CHECK(c.send.bytes == 16384);
    CHECK(c.send_runs.count == 2);
    CHECK(c.send_runs.stride == 32768);
    CHECK(c.recv.data == out_bytes + j * 8192);
    CHECK(c.recv.bytes == 8192);
    CHECK(c.recv_runs.count == 1);
    for (std::size_t k = 0; k < j; ++k)
      CHECK(c.fingerprint != calls[k].fingerprint);
  }
  // The next call, one that fits, is the next in sequence; a repeat of the large one is cut alike.
  REQUIRE(relay::reduce_scatter(comm, pairs, {in.data(), 64}, {out.data(), 32},
                                std::vector<std::int64_t>{8, 8}, dtype::float32, reduce_op::sum,
                                opt));
  REQUIRE(calls.size() == 5);
  CHECK(calls[4].sequence == 5);
  CHECK(calls[4].plan_count == 8);
  REQUIRE(relay::reduce_scatter(comm, pairs, {in.data(), in.size() * 4},
                                {out.data(), out.size() * 4}, counts, dtype::float32,
                                reduce_op::sum, opt));
  REQUIRE(calls.size() == 9);
  CHECK(calls[8].sequence == 9);
  CHECK(calls[8].fingerprint == calls[3].fingerprint);
  CHECK(comm.cached_shapes() == 2);
  // This rank's buffer refused: its first piece carries the refusal, and the call ends there.
  const status s =
      relay::reduce_scatter(comm, pairs, {in.data(), in.size() * 4}, {nullptr, out.size() * 4},
                            counts, dtype::float32, reduce_op::sum, opt);
  CHECK(s.message() == "the output of rank 1 is null");
  REQUIRE(calls.size() == 10);
  CHECK(calls[9].local == errc::invalid_buffer);
  CHECK(calls[9].fingerprint == calls[0].fingerprint);
}
