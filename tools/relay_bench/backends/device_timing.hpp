// What the GPU backends of relay-bench (gpu_backend.cpp, nccl_backend.cpp) share: a timer that
// reports the executors' own device-event measure of the last run, a device's L2 size, and the
// backend over executors whose ranks run on devices (device_backend).
// GPU code: include only from files compiled by nvcc or hipcc.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend.hpp"
#include "backends/executor_backend.hpp"
#include "relay/gpu/runtime.hpp"

namespace relay::bench {

// Device events: the executor brackets each run with timing events on every lane it uses
// (gpu_options::time_runs) and reports the longest lane; with several executors at once (parallel
// mode) the longest of them. Where the executor cannot say (an empty plan), the host clock around
// the synchronous run stands in.
class device_event_timer : public timer {
 public:
  std::function<double()> device_seconds;  // the executors' last run, or -1

  void start() override { begin_ = clock::now(); }
  void stop() override { end_ = clock::now(); }
  double seconds() override {
    const double device = device_seconds ? device_seconds() : -1;
    return device >= 0 ? device : std::chrono::duration<double>(end_ - begin_).count();
  }

 private:
  using clock = std::chrono::steady_clock;
  clock::time_point begin_{}, end_{};
};

inline int l2_bytes(int device) {
  int bytes = 0;
#if defined(RELAY_GPU_CUDA)
  (void)cudaDeviceGetAttribute(&bytes, cudaDevAttrL2CacheSize, device);
#else
  (void)hipDeviceGetAttribute(&bytes, hipDeviceAttributeL2CacheSize, device);
#endif
  return bytes;
}

// The L2 of every device the ranks use, each device once (what a rotation of buffers must exceed).
inline std::int64_t cache_bytes_of(const std::vector<int>& device_of_rank) {
  std::int64_t total = 0;
  for (int d : std::set<int>(device_of_rank.begin(), device_of_rank.end()))
    total += l2_bytes(d);
  return total;
}

// The number of visible devices, or 0 with `why` set.
inline int visible_devices(std::string& why) {
  int count = 0;
  if (gpu::rt::error_t e = gpu::rt::device_count(&count); e != gpu::rt::success || count == 0) {
    why = e != gpu::rt::success ? "no usable GPU: " + gpu::rt::describe(e) : "no GPU";
    return 0;
  }
  return count;
}

// An executor_backend whose executors (E: gpu_executor, nccl_executor) run rank r on device
// device_of[r] and time their runs by device events: a run takes the longest executor's time.
template <class E>
class device_backend : public executor_backend<E> {
 public:
  device_backend(typename executor_backend<E>::factory make, std::vector<int> device_of)
      : executor_backend<E>(std::move(make), std::make_unique<device_event_timer>()),
        device_of_(std::move(device_of)) {
    static_cast<device_event_timer&>(this->clock()).device_seconds = [this] {
      double longest = -1;
      for (const auto& e : this->last_executors())
        longest = std::max(longest, e->last_run_seconds());
      return longest;
    };
  }

  std::int64_t cache_bytes() const override { return cache_bytes_of(device_of_); }

 protected:
  const std::vector<int>& device_of() const { return device_of_; }
  std::vector<int> rank_devices() const override { return device_of_; }

 private:
  std::vector<int> device_of_;
};

}  // namespace relay::bench
