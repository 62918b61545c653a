// The control plane (serve/plane.hpp, serve/plans.hpp) across ranks on threads, each with its
// own communicator over the shm transport and the TCP bootstrap: who publishes, the plan stream's
// order and bounded waits, torchcomms' five fields end to end, how large a plan may be, and a
// consumer that leaves or gives up, named by every rank of the stream.
#include "relay/serve/plane.hpp"

#include <atomic>
#include <catch2/catch.hpp>
#include <functional>
#include <thread>

#include "relay/bootstrap/tcp_bootstrap.hpp"
#include "relay/serve/plans.hpp"
#include "relay/transport/shm/factory.hpp"
#include "support/scoped_env.hpp"

using namespace relay;
using namespace relay::serve;
using namespace std::chrono_literals;

namespace {

// Runs `body(rank, comm)` on R threads, each with a communicator of its own (its timeout
// `timeout`) whose plane has the role `roles[rank]` and the geometry `geometry` (with
// `per_rank(rank, geometry)` applied, where given); `attached[rank]` is what attach_plane
// returned.
void on_ranks(const std::vector<plane_role>& roles, const plane_geometry& geometry,
              std::vector<status>& attached, const std::function<void(int, communicator&)>& body,
              std::chrono::milliseconds timeout = 5s,
              const std::function<void(int, plane_geometry&)>& per_rank = {}) {
  const int R = static_cast<int>(roles.size());
  int port = 0;
  REQUIRE(free_loopback_port(port));
  attached.assign(static_cast<std::size_t>(R), status{});
  std::vector<std::thread> threads;
  for (int r = 0; r < R; ++r)
    threads.emplace_back([&, r] {
      environment e;
      e.rank = r;
      e.size = R;
      e.store_port = port;
      e.timeout = 10s;
      std::unique_ptr<bootstrap> boot;
      status& s = attached[static_cast<std::size_t>(r)];
      s = make_tcp_bootstrap(e, boot);
      std::shared_ptr<bootstrap> shared(std::move(boot));
      std::unique_ptr<transport> link;
      if (s) s = make_shm_transport(*shared, shm_options{1 << 20}, e.timeout, link);
      if (!s) return;
      comm_config config;
      config.timeout = timeout;
      communicator comm(shared, std::move(link), config);
      plane_geometry mine = geometry;
      if (per_rank) per_rank(r, mine);
      s = attach_plane(comm, roles[static_cast<std::size_t>(r)], mine);
      if (s) body(r, comm);
    });
  for (auto& t : threads)
    t.join();
}

forward_plan forward_of(std::uint64_t epoch) {
  call_shape s;
  s.coll = collective::allreduce;
  s.mode = mode::single;
  s.ranks = 3;
  s.groups = {{0, 2}};
  s.counts = {static_cast<std::int64_t>(100 + epoch)};
  return {{s}, false};
}

}  // namespace

TEST_CASE("the publisher is the lowest rank that calls", "[serve]") {
  std::vector<int> publisher(3, -2), servers(3, -2);
  std::vector<status> attached;
  on_ranks({plane_role::serve, plane_role::call, plane_role::call}, {}, attached,
           [&](int r, communicator& comm) {
             if (const control_plane* p = plane_of(comm); p != nullptr) {
               publisher[static_cast<std::size_t>(r)] = p->publisher();
               servers[static_cast<std::size_t>(r)] = static_cast<int>(p->servers().size());
             }
           });
  for (int r = 0; r < 3; ++r) {
    INFO("rank " << r);
    REQUIRE(attached[static_cast<std::size_t>(r)].ok());
    CHECK(publisher[static_cast<std::size_t>(r)] == 1);
    CHECK(servers[static_cast<std::size_t>(r)] == 1);
  }
}

TEST_CASE("a plane on which every rank serves is refused on every rank", "[serve]") {
  std::vector<status> attached;
  on_ranks({plane_role::serve, plane_role::serve}, {}, attached, [](int, communicator&) {});
  for (const status& s : attached) {
    CHECK(s.code() == errc::invalid_argument);
    CHECK(s.message().find("every rank serves") != std::string::npos);
  }
}

