// The runtime handles the GPU executor owns: a lane (a stream on a device with its events), the
// current device kept across a call, and the status a failed runtime call becomes.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "relay/core/dtype.hpp"
#include "relay/core/status.hpp"
#include "relay/gpu/runtime.hpp"

namespace relay::gpu {

// A failed runtime call as a status: errc::out_of_memory or errc::gpu_error, naming the call, the
// device and the runtime's message. Clears a non-sticky error so that later calls can proceed.
inline status failure(const char* what, int device, rt::error_t e) {
  (void)rt::get_last_error();
  return {
      rt::is_out_of_memory(e) ? errc::out_of_memory : errc::gpu_error,
      std::string(what) + " on device " + std::to_string(device) + " failed: " + rt::describe(e)};
}

// Restores the calling thread's current device when it goes out of scope.
class device_guard {
 public:
  device_guard() {
    if (rt::get_device(&saved_) != rt::success) {
      saved_ = -1;
      (void)rt::get_last_error();
    }
  }
  ~device_guard() {
    if (saved_ >= 0) (void)rt::set_device(saved_);
  }
  device_guard(const device_guard&) = delete;
  device_guard& operator=(const device_guard&) = delete;

 private:
  int saved_ = -1;
};

// One stream and what is recorded on it. Created by open_lane, destroyed by close_lane.
struct lane {
  int device = 0;
  rt::stream_t stream = nullptr;
  rt::event_t fence = nullptr;                               // orders this lane against another
  rt::event_t timing_start = nullptr, timing_end = nullptr;  // when runs are timed
  std::vector<rt::event_t> events;                           // ordering events of prepared programs
  std::array<int, all_dtypes.size()> reduce_blocks{};        // resident blocks of the reduce kernel
  bool busy = false;                                         // work issued since the last wait
};

inline status open_lane(lane& l, bool timing) {
  if (rt::error_t e = rt::set_device(l.device); e != rt::success)
    return failure("selecting the device", l.device, e);
  if (rt::error_t e = rt::stream_create(&l.stream); e != rt::success)
    return failure("creating a stream", l.device, e);
  if (rt::error_t e = rt::event_create(&l.fence); e != rt::success)
    return failure("creating an event", l.device, e);
  if (timing)
    for (rt::event_t* t : {&l.timing_start, &l.timing_end})
      if (rt::error_t e = rt::event_create(t, true); e != rt::success)
        return failure("creating a timing event", l.device, e);
  return {};
}

inline void close_lane(lane& l) {
  (void)rt::set_device(l.device);
  for (rt::event_t e : l.events)
    (void)rt::event_destroy(e);
  l.events.clear();
  for (rt::event_t* e : {&l.fence, &l.timing_start, &l.timing_end})
    if (*e != nullptr) {
      (void)rt::event_destroy(*e);
      *e = nullptr;
    }
  if (l.stream != nullptr) (void)rt::stream_destroy(l.stream);
  l.stream = nullptr;
}

// At least `n` ordering events on the lane.
inline status reserve_events(lane& l, std::size_t n) {
  while (l.events.size() < n) {
    if (rt::error_t e = rt::set_device(l.device); e != rt::success)
      return failure("selecting the device", l.device, e);
    rt::event_t ev = nullptr;
    if (rt::error_t e = rt::event_create(&ev); e != rt::success)
      return failure("creating an event", l.device, e);
    l.events.push_back(ev);
  }
  return {};
}

// Waits for every busy lane and reports the first error.
inline status wait_lanes(std::span<lane> lanes) {
  rt::error_t first = rt::success;
  int device = 0;
  for (lane& l : lanes) {
    if (!l.busy) continue;
    l.busy = false;
    const rt::error_t e = rt::stream_synchronize(l.stream);
    if (e != rt::success && first == rt::success) {
      first = e;
      device = l.device;
    }
  }
  return first == rt::success ? status{} : failure("running the plan", device, first);
}

// Lane `to` waits for everything issued so far on lane `from`. Leaves `to`'s device current.
inline status fence(lane& from, lane& to) {
  if (rt::error_t e = rt::set_device(from.device); e != rt::success)
    return failure("selecting the device", from.device, e);
  if (rt::error_t e = rt::event_record(from.fence, from.stream); e != rt::success)
    return failure("recording an event", from.device, e);
  if (rt::error_t e = rt::set_device(to.device); e != rt::success)
    return failure("selecting the device", to.device, e);
  if (rt::error_t e = rt::stream_wait_event(to.stream, from.fence); e != rt::success)
    return failure("waiting on an event", to.device, e);
  to.busy = true;
  return {};
}

}  // namespace relay::gpu
