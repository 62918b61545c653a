// The ipc transport's watchdog (transport/ipc/watchdog.hpp), without a device: when a process
// counts as gone, and that the watchdog names the rank of a peer process that exits, and only it.
#include "relay/transport/ipc/watchdog.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

using namespace relay::ipc;

TEST_CASE("a peer process is gone once it exited, reaped or not", "[transport][ipc]") {
  const std::string self = "/proc/" + std::to_string(::getpid()) + "/stat";
  CHECK_FALSE(process_gone(::getpid(), self.c_str()));
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) ::_exit(0);
  const std::string stat = "/proc/" + std::to_string(child) + "/stat";
  // A zombie until reaped: gone already (it runs nothing more).
  bool zombie = false;
  for (int i = 0; i < 2000 && !zombie; ++i) {
    zombie = process_gone(child, stat.c_str());
    if (!zombie) ::usleep(1000);
  }
  CHECK(zombie);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(process_gone(child, stat.c_str()));
}

TEST_CASE("the watchdog names the rank whose process exits, once", "[transport][ipc]") {
  // Rank 0 is this process (not watched), rank 1 a child that lives until told, rank 2 one that
  // exits at once, rank 3 unknown (pid 0).
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  const pid_t living = ::fork();
  REQUIRE(living >= 0);
  if (living == 0) {
    ::close(pipe_fds[1]);
    char c = 0;
    (void)::read(pipe_fds[0], &c, 1);  // until the parent closes its end
    ::_exit(0);
  }
  ::close(pipe_fds[0]);
  const pid_t leaving = ::fork();
  REQUIRE(leaving >= 0);
  if (leaving == 0) ::_exit(0);
  const std::vector<std::uint64_t> pids{static_cast<std::uint64_t>(::getpid()),
                                        static_cast<std::uint64_t>(living),
                                        static_cast<std::uint64_t>(leaving), 0};
  std::atomic<int> named{-1}, calls{0};
  {
    watchdog w;
    w.start(std::span<const std::uint64_t>(pids), [&](int rank) {
      named.store(rank);
      ++calls;
    });
    for (int i = 0; i < 2000 && named.load() < 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }  // stopped and joined
  CHECK(named.load() == 2);
  CHECK(calls.load() == 1);
  ::close(pipe_fds[1]);
  int status = 0;
  REQUIRE(::waitpid(leaving, &status, 0) == leaving);
  REQUIRE(::waitpid(living, &status, 0) == living);
}

TEST_CASE("a watchdog with no peer process to watch starts nothing", "[transport][ipc]") {
  const std::vector<std::uint64_t> pids{static_cast<std::uint64_t>(::getpid()), 0};
  bool called = false;
  watchdog w;
  w.start(std::span<const std::uint64_t>(pids), [&](int) { called = true; });
  w.stop();
  CHECK_FALSE(called);
}