// The call stream: the publisher announces steps (registrations: the shm transport has nothing
// to do for them) while the serving rank takes none; with 2 slots the third waits for it, up to
// the communicator's timeout, then names it. The serving rank then takes the two written.
TEST_CASE("the publisher waits for a serving rank a ring behind, then names it", "[serve]") {
  plane_geometry g;
  g.depth = 2;
  std::vector<status> attached, results(2);
  std::chrono::milliseconds waited{0};
  std::vector<record_kind> taken;
  on_ranks(
      {plane_role::call, plane_role::serve}, g, attached,
      [&](int r, communicator& comm) {
        control_plane* p = plane_of(comm);
        if (p == nullptr) return;
        if (r == 1) {
          (void)comm.boot().barrier(10s);  // the publisher gave up
          for (int k = 0; k < 2 && results[1].ok(); ++k) {
            record_head h;
            std::vector<std::byte> record;
            results[1] = p->take(record, h, 1s);
            taken.push_back(h.kind);
          }
          return;
        }
        results[0] = comm.register_buffer(nullptr, 0);
        if (results[0]) results[0] = comm.deregister_buffer(nullptr);
        const auto start = std::chrono::steady_clock::now();
        if (results[0]) results[0] = comm.register_buffer(nullptr, 0);
        waited = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::steady_clock::now() - start);
        (void)comm.boot().barrier(10s);
      },
      500ms);
  CHECK(results[0].code() == errc::timeout);
  CHECK(results[0].peer() == 1);
  CHECK(results[0].message().rfind("rank 1, which serves, did not take a buffer registration", 0) ==
        0);
  CHECK(waited >= 500ms);  // the communicator's timeout
  CHECK(waited < 1500ms);
  CHECK(results[1].ok());
  CHECK(taken ==
        std::vector<record_kind>{record_kind::register_buffer, record_kind::deregister_buffer});
}

TEST_CASE("plans go out by epoch, from the publisher only, and come back whole", "[serve]") {
  plane_geometry g;
  g.plan_depth = 2;
  std::vector<status> attached, results(3);
  std::vector<std::vector<forward_plan>> got(3);
  on_ranks({plane_role::call, plane_role::call, plane_role::call}, g, attached,
           [&](int r, communicator& comm) {
             status& out = results[static_cast<std::size_t>(r)];
             if (r == 0) {
               // Out of turn, then in turn; 6 epochs through a ring of 2.
               if (status s = publish_forward(comm, 1, forward_of(1), 1s);
                   s.code() != errc::invalid_argument ||
                   s.message().find("the next is 0") == std::string::npos)
                 out = {errc::system_error, "epoch 1 first: " + s.to_string()};
               (void)comm.boot().barrier(10s);  // every consumer joined
               for (std::uint64_t e = 0; e < 6 && out.ok(); ++e)
                 out = publish_forward(comm, e, forward_of(e), 5s);
               return;
             }
             if (r == 2) {
               if (status s = publish_forward(comm, 0, forward_of(0), 1s);
                   s.code() != errc::invalid_argument ||
                   s.message().find("rank 0 does") == std::string::npos)
                 out = {errc::system_error, "rank 2 published: " + s.to_string()};
             }
             if (out) out = join_plan_stream(comm);
             (void)comm.boot().barrier(10s);
             for (std::uint64_t e = 0; e < 6 && out.ok(); ++e) {
               forward_plan p;
               out = consume_forward(comm, e, p, 5s);
               got[static_cast<std::size_t>(r)].push_back(p);
             }
           });
  for (int r = 0; r < 3; ++r) {
    INFO("rank " << r);
    REQUIRE(attached[static_cast<std::size_t>(r)].ok());
    CHECK(results[static_cast<std::size_t>(r)].ok());
  }
  for (int r : {1, 2}) {
    REQUIRE(got[static_cast<std::size_t>(r)].size() == 6);
    for (std::uint64_t e = 0; e < 6; ++e) {
      const forward_plan& p = got[static_cast<std::size_t>(r)][e];
      REQUIRE(p.calls.size() == 1);
      CHECK(p.calls[0].counts == std::vector<std::int64_t>{static_cast<std::int64_t>(100 + e)});
      CHECK(p.calls[0].groups == std::vector<std::vector<int>>{{0, 2}});
    }
  }
}

