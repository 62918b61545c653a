// relay-bench -x nccl: the nccl transport (relay::nccl_executor), one rank per device, each rank a
// thread of this process running its slice on its own stream, as a rank of a multi-process job
// does. Timed by device events around each rank's part; the longest rank's time is the run's.
// Compiled as GPU code (the transport launches relay's reduce kernel), so no {fmt} here.
#include <algorithm>
#include <chrono>
#include <functional>
#include <sstream>

#include "backends/device_timing.hpp"
#include "backends/executor_backend.hpp"
#include "relay/exec/nccl_executor.hpp"
#include "sweep/measure.hpp"

namespace relay::bench {

namespace {

class nccl_backend : public device_backend<nccl_executor> {
 public:
  explicit nccl_backend(const std::vector<int>& device_of)
      : device_backend(
            [device_of] {
              nccl_executor_options o;
              o.time_runs = true;
              return std::make_unique<nccl_executor>(device_of, o);
            },
            device_of) {}

  std::string description() const override {
    std::ostringstream text;
    int version = 0;
    const nccl_api* nccl = nullptr;
    if (gpu_nccl(nccl).ok()) (void)nccl->get_version(&version);
    text << "nccl: relay's nccl transport over " << gpu_nccl_search.name << " " << version / 10000
         << "." << version / 100 % 100 << "." << version % 100 << ", " << device_of().size()
         << " ranks, a device and a thread each:";
    for (std::size_t r = 0; r < device_of().size(); ++r) {
      std::string name;
      (void)gpu::rt::device_name(name, device_of()[r]);
      text << " " << r << "->" << device_of()[r] << " " << name;
    }
    text << "; timed by device events around each rank's part";
    return text.str();
  }
};

}  // namespace

std::unique_ptr<backend> make_nccl_backend(int ranks, const std::vector<int>& devices,
                                           std::string& why) {
  // The library first, so that a machine without it is told which it lacks.
  const nccl_api* nccl = nullptr;
  if (status s = gpu_nccl(nccl); !s) {
    why = s.message();
    return nullptr;
  }
  std::vector<int> device_of = devices;
  if (device_of.empty()) {
    const int count = visible_devices(why);
    if (count == 0) return nullptr;
    if (ranks > count) {
      why = "NCCL puts one rank per device: " + std::to_string(ranks) + " ranks need " +
            std::to_string(ranks) + " GPUs, " + std::to_string(count) + " visible";
      return nullptr;
    }
    for (int r = 0; r < ranks; ++r)
      device_of.push_back(r);
  }
  auto b = std::make_unique<nccl_backend>(device_of);
  // The first executor exists now: its construction status says whether NCCL came up.
  void* probe = b->allocate(0, 1);
  if (probe == nullptr) {
    why = "the nccl transport could not start (NCCL or the devices refused)";
    return nullptr;
  }
  b->deallocate(0, probe);
  return b;
}

}  // namespace relay::bench
