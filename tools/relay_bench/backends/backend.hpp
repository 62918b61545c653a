// Where relay-bench runs plans: one executor kind behind a small interface, so the sweep is
// written once for every executor. A backend owns one executor per concurrent job (parallel mode
// runs one plan per group at once, each on its own executor, so no two share scratch) and the
// timer that fits it: a host clock for the CPU executor, device events for a GPU.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "relay/core/status.hpp"
#include "relay/plan/plan.hpp"

namespace relay::bench {

// Times one region of work: start(), the work, stop(), then seconds().
class timer {
 public:
  virtual ~timer() = default;
  virtual void start() = 0;
  virtual void stop() = 0;
  // Seconds from the last start() to the last stop(); waits for the work where it must.
  virtual double seconds() = 0;
};

// One plan with the buffers of every rank (buffer_view{} where the plan needs none).
struct job {
  const plan* p = nullptr;
  std::vector<buffer_view> inputs, outputs;
};

class backend {
 public:
  virtual ~backend() = default;
  // "cpu: 8 ranks, one host thread each" or the devices and their ranks.
  virtual std::string description() const = 0;
  // The largest cache a rerun could find its data in: rotation spans twice this by default.
  virtual std::int64_t cache_bytes() const = 0;
  // Memory for rank r's buffers (nullptr when none is left), and host <-> that memory.
  virtual void* allocate(int rank, std::size_t bytes) = 0;
  virtual void deallocate(int rank, void* p) = 0;
  virtual status write(int rank, void* dst, const void* host_src, std::size_t bytes) = 0;
  virtual status read(int rank, void* host_dst, const void* src, std::size_t bytes) = 0;
  // Runs every job at once (one executor each) and returns when all have finished, or the
  // first failure.
  virtual status run(std::span<const job> jobs) = 0;
  virtual timer& clock() = 0;
  // Frees the scratch the executors keep between runs.
  virtual void release_scratch() = 0;
  // The device of each rank, where ranks run on devices (empty: host threads).
  virtual std::vector<int> rank_devices() const { return {}; }
};

std::unique_ptr<backend> make_cpu_backend(int ranks);

// The GPU backend, where this relay-bench was built with the GPU executor; otherwise nullptr
// and `why` says so. `devices`: rank -> device (empty: round-robin over the visible devices).
// `emulate_mesh`: bytes per second of every ordered pair of ranks, 0 for no emulation
// (gpu_options::emulate_mesh).
std::unique_ptr<backend> make_gpu_backend(int ranks, const std::vector<int>& devices,
                                          std::uint64_t emulate_mesh, std::string& why);

// The nccl transport (nccl_backend.cpp), where this relay-bench was built with NCCL; otherwise
// nullptr and `why` says so. One rank per device.
std::unique_ptr<backend> make_nccl_backend(int ranks, const std::vector<int>& devices,
                                           std::string& why);

}  // namespace relay::bench