TEST_CASE("a publisher a ring ahead of a consumer waits for it, up to its timeout", "[serve]") {
  plane_geometry g;
  g.plan_depth = 2;
  std::vector<status> attached, results(2);
  std::chrono::milliseconds waited{0};
  on_ranks({plane_role::call, plane_role::call}, g, attached, [&](int r, communicator& comm) {
    status& out = results[static_cast<std::size_t>(r)];
    if (r == 1) {
      forward_plan p;
      out = consume_forward(comm, 0, p, 5s);  // consumes epoch 0, then nothing more
      (void)comm.boot().barrier(10s);
      (void)comm.boot().barrier(10s);
      return;
    }
    out = publish_forward(comm, 0, forward_of(0), 5s);
    (void)comm.boot().barrier(10s);  // epoch 0 consumed
    for (std::uint64_t e = 1; e < 3 && out.ok(); ++e)
      out = publish_forward(comm, e, forward_of(e), 5s);  // epoch 2 reuses epoch 0's slot
    const auto start = std::chrono::steady_clock::now();
    if (out) out = publish_forward(comm, 3, forward_of(3), 300ms);  // epoch 1 never consumed
    waited = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    (void)comm.boot().barrier(10s);
  });
  CHECK(results[1].ok());
  CHECK(results[0].code() == errc::timeout);
  CHECK(results[0].peer() == 1);
  CHECK(results[0].message().rfind("rank 1 did not consume epoch 1 within 300 ms", 0) == 0);
  CHECK(waited >= 300ms);
  CHECK(waited < 1300ms);
}

TEST_CASE("a consumer that waits in vain names the publisher, which then cannot publish",
          "[serve]") {
  std::vector<status> attached, results(2);
  on_ranks({plane_role::call, plane_role::call}, {}, attached, [&](int r, communicator& comm) {
    if (r == 1) {
      forward_plan p;
      results[1] = consume_forward(comm, 0, p, 200ms);
      (void)comm.boot().barrier(10s);
      return;
    }
    (void)comm.boot().barrier(10s);
    results[0] = publish_forward(comm, 0, forward_of(0), 1s);
  });
  CHECK(results[1].code() == errc::timeout);
  CHECK(results[1].peer() == 0);
  CHECK(results[1].message().rfind("rank 0, the publisher, published no plan for epoch 0", 0) == 0);
  // The consumer gave up on the plane: the publisher's publish fails with its failure.
  CHECK(results[0].code() == errc::timeout);
  CHECK(results[0].message() == results[1].message());
}

// torchcomms' five fields end to end: the publisher's constants on every consumer (op_code 3,
// dtype 7, red_op 2, flags 0: a swap of any two comes back different), then a shutdown plan.
TEST_CASE("torchcomms-shaped plans carry their five fields to every consumer", "[serve]") {
  std::vector<status> attached, results(3);
  std::vector<control_plan> first(3), second(3);
  on_ranks({plane_role::call, plane_role::call, plane_role::serve}, {}, attached,
           [&](int r, communicator& comm) {
             status& out = results[static_cast<std::size_t>(r)];
             if (r == 0) {
               control_plan bad;
               bad.op_code = 5;
               if (status s = publish_control(comm, 0, bad, 1s); s.code() != errc::invalid_argument)
                 out = {errc::system_error, "op_code 5: " + s.to_string()};
               bad.op_code = 1;
               bad.flags = 1;
               if (status s = publish_control(comm, 0, bad, 1s); s.code() != errc::invalid_argument)
                 out = {errc::system_error, "flags 1: " + s.to_string()};
               (void)comm.boot().barrier(10s);
               if (out) out = publish_control(comm, 0, {3, 7, 2, 0, {1024, 512, 256}}, 5s);
               if (out) out = publish_control(comm, 1, {control_op_shutdown, 7, 0, 0, {}}, 5s);
               return;
             }
             out = join_plan_stream(comm);
             (void)comm.boot().barrier(10s);
             if (out) out = consume_control(comm, 0, first[static_cast<std::size_t>(r)], 5s);
             if (out) out = consume_control(comm, 1, second[static_cast<std::size_t>(r)], 5s);
           });
  for (int r = 0; r < 3; ++r) {
    INFO("rank " << r);
    REQUIRE(attached[static_cast<std::size_t>(r)].ok());
    CHECK(results[static_cast<std::size_t>(r)].ok());
    if (r == 0) continue;
    const control_plan& p = first[static_cast<std::size_t>(r)];
    CHECK(p.op_code == 3);
    CHECK(p.dtype == 7);
    CHECK(p.red_op == 2);
    CHECK(p.flags == 0);
    CHECK(p.counts == std::vector<std::int64_t>{1024, 512, 256});
    CHECK(second[static_cast<std::size_t>(r)].op_code == control_op_shutdown);
    CHECK(second[static_cast<std::size_t>(r)].counts.empty());
  }
}

