// Peer access between the devices an executor uses.
//
// Peer access belongs to the process, not to an executor: each pair is enabled once. Enabling it
// again returns "already enabled", which the runtime also reports to tools (compute-sanitizer
// lists it as an API error). A cudaDeviceReset/hipDeviceReset by the program forgets the
// runtime's side of this; executors must not outlive one.
#pragma once

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <utility>
#include <vector>

#include "relay/core/status.hpp"
#include "relay/gpu/handles.hpp"
#include "relay/gpu/runtime.hpp"

namespace relay::gpu {

namespace detail {

struct peer_registry {
  std::mutex lock;
  std::vector<std::pair<int, int>> enabled;
};
inline peer_registry& peers() {
  static peer_registry r;
  return r;
}
inline bool peer_enabled(int a, int b) {
  peer_registry& r = peers();
  const std::lock_guard<std::mutex> hold(r.lock);
  return std::find(r.enabled.begin(), r.enabled.end(), std::pair{a, b}) != r.enabled.end();
}
inline void note_peer_enabled(int a, int b) {
  peer_registry& r = peers();
  const std::lock_guard<std::mutex> hold(r.lock);
  r.enabled.emplace_back(a, b);
}

}  // namespace detail

// Which devices may write each other's memory directly: a device to itself always; two devices
// where the hardware allows it, enabled by `enable` (changes the current device).
class peer_map {
 public:
  // Enables access between every pair of `devices` that can have it; `device_count` is the
  // runtime's, for the size of the map.
  status enable(const std::vector<int>& devices, int device_count) {
    count_ = device_count;
    ok_.assign(static_cast<std::size_t>(count_ * count_), false);
    for (int d = 0; d < count_; ++d)
      ok_[static_cast<std::size_t>(d * count_ + d)] = true;
    for (int a : devices)
      for (int b : devices) {
        if (a == b) continue;
        int can = 0;
        if (rt::error_t e = rt::can_access_peer(&can, a, b); e != rt::success)
          return failure("querying peer access", a, e);
        if (can == 0) continue;  // copies between a and b fall back to peer memcpy
        if (!detail::peer_enabled(a, b)) {
          if (rt::error_t e = rt::set_device(a); e != rt::success)
            return failure("selecting the device", a, e);
          if (rt::error_t e = rt::enable_peer_access(b); e != rt::success)
            return failure("enabling peer access", a, e);
          detail::note_peer_enabled(a, b);
        }
        ok_[static_cast<std::size_t>(a * count_ + b)] = true;
      }
    return {};
  }
  bool ok(int from, int to) const { return ok_[static_cast<std::size_t>(from * count_ + to)]; }
  int device_count() const { return count_; }
  const std::vector<bool>& matrix() const { return ok_; }

 private:
  std::vector<bool> ok_;
  int count_ = 0;
};

}  // namespace relay::gpu
