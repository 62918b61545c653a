// Handing a descriptor over an abstract Unix-domain socket: the expected process gets the same
// file, any other process nothing, and every wait ends at its deadline or when the expected
// process is gone.
#include "relay/transport/shm/fd_passing.hpp"

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>

using namespace relay;
using relay::detail::steady;

namespace {

std::string unique_name(const char* what) {
  static int n = 0;
  return "relay-test-" + std::to_string(::getpid()) + "-" + what + "-" + std::to_string(++n);
}

relay::detail::unique_fd file_holding(const std::string& text) {
  relay::detail::unique_fd fd(::memfd_create("relay-test", MFD_CLOEXEC));
  REQUIRE(fd.get() >= 0);
  REQUIRE(::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  return fd;
}

}  // namespace

TEST_CASE("the expected process receives the same file", "[transport][fd_passing]") {
  const relay::detail::unique_fd file = file_holding("relay");
  const std::string name = unique_name("same");
  relay::detail::fd_offer offer;
  REQUIRE(offer.listen(name, 4));
  status fetched;
  relay::detail::unique_fd got;
  std::thread taker([&] {
    fetched =
        relay::detail::fetch_fd(name, "the holder", steady::now() + std::chrono::seconds(5), got);
  });
  const std::size_t served =
      offer.serve(file.get(), {::getpid()}, steady::now() + std::chrono::seconds(5));
  taker.join();
  CHECK(served == 1);
  REQUIRE(fetched.ok());
  struct stat a {
  }, b{};
  REQUIRE(::fstat(file.get(), &a) == 0);
  REQUIRE(::fstat(got.get(), &b) == 0);
  CHECK(a.st_ino == b.st_ino);
  CHECK(got.get() != file.get());
  char text[5] = {};
  REQUIRE(::pread(got.get(), text, 5, 0) == 5);
  CHECK(std::string(text, 5) == "relay");
}

TEST_CASE("a process the holder does not expect gets nothing", "[transport][fd_passing]") {
  const relay::detail::unique_fd file = file_holding("secret");
  const std::string name = unique_name("stranger");
  relay::detail::fd_offer offer;
  REQUIRE(offer.listen(name, 4));
  status fetched;
  relay::detail::unique_fd got;
  std::thread taker([&] {
    fetched =
        relay::detail::fetch_fd(name, "the holder", steady::now() + std::chrono::seconds(5), got);
  });
  // The holder expects its parent (alive, and not this process).
  const auto start = steady::now();
  const std::size_t served =
      offer.serve(file.get(), {::getppid()}, steady::now() + std::chrono::milliseconds(300));
  taker.join();
  CHECK(served == 0);
  CHECK(steady::now() - start >= std::chrono::milliseconds(300));
  CHECK(fetched.code() == errc::system_error);
  CHECK_THAT(fetched.message(), Catch::Contains("the holder closed its socket @" + name +
                                                " without handing over the descriptor"));
  CHECK(got.get() < 0);
}

TEST_CASE("the holder stops waiting for a process that has exited", "[transport][fd_passing]") {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) ::_exit(0);
  int wstatus = 0;
  REQUIRE(::waitpid(child, &wstatus, 0) == child);  // gone and reaped: no such process now
  const relay::detail::unique_fd file = file_holding("x");
  relay::detail::fd_offer offer;
  REQUIRE(offer.listen(unique_name("exited"), 4));
  const auto start = steady::now();
  CHECK(offer.serve(file.get(), {child}, steady::now() + std::chrono::seconds(10)) == 0);
  CHECK(steady::now() - start < std::chrono::seconds(2));
}

TEST_CASE("fetching ends at once without a holder and at the deadline without an answer",
          "[transport][fd_passing]") {
  relay::detail::unique_fd got;
  const std::string nobody = unique_name("nobody");
  status s =
      relay::detail::fetch_fd(nobody, "rank 0", steady::now() + std::chrono::seconds(5), got);
  CHECK(s.code() == errc::system_error);
  CHECK_THAT(s.message(), Catch::Contains("connecting to rank 0's socket @" + nobody) &&
                              Catch::Contains("rank 0 exited, or is on another host?"));
  // A holder that listens and never serves.
  relay::detail::fd_offer silent;
  const std::string name = unique_name("silent");
  REQUIRE(silent.listen(name, 4));
  const auto start = steady::now();
  s = relay::detail::fetch_fd(name, "rank 0", start + std::chrono::milliseconds(200), got);
  const auto took = steady::now() - start;
  CHECK(s.code() == errc::timeout);
  CHECK(s.message() == "rank 0 did not hand over the descriptor in time");
  CHECK(took >= std::chrono::milliseconds(200));
  CHECK(took < std::chrono::milliseconds(1200));
}