namespace {

// 128 counts, distinct: 1000, 1001, ...
std::vector<std::int64_t> counts_from_1000(std::size_t n) {
  std::vector<std::int64_t> c(n);
  for (std::size_t i = 0; i < n; ++i)
    c[i] = 1000 + static_cast<std::int64_t>(i);
  return c;
}

// Rank 0 publishes `refused` counts as epoch 0 (refused: `why` is what it says), then `taken`;
// ranks 1 and 2 consume epoch 0. results[r]: rank r's failure; got[r]: what it consumed;
// limits[r]: plan_limits_of.
struct limit_run {
  std::vector<status> attached, results = std::vector<status>(3);
  std::vector<control_plan> got = std::vector<control_plan>(3);
  std::vector<plan_stream_limits> limits = std::vector<plan_stream_limits>(3);
  status refusal;
};

limit_run publish_over_and_at(std::size_t refused, std::size_t taken,
                              const plane_geometry& g = {}) {
  limit_run run;
  on_ranks({plane_role::call, plane_role::call, plane_role::call}, g, run.attached,
           [&](int r, communicator& comm) {
             status& out = run.results[static_cast<std::size_t>(r)];
             out = plan_limits_of(comm, run.limits[static_cast<std::size_t>(r)]);
             if (r == 0) {
               run.refusal = publish_control(comm, 0, {1, 7, 0, 0, counts_from_1000(refused)}, 5s);
               (void)comm.boot().barrier(10s);
               if (out) out = publish_control(comm, 0, {1, 7, 0, 0, counts_from_1000(taken)}, 5s);
               return;
             }
             if (out) out = join_plan_stream(comm);
             (void)comm.boot().barrier(10s);
             if (out) out = consume_control(comm, 0, run.got[static_cast<std::size_t>(r)], 5s);
           });
  return run;
}

// What every such run must show: the plan over the limit refused (its message starting with
// `refused`), every rank's limits those given, and the epoch then published within the limit
// (`taken` counts) on every consumer.
void expect_refused_then_taken(const limit_run& run, const std::string& refused,
                               const plan_stream_limits& limits, std::size_t taken) {
  CHECK(run.refusal.code() == errc::invalid_argument);
  CHECK(run.refusal.message().rfind(refused, 0) == 0);
  for (int r = 0; r < 3; ++r) {
    INFO("rank " << r << ": " << run.refusal.message());
    const auto at = static_cast<std::size_t>(r);
    REQUIRE(run.attached[at].ok());
    CHECK(run.results[at].ok());
    CHECK(run.limits[at].plan_bytes == limits.plan_bytes);
    CHECK(run.limits[at].control_max_calls == limits.control_max_calls);
    CHECK(run.limits[at].control_counts_held == limits.control_counts_held);
    if (r > 0) CHECK(run.got[at].counts == counts_from_1000(taken));
  }
}

}  // namespace

// torchcomms' example publishes NCCL_RELAY_CONTROL_MAX_CALLS + 1 counts and expects an error.
TEST_CASE("a torchcomms plan over RCCLX's default of 128 counts is refused, publishing nothing",
          "[serve]") {
  const testing::scoped_env env{{"NCCL_RELAY_CONTROL_MAX_CALLS", std::nullopt}};
  expect_refused_then_taken(
      publish_over_and_at(129, 128),
      "the plan of epoch 0 has 129 counts; a torchcomms plan holds at most 128 (RCCLX's default",
      {65536, 128, 8186}, 128);
}

