// The runtime handles the GPU executor owns: a lane (a stream on a device with its events), the
// current device kept across a call, and the status a failed runtime call becomes; and what every
// executor whose ranks live on devices does alike (memory by rank, timing by events).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "relay/core/dtype.hpp"
#include "relay/core/status.hpp"
#include "relay/gpu/runtime.hpp"
#include "relay/plan/plan.hpp"

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

// Device memory of `device` (nullptr when none is left); keeps the current device.
inline void* device_allocate(int device, std::size_t bytes) {
  const device_guard keep;
  void* p = nullptr;
  if (rt::set_device(device) != rt::success ||
      rt::malloc(&p, bytes == 0 ? 1 : bytes) != rt::success) {
    (void)rt::get_last_error();
    return nullptr;
  }
  return p;
}
inline void device_free(int device, void* p) {
  if (p == nullptr) return;
  const device_guard keep;
  (void)rt::set_device(device);
  (void)rt::free(p);
}
// A blocking copy between host and device memory of `device`, in either direction, complete on
// return: a host-to-device copy has landed (rt::upload), so work on any stream sees it.
inline status device_copy(int device, void* dst, const void* src, std::size_t bytes,
                          const char* what) {
  const device_guard keep;
  if (rt::error_t e = rt::set_device(device); e != rt::success) return failure(what, device, e);
  if (rt::error_t e = rt::upload(dst, src, bytes); e != rt::success)
    return failure(what, device, e);
  return {};
}

// Zeroes `bytes` of device memory of `device`, complete on return (work on any stream sees it).
inline status device_zero(int device, void* dst, std::size_t bytes) {
  const device_guard keep;
  const char* what = "zeroing device memory";
  if (rt::error_t e = rt::set_device(device); e != rt::success) return failure(what, device, e);
  if (rt::error_t e = rt::memset(dst, 0, bytes); e != rt::success) return failure(what, device, e);
  if (rt::error_t e = rt::device_synchronize(); e != rt::success) return failure(what, device, e);
  return {};
}

// An executor's rank -> device map against the devices that exist (their number in `count`):
// 1..max_ranks ranks, each on a device that exists.
inline status check_device_map(std::span<const int> device_of, int& count) {
  count = 0;
  if (rt::error_t e = rt::device_count(&count); e != rt::success) {
    (void)rt::get_last_error();
    return {errc::gpu_error, std::string("no usable GPU: ") + rt::describe(e)};
  }
  if (device_of.empty() || device_of.size() > static_cast<std::size_t>(max_ranks))
    return {errc::invalid_group, "the rank -> device map must name 1.." +
                                     std::to_string(max_ranks) + " ranks, not " +
                                     std::to_string(device_of.size())};
  for (std::size_t r = 0; r < device_of.size(); ++r)
    if (device_of[r] < 0 || device_of[r] >= count)
      return {errc::invalid_group, "rank " + std::to_string(r) + " maps to device " +
                                       std::to_string(device_of[r]) + ", but " +
                                       std::to_string(count) + " device(s) exist"};
  return {};
}

// The memory_provider half (exec/executor.hpp) of an executor whose rank r runs on device
// device_of_[r]. Derived provides init_status() and finish_issued() (waits for the work it issued,
// so that a copy sees its results).
template <class Derived>
class device_memory {
 public:
  int ranks() const { return static_cast<int>(device_of_.size()); }
  void* allocate(int rank, std::size_t bytes) {
    if (!self().init_status() || !known(rank)) return nullptr;
    return device_allocate(device_of_[static_cast<std::size_t>(rank)], bytes);
  }
  void deallocate(int rank, void* p) {
    if (known(rank)) device_free(device_of_[static_cast<std::size_t>(rank)], p);
  }
  status write(int rank, void* d, const void* s, std::size_t bytes) {
    return copy(rank, d, s, bytes, "write");
  }
  status read(int rank, void* h, const void* d, std::size_t bytes) {
    return copy(rank, h, d, bytes, "read");
  }

