// The CPU executor: every rank a host thread over host memory. Timed by the host's steady clock.
#include <unistd.h>
#include <chrono>

#include "backends/executor_backend.hpp"
#include "relay/exec/host_executor.hpp"

namespace relay::bench {

namespace {

class host_timer : public timer {
 public:
  void start() override { begin_ = clock::now(); }
  void stop() override { end_ = clock::now(); }
  double seconds() override { return std::chrono::duration<double>(end_ - begin_).count(); }

 private:
  using clock = std::chrono::steady_clock;
  clock::time_point begin_{}, end_{};
};

class cpu_backend : public executor_backend<host_executor> {
 public:
  explicit cpu_backend(int ranks)
      : executor_backend([] { return std::make_unique<host_executor>(); },
                         std::make_unique<host_timer>()),
        ranks_(ranks) {}

  std::string description() const override {
    return "cpu: " + std::to_string(ranks_) + " ranks, one host thread each, on " +
           std::to_string(std::thread::hardware_concurrency()) + " cores";
  }
  std::int64_t cache_bytes() const override {
    const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    const long most = std::max(l3, l2);
    return most > 0 ? most : std::int64_t{32} << 20;  // unknown: a typical last-level cache
  }

 private:
  int ranks_;
};

}  // namespace

std::unique_ptr<backend> make_cpu_backend(int ranks) {
  return std::make_unique<cpu_backend>(ranks);
}

}  // namespace relay::bench