TEST_CASE("NCCL_RELAY_CONTROL_MAX_CALLS sets the limit, up to the 8,186 the slots hold",
          "[serve]") {
  {
    const testing::scoped_env env{{"NCCL_RELAY_CONTROL_MAX_CALLS", "8000"}};
    expect_refused_then_taken(publish_over_and_at(8001, 8000),
                              "the plan of epoch 0 has 8001 counts; a torchcomms plan holds at "
                              "most 8000 (NCCL_RELAY_CONTROL_MAX_CALLS=8000",
                              {65536, 8000, 8186}, 8000);
  }
  // One past what the slots hold, and values that are no count: refused on every rank, naming
  // rank 0 (the first) and the value.
  for (const char* value : {"8187", "0", "-5", "12x", "99999999999"}) {
    INFO("NCCL_RELAY_CONTROL_MAX_CALLS=" << value);
    const testing::scoped_env env{{"NCCL_RELAY_CONTROL_MAX_CALLS", value}};
    std::vector<status> attached;
    on_ranks({plane_role::call, plane_role::call}, {}, attached, [](int, communicator&) {});
    for (const status& s : attached) {
      CHECK(s.code() == errc::invalid_argument);
      CHECK(s.peer() == 0);
      CHECK(s.message().rfind("rank 0: NCCL_RELAY_CONTROL_MAX_CALLS", 0) == 0);
      CHECK(s.message().find(value) != std::string::npos);
      if (std::string(value) == "8187")
        CHECK(s.message().find("plan slots of 65536 bytes hold 8186") != std::string::npos);
    }
  }
}

TEST_CASE("ranks whose plan limits differ fail the plane on every rank, naming one", "[serve]") {
  const testing::scoped_env env{{"NCCL_RELAY_CONTROL_MAX_CALLS", std::nullopt}};
  std::vector<status> attached;
  on_ranks(
      {plane_role::call, plane_role::serve, plane_role::serve}, {}, attached,
      [](int, communicator&) {}, 5s,
      [](int r, plane_geometry& g) { g.control_max_calls = r == 2 ? 64 : 0; });
  for (const status& s : attached) {
    CHECK(s.code() == errc::invalid_argument);
    CHECK(s.peer() == 2);
    CHECK(s.message().rfind("rank 2 limits torchcomms plans to 64 counts, rank 0 to 128", 0) == 0);
  }
}

// Slots of 1,000 bytes hold (1000 - 44) / 8 = 119 counts, or (1000 - 29) / 64 = 15 calls of one
// group of 2 (forward_of's): the default limit is lowered to 119; one more of either is refused,
// naming the bytes, and the epoch then goes out within them.
TEST_CASE("small plan slots lower the default limit, a forward that does not fit is refused",
          "[serve]") {
  const testing::scoped_env env{{"NCCL_RELAY_CONTROL_MAX_CALLS", std::nullopt}};
  plane_geometry g;
  g.plan_bytes = 1000;
  expect_refused_then_taken(publish_over_and_at(120, 119, g),
                            "the plan of epoch 0 has 120 counts; a torchcomms plan holds at most "
                            "119 (what plan slots of 1000 bytes hold",
                            {1000, 119, 119}, 119);

  std::vector<status> attached, results(2);
  std::vector<std::size_t> consumed(2, 0);
  status refusal;
  on_ranks({plane_role::call, plane_role::call}, g, attached, [&](int r, communicator& comm) {
    forward_plan p;
    if (r == 0) {
      p.calls.assign(16, forward_of(0).calls[0]);
      refusal = publish_forward(comm, 0, p, 5s);
      p.calls.pop_back();
      results[0] = publish_forward(comm, 0, p, 5s);
      return;
    }
    results[1] = consume_forward(comm, 0, p, 5s);
    consumed[1] = p.calls.size();
  });
  CHECK(refusal.code() == errc::invalid_argument);
  CHECK(refusal.message() ==
        "the plan of epoch 0 takes 1053 bytes; the plane's plan slots hold 1000 "
        "(plane_geometry::plan_bytes)");
  CHECK(results[0].ok());
  CHECK(results[1].ok());
  CHECK(consumed[1] == 15);
}

