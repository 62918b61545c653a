// The control plane (serve/plane.hpp, serve/plans.hpp) across ranks on threads, each with its
// own communicator over the shm transport and the TCP bootstrap: who publishes, the plan stream's
// order and bounded waits, and torchcomms' five fields end to end.
#include "relay/serve/plane.hpp"

#include <catch2/catch.hpp>
#include <functional>
#include <thread>

#include "relay/bootstrap/tcp_bootstrap.hpp"
#include "relay/serve/plans.hpp"
#include "relay/transport/shm/factory.hpp"

using namespace relay;
using namespace relay::serve;
using namespace std::chrono_literals;

namespace {

// Runs `body(rank, comm)` on R threads, each with a communicator of its own (its timeout
// `timeout`) whose plane has the role `roles[rank]`; `attached[rank]` is what attach_plane
// returned.
void on_ranks(const std::vector<plane_role>& roles, const plane_geometry& geometry,
              std::vector<status>& attached, const std::function<void(int, communicator&)>& body,
              std::chrono::milliseconds timeout = 5s) {
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
      s = attach_plane(comm, roles[static_cast<std::size_t>(r)], geometry);
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