 protected:
  explicit device_memory(std::vector<int> device_of) : device_of_(std::move(device_of)) {}
  std::vector<int> device_of_;

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
  bool known(int rank) const { return rank >= 0 && rank < ranks(); }
  // A known rank, nothing to do for 0 bytes, no null pointer; the issued work first, then a
  // blocking copy. Keeps the current device.
  status copy(int rank, void* dst, const void* src, std::size_t bytes, const char* what) {
    if (const status& init = self().init_status(); !init) return init;
    if (!known(rank))
      return {errc::invalid_group, std::string(what) + ": no rank " + std::to_string(rank)};
    if (bytes == 0) return {};
    if (dst == nullptr || src == nullptr)
      return {errc::invalid_buffer, std::string(what) + ": a null pointer"};
    const device_guard keep;
    if (status st = self().finish_issued(); !st) return st;
    return device_copy(device_of_[static_cast<std::size_t>(rank)], dst, src, bytes, what);
  }
};

// Device time between two events recorded on one device.
struct timed_span {
  int device = 0;
  rt::event_t start = nullptr, end = nullptr;
};
// The longest of `spans` in seconds, after waiting for each to end; -1 when there is none or the
// runtime could not say (its error cleared). Keeps the current device.
inline double longest_seconds(std::span<const timed_span> spans) {
  const device_guard keep;
  float longest = -1;
  for (const timed_span& s : spans) {
    float ms = 0;
    if (rt::set_device(s.device) != rt::success || rt::event_synchronize(s.end) != rt::success ||
        rt::event_elapsed_ms(&ms, s.start, s.end) != rt::success) {
      (void)rt::get_last_error();
      return -1;
    }
    longest = std::max(longest, ms);
  }
  return longest < 0 ? -1 : longest * 1e-3;
}

// Every buffer `p` uses is memory of its rank's device (device_of[r]), or managed memory.
inline status check_buffer_devices(const plan& p, std::span<const buffer_view> in,
                                   std::span<const buffer_view> out,
                                   std::span<const int> device_of) {
  for (std::size_t r = 0; r < device_of.size(); ++r)
    for (int b = 0; b < 2; ++b) {
      if ((b == 0 ? p.input_bytes[r] : p.output_bytes[r]) == 0) continue;
      const buffer_view& v = b == 0 ? in[r] : out[r];
      const std::string what =
          std::string(b == 0 ? "the input" : "the output") + " of rank " + std::to_string(r);
      int dev = -1;
      const rt::pointer_kind kind = rt::classify(v.data, &dev);
      if (kind == rt::pointer_kind::other)
        return {errc::invalid_buffer, what + " is not GPU memory"};
      if (kind == rt::pointer_kind::device && dev != device_of[r])
        return {errc::invalid_buffer, what + " is memory of device " + std::to_string(dev) +
                                          ", but the rank runs on device " +
                                          std::to_string(device_of[r])};
    }
  return {};
}

// One stream and what is recorded on it. Created by open_lane, destroyed by close_lane.
struct lane {
  int device = 0;
  rt::stream_t stream = nullptr;
  rt::event_t order_event = nullptr;  // orders another lane after this one (order_lanes)
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
  if (rt::error_t e = rt::event_create(&l.order_event); e != rt::success)
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
  for (rt::event_t* e : {&l.order_event, &l.timing_start, &l.timing_end})
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
inline status order_lanes(lane& from, lane& to) {
  if (rt::error_t e = rt::set_device(from.device); e != rt::success)
    return failure("selecting the device", from.device, e);
  if (rt::error_t e = rt::event_record(from.order_event, from.stream); e != rt::success)
    return failure("recording an event", from.device, e);
  if (rt::error_t e = rt::set_device(to.device); e != rt::success)
    return failure("selecting the device", to.device, e);
  if (rt::error_t e = rt::stream_wait_event(to.stream, from.order_event); e != rt::success)
    return failure("waiting on an event", to.device, e);
  to.busy = true;
  return {};
}

}  // namespace relay::gpu