namespace {

// A consumer's fault on threads: rank 0 publishes epoch 0 and ranks 1 and 2 consume it; then
// rank 2 runs `fault` (which sets its status, and returns whether it closes its communicator)
// while rank 1 waits for epoch 1 (5 s); once rank 1 is done, rank 0 publishes epoch 1. The ranks
// that stay open stay until rank 0 has published.
struct fault_run {
  std::vector<status> attached, results = std::vector<status>(3);
  status publisher_failure;             // what rank 0's plane gave up with
  std::chrono::milliseconds waited{0};  // rank 1's wait for epoch 1
};

fault_run consumer_fault(const std::function<bool(communicator&, status&)>& fault) {
  fault_run run;
  std::atomic<bool> consumer_done{false}, publisher_done{false};
  auto stay_open = [&] {
    for (int i = 0; i < 1000 && !publisher_done; ++i)
      std::this_thread::sleep_for(10ms);
  };
  on_ranks({plane_role::call, plane_role::call, plane_role::call}, {}, run.attached,
           [&](int r, communicator& comm) {
             status& out = run.results[static_cast<std::size_t>(r)];
             if (r == 0) {
               out = publish_forward(comm, 0, forward_of(0), 5s);
               (void)comm.boot().barrier(10s);  // epoch 0 consumed
               for (int i = 0; i < 1000 && !consumer_done; ++i)
                 std::this_thread::sleep_for(10ms);
               if (out) out = publish_forward(comm, 1, forward_of(1), 5s);
               if (const control_plane* p = plane_of(comm); p != nullptr)
                 run.publisher_failure = p->failure();
               publisher_done = true;
               return;
             }
             forward_plan p;
             out = consume_forward(comm, 0, p, 5s);
             (void)comm.boot().barrier(10s);
             if (r == 2) {
               if (out && fault(comm, out)) return;  // closes its communicator
               stay_open();
               return;
             }
             const auto start = std::chrono::steady_clock::now();
             if (out) out = consume_forward(comm, 1, p, 5s);
             run.waited = std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::steady_clock::now() - start);
             consumer_done = true;
             stay_open();
           });
  return run;
}

}  // namespace

// Rank 2 closes its communicator: rank 1's wait names it at once (not the publisher after the
// timeout), and so does rank 0's next publish, which gives up on the plane with it.
TEST_CASE("a consumer that closes its communicator is named by every rank of the stream",
          "[serve]") {
  const fault_run run = consumer_fault([](communicator&, status&) { return true; });
  for (int r : {0, 1}) {
    INFO("rank " << r);
    const status& s = run.results[static_cast<std::size_t>(r)];
    CHECK(s.code() == errc::peer_lost);
    CHECK(s.peer() == 2);
    CHECK(s.message().rfind("rank 2, which consumes plans, closed its communicator", 0) == 0);
  }
  CHECK(run.results[2].ok());
  CHECK(run.waited < 2s);  // the timeout is 5 s
  CHECK(run.publisher_failure.code() == errc::peer_lost);
  CHECK(run.publisher_failure.peer() == 2);
}

// Rank 2's wait for epoch 1 times out (100 ms) and gives up, recording why: rank 1, which waits
// for the same epoch with 5 s, returns that failure at once, and so does the publisher.
TEST_CASE("a consumer that gives up is reported with its recorded cause", "[serve]") {
  const fault_run run = consumer_fault([](communicator& comm, status& out) {
    forward_plan p;
    out = consume_forward(comm, 1, p, 100ms);
    return false;
  });
  const status& cause = run.results[2];
  CHECK(cause.code() == errc::timeout);
  CHECK(cause.peer() == 0);
  CHECK(cause.message().rfind(
            "rank 0, the publisher, published no plan for epoch 1 within 100 ms (seen by rank 2)",
            0) == 0);
  for (int r : {0, 1}) {
    INFO("rank " << r);
    CHECK(run.results[static_cast<std::size_t>(r)].code() == errc::timeout);
    CHECK(run.results[static_cast<std::size_t>(r)].peer() == 0);
    CHECK(run.results[static_cast<std::size_t>(r)].message() == cause.message());
  }
  CHECK(run.waited < 2s);
  CHECK(run.publisher_failure.message() == cause.message());
}
