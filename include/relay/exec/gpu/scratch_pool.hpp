// Scratch: one grow-only allocation per device, shared by every plan an executor runs, carved
// into the ranks' scratch areas (each 256-byte aligned).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "relay/core/status.hpp"
#include "relay/gpu/handles.hpp"
#include "relay/gpu/runtime.hpp"
#include "relay/plan/plan.hpp"

namespace relay::gpu {

class scratch_pool {
 public:
  static constexpr std::size_t area_alignment = 256;

  scratch_pool() = default;
  scratch_pool(const scratch_pool&) = delete;
  scratch_pool& operator=(const scratch_pool&) = delete;
  ~scratch_pool() { release(); }

  void add_device(int device) {
    for (const slot& s : slots_)
      if (s.device == device) return;
    slots_.push_back({device, nullptr, 0});
  }
  std::vector<int> devices() const {
    std::vector<int> d;
    for (const slot& s : slots_)
      d.push_back(s.device);
    return d;
  }

  // Sets base[r] to rank r's scratch area for `p`, growing a device's allocation where it is too
  // small. Before it frees an allocation that is in use it calls before_free(), which must
  // return once nothing in flight or prepared points into it (a status; an error stops here).
  template <class BeforeFree>
  status reserve(const plan& p, std::span<const int> device_of, std::vector<unsigned char*>& base,
                 BeforeFree&& before_free) {
    base.assign(device_of.size(), nullptr);
    for (slot& d : slots_) {
      std::size_t need = 0;
      for (std::size_t r = 0; r < device_of.size(); ++r)
        if (device_of[r] == d.device) need += rounded(p.scratch_bytes[r]);
      if (need > d.capacity) {
        if (status s = before_free(); !s) return s;
        if (rt::error_t e = rt::set_device(d.device); e != rt::success)
          return failure("selecting the device", d.device, e);
        if (d.base != nullptr) (void)rt::free(d.base);
        d.base = nullptr;
        d.capacity = 0;
        if (rt::error_t e = rt::malloc(&d.base, need); e != rt::success) {
          d.base = nullptr;
          return failure("allocating scratch", d.device, e);
        }
        d.capacity = need;
      }
      std::size_t offset = 0;
      for (std::size_t r = 0; r < device_of.size(); ++r)
        if (device_of[r] == d.device) {
          base[r] = static_cast<unsigned char*>(d.base) + offset;
          offset += rounded(p.scratch_bytes[r]);
        }
    }
    return {};
  }

  // Frees every allocation; the caller makes sure nothing uses them any more.
  void release() {
    for (slot& d : slots_) {
      if (d.base != nullptr) {
        (void)rt::set_device(d.device);
        (void)rt::free(d.base);
      }
      d.base = nullptr;
      d.capacity = 0;
    }
  }
  // Bytes held now, over all devices.
  std::size_t held() const {
    std::size_t n = 0;
    for (const slot& d : slots_)
      n += d.capacity;
    return n;
  }

 private:
  struct slot {
    int device = 0;
    void* base = nullptr;
    std::size_t capacity = 0;
  };
  static std::size_t rounded(std::uint64_t bytes) {
    return static_cast<std::size_t>((bytes + area_alignment - 1) / area_alignment * area_alignment);
  }
  std::vector<slot> slots_;
};

}  // namespace relay::gpu
