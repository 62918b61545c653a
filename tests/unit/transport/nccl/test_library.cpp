// nccl/library.hpp on the CPU, against stand-ins for NCCL built by the suite (stub/nccl_stub.cpp):
// a complete one, one without ncclCommAbort, and a file that does not exist. The stubs' paths
// come from the build (RELAY_TEST_NCCL_STUB, RELAY_TEST_NCCL_STUB_PARTIAL).
#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "relay/transport/nccl/library.hpp"

using namespace relay;

namespace {

constexpr const char* complete_stub = RELAY_TEST_NCCL_STUB;
constexpr const char* partial_stub = RELAY_TEST_NCCL_STUB_PARTIAL;

// A search whose default name no system has, so that only the process and the variable count.
constexpr nccl_search test_search{"NCCL", "RELAY_NCCL_LIBRARY", "librelay-test-no-such-nccl.so.2"};

// Sets (or unsets) the variable for one scope.
class variable {
 public:
  explicit variable(const char* value) {
    if (value != nullptr)
      ::setenv(test_search.variable, value, 1);
    else
      ::unsetenv(test_search.variable);
  }
  ~variable() { ::unsetenv(test_search.variable); }
  variable(const variable&) = delete;
  variable& operator=(const variable&) = delete;
};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("nccl library: a complete library named by the variable binds every entry point",
          "[transport][nccl]") {
  const variable v(complete_stub);
  nccl_library lib;
  const status s = load_nccl(test_search, lib);
  INFO(s.to_string());
  REQUIRE(s.ok());
  CHECK(lib.path == complete_stub);
  CHECK(lib.how == "RELAY_NCCL_LIBRARY");
  CHECK(lib.version == 29907);  // the stub's own: its ncclGetVersion answered
  int bound = 0;
  nccl_entry_points(lib.api, [&](const char*, auto& entry) { bound += entry != nullptr; });
  CHECK(bound == 17);
  // Each entry is the stub's function of that name (values only the stub returns).
  CHECK(std::string(lib.api.get_error_string(3)) == "stub: an error");
  nccl_unique_id id{};
  REQUIRE(lib.api.get_unique_id(&id) == nccl_success);
  CHECK(id.internal[0] == 's');
  CHECK(id.internal[127] == 's');
  nccl_comm comm = nullptr;
  CHECK(lib.api.comm_init_rank(&comm, 2, id, 0) == 5);
  CHECK(lib.api.send(nullptr, 0, nccl_type::uint8, 1, nullptr, nullptr) == 5);
  CHECK(lib.api.group_start() == nccl_success);
}

TEST_CASE("nccl library: a missing entry point is an error naming it and the library",
          "[transport][nccl]") {
  const variable v(partial_stub);
  nccl_library lib;
  lib.path = "untouched";
  const status s = load_nccl(test_search, lib);
  REQUIRE_FALSE(s.ok());
  CHECK(s.code() == errc::unsupported);
  INFO(s.message());
  CHECK(contains(s.message(), "ncclCommAbort"));
  CHECK(contains(s.message(), partial_stub));
  CHECK(lib.path == "untouched");  // nothing of the failed load is kept
}

TEST_CASE("nccl library: an absent library is an error naming the file and the variable",
          "[transport][nccl]") {
  SECTION("named by the variable") {
    const variable v("/nonexistent/relay-test/libnccl.so.2");
    nccl_library lib;
    const status s = load_nccl(test_search, lib);
    REQUIRE_FALSE(s.ok());
    CHECK(s.code() == errc::unsupported);
    INFO(s.message());
    CHECK(contains(s.message(), "/nonexistent/relay-test/libnccl.so.2"));
    CHECK(contains(s.message(), "RELAY_NCCL_LIBRARY"));
  }
  SECTION("the default name, with no variable") {
    const variable v(nullptr);
    nccl_library lib;
    const status s = load_nccl(test_search, lib);
    REQUIRE_FALSE(s.ok());
    CHECK(s.code() == errc::unsupported);
    INFO(s.message());
    CHECK(contains(s.message(), "librelay-test-no-such-nccl.so.2"));
    CHECK(contains(s.message(), "set RELAY_NCCL_LIBRARY"));
  }
}

TEST_CASE("nccl library: the copy already in the process is the one used, never a second",
          "[transport][nccl]") {
  // What torch does before relay is asked for the nccl transport: it loads its NCCL, locally.
  void* framework = ::dlopen(complete_stub, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(framework != nullptr);
  SECTION("found with no variable, though the default name does not exist") {
    const variable v(nullptr);
    nccl_library lib;
    const status s = load_nccl(test_search, lib);
    INFO(s.to_string());
    REQUIRE(s.ok());
    CHECK(lib.path == complete_stub);
    CHECK(lib.how == "already in this process");
    CHECK(lib.version == 29907);
  }
  SECTION("the variable naming the same file is that copy") {
    const variable v(complete_stub);
    nccl_library lib;
    REQUIRE(load_nccl(test_search, lib).ok());
    CHECK(lib.how == "already in this process");
  }
  SECTION("the variable naming another file is an error naming both") {
    const variable v(partial_stub);
    nccl_library lib;
    const status s = load_nccl(test_search, lib);
    REQUIRE_FALSE(s.ok());
    CHECK(s.code() == errc::unsupported);
    INFO(s.message());
    CHECK(contains(s.message(), partial_stub));
    CHECK(contains(s.message(), complete_stub));
  }
  REQUIRE(::dlclose(framework) == 0);
  // Every handle is closed: the stub is no longer in the process.
  CHECK(::dlopen(complete_stub, RTLD_LAZY | RTLD_NOLOAD) == nullptr);
}
