// A job whose ranks are threads of this process, each with its own TCP bootstrap (the unit tests
// of what runs over a bootstrap: splits, hosted views, agreements).
#pragma once

#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "relay/bootstrap/tcp_bootstrap.hpp"

namespace relay::testing {

// Runs body(rank, its bootstrap) on `ranks` threads of one job, and collects the statuses (a
// bootstrap that could not be made: its status).
inline std::vector<status> on_job(int ranks, const std::function<status(int, bootstrap&)>& body) {
  int port = 0;
  REQUIRE(free_loopback_port(port));
  std::vector<status> result(static_cast<std::size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      environment e;
      e.rank = r;
      e.size = ranks;
      e.store_port = port;
      e.timeout = std::chrono::seconds(10);
      std::unique_ptr<bootstrap> boot;
      status s = make_tcp_bootstrap(e, boot);
      result[static_cast<std::size_t>(r)] = s ? body(r, *boot) : s;
    });
  for (auto& t : threads)
    t.join();
  return result;
}

}  // namespace relay::testing
