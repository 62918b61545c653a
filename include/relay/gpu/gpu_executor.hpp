// The GPU executor: runs any plan on GPUs through HIP (AMD) or the CUDA runtime (NVIDIA).
//
//   relay::gpu_executor gpu({0, 0, 0, 0, 1, 1, 1, 1});   // rank -> device; ranks may share one
//   if (!gpu.init_status()) ...;
//   relay::status s = gpu.run(plan, inputs, outputs);     // device buffers, one per rank
//
// How it runs a plan:
// - Lanes. Work is issued on lanes, one stream each. With stream_mode::per_device (the default)
//   every device has one lane and each phase of the plan costs one launch per device, however
//   many ranks share it: the batched kernels take every rank's operations of the phase from one
//   device-side list. stream_mode::per_rank gives every rank its own stream (and one launch per
//   rank and phase), which is what the memcpy engine wants, so that co-located ranks' copies can
//   overlap.
// - Ordering. Phases run in plan order. Two phases on one lane are ordered by the stream; a phase
//   waits on another lane's event only where the two really conflict: one writes bytes the other
//   reads or writes, by address (so aliasing through in-place buffers is seen too). Waits are
//   pruned with vector clocks: a lane that already waited on a later point of another lane does
//   not wait again. On one device with per-device lanes, a run uses no events at all.
// - Copies. copy_engine::kernel moves every copy of a lane's phase in one launch of the batched
//   copy kernel (a push: the kernel runs on the source's device and writes through peer access);
//   copy_engine::memcpy issues one peer memcpy per copy instead. A copy between two devices
//   without peer access always takes the memcpy path.
// - Preparation is cached. The first run of a plan on a set of buffers validates everything,
//   resolves addresses, builds the descriptor lists and uploads them; a later run with an equal
//   plan and the same buffers only issues the launches. Several such programs are kept (a
//   training step alternates collectives), each with its own lists.
// - Scratch. One grow-only allocation per device, shared by every plan the executor runs, carved
//   into the ranks' scratch areas; release_scratch() frees it.
//
// Every runtime call and launch is checked; failures come back as a status (errc::gpu_error,
// naming the call, the lane's device and the runtime's message). Bad arguments are found before
// anything is issued, so a rejected run leaves every caller buffer untouched. Not thread-safe:
// one thread drives one executor. run() leaves the calling thread's current device as it found it.
//
// Memory the caller passes must be device memory of the rank's device (or managed memory) and
// aligned to the element size. Work the caller issued on other streams into these buffers must be
// complete before run(); with gpu_options::synchronize (the default) run() returns after the
// plan completed, otherwise synchronize() waits and reports errors of the kernels.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "relay/core/dtype.hpp"
#include "relay/core/status.hpp"
#include "relay/exec/executor.hpp"
#include "relay/gpu/kernels.hpp"
#include "relay/gpu/runtime.hpp"
#include "relay/plan/buffers.hpp"
#include "relay/plan/plan.hpp"

namespace relay {

enum class copy_engine : unsigned char { kernel, memcpy };
enum class stream_mode : unsigned char { per_device, per_rank };

struct gpu_options {
  copy_engine engine = copy_engine::kernel;
  stream_mode streams = stream_mode::per_device;
  bool synchronize = true;  // run() waits for the plan to finish and reports kernel errors
  int cached_plans = 8;     // prepared (plan, buffers) pairs kept for reuse, least recent out
  // Bracket every run with timing events on each lane it uses, for last_run_seconds(): the
  // device's own measure of a run, free of the host's launch and synchronization latency.
  bool time_runs = false;
};

// What the last run issued; for tests and benchmarks.
struct gpu_run_stats {
  bool prepared = false;  // it validated, built and uploaded (a miss of the preparation cache)
  int lanes = 0;          // lanes with work
  int launches = 0, memcpys = 0, waits = 0, records = 0;
};

namespace gpu::detail {

struct interval {
  std::uintptr_t lo = 0, hi = 0;  // [lo, hi)
};

inline bool overlaps(const std::vector<interval>& a, const std::vector<interval>& b) {
  for (const interval& x : a)
    for (const interval& y : b)
      if (x.lo < y.hi && y.lo < x.hi) return true;
  return false;
}

struct peer_copy {
  void* dst = nullptr;
  const void* src = nullptr;
  int dst_device = 0, src_device = 0;
  std::size_t bytes = 0;
};

// One lane's share of one plan phase.
struct lane_work {
  int lane = 0;
  std::vector<copy_desc> copies;
  std::vector<reduce_desc> reductions;
  std::vector<peer_copy> memcpys;
  std::vector<interval> reads, writes;
  std::vector<std::pair<std::size_t, std::size_t>> waits;  // (phase, slot) of works to wait for
  std::vector<int> clock;  // per lane: the last work index this one is ordered after
  bool record = false;     // some later work waits on this one
  int event = -1;
  std::uint64_t copy_tiles = 0, reduce_tiles = 0;
  std::size_t copy_offset = 0, reduce_offset = 0;  // bytes into the lane's descriptor buffer
};

struct action {
  enum class kind : unsigned char { wait, record, copy, reduce, memcpy } what = kind::wait;
  int lane = 0;
  int event_lane = 0, event = 0;  // wait, record
  const void* descs = nullptr;    // copy, reduce: device address
  std::uint32_t count = 0;
  std::uint64_t tiles = 0;
  peer_copy copy{};  // memcpy
};

inline bool same_ops(const plan& a, const plan& b) {
  if (a.partial_size != b.partial_size) return false;
  if (a.type != b.type || a.divisor != b.divisor || a.ops.size() != b.ops.size() ||
      a.phases.size() != b.phases.size() || a.sources != b.sources ||
      a.input_bytes != b.input_bytes || a.output_bytes != b.output_bytes ||
      a.scratch_bytes != b.scratch_bytes)
    return false;
  for (std::size_t i = 0; i < a.phases.size(); ++i) {
    const plan_phase &x = a.phases[i], &y = b.phases[i];
    if (x.step != y.step || x.phase != y.phase || x.first != y.first || x.size != y.size)
      return false;
  }
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    const plan_op &x = a.ops[i], &y = b.ops[i];
    if (x.step != y.step || x.phase != y.phase || x.source_count != y.source_count ||
        x.first_source != y.first_source || !(x.dst == y.dst) || x.count != y.count ||
        x.finalize != y.finalize || x.partial_mask != y.partial_mask)
      return false;
  }
  return true;
}

inline bool same_views(std::span<const buffer_view> a, const std::vector<buffer_view>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].data != b[i].data || a[i].bytes != b[i].bytes) return false;
  return true;
}

constexpr std::size_t round_up(std::size_t x, std::size_t a) {
  return (x + a - 1) / a * a;
}

// Peer access belongs to the process, not to an executor: each pair is enabled once. Enabling it
// again returns "already enabled", which the runtime also reports to tools (compute-sanitizer
// lists it as an API error). A cudaDeviceReset/hipDeviceReset by the program forgets the
// runtime's side of this; executors must not outlive one.
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

constexpr const char* buffer_name(buffer b) {
  return b == buffer::input ? "input" : b == buffer::output ? "output" : "scratch";
}

}  // namespace gpu::detail

class gpu_executor {
 public:
  explicit gpu_executor(std::vector<int> rank_device, gpu_options options = {})
      : device_of_(std::move(rank_device)), options_(options), init_(initialize()) {}
  ~gpu_executor() {
    const device_guard keep;
    (void)wait_all();
    release_scratch();  // also frees the prepared programs
    for (lane& l : lanes_) {
      (void)gpu::rt::set_device(l.device);
      for (gpu::rt::event_t e : l.events)
        (void)gpu::rt::event_destroy(e);
      if (l.fence != nullptr) (void)gpu::rt::event_destroy(l.fence);
      if (l.timing_start != nullptr) (void)gpu::rt::event_destroy(l.timing_start);
      if (l.timing_end != nullptr) (void)gpu::rt::event_destroy(l.timing_end);
      if (l.stream != nullptr) (void)gpu::rt::stream_destroy(l.stream);
    }
  }
  gpu_executor(const gpu_executor&) = delete;
  gpu_executor& operator=(const gpu_executor&) = delete;

  // Whether construction succeeded (devices exist, streams and events were created). Every other
  // call returns this status while it is an error.
  const status& init_status() const { return init_; }
  int ranks() const { return static_cast<int>(device_of_.size()); }
  int device_of(int rank) const { return device_of_[static_cast<std::size_t>(rank)]; }
  const gpu_options& options() const { return options_; }
  const gpu_run_stats& last_run() const { return stats_; }

  status run(const plan& p, std::span<const buffer_view> in, std::span<const buffer_view> out) {
    if (!init_) return init_;
    const device_guard keep;
    stats_ = {};
    program* prog = find(p, in, out);
    if (prog == nullptr) {
      if (status s = validate(p, in, out); !s) return s;
      if (status s = prepare(p, in, out); !s) return s;
      prog = &programs_.back();
      stats_.prepared = true;
    }
    prog->last_use = ++clock_;
    status s = issue(*prog);
    if (!s) {
      (void)wait_all();  // leave nothing in flight that the caller cannot see
      return s;
    }
    return options_.synchronize ? wait_all() : status{};
  }

  // Seconds the last run took on the devices (gpu_options::time_runs): per lane it used, from
  // its first operation's start to its last one's end, the longest lane's. Waits for the run.
  // -1 when timing is off, nothing ran, or the runtime could not say.
  double last_run_seconds() {
    if (!init_ || !options_.time_runs) return -1;
    const device_guard keep;
    float longest = -1;
    for (std::size_t l = 0; l < lanes_.size(); ++l) {
      if (!timed_lane_[l]) continue;
      float ms = 0;
      lane& ln = lanes_[l];
      if (gpu::rt::set_device(ln.device) != gpu::rt::success ||
          gpu::rt::event_synchronize(ln.timing_end) != gpu::rt::success ||
          gpu::rt::event_elapsed_ms(&ms, ln.timing_start, ln.timing_end) != gpu::rt::success) {
        (void)gpu::rt::get_last_error();
        return -1;
      }
      longest = std::max(longest, ms);
    }
    return longest < 0 ? -1 : longest * 1e-3;
  }

  // Waits for everything issued and reports the first error.
  status synchronize() {
    if (!init_) return init_;
    const device_guard keep;
    return wait_all();
  }

  void* allocate(int rank, std::size_t bytes) {
    if (!init_ || rank < 0 || rank >= ranks()) return nullptr;
    const device_guard keep;
    void* p = nullptr;
    if (gpu::rt::set_device(device_of(rank)) != gpu::rt::success ||
        gpu::rt::malloc(&p, bytes == 0 ? 1 : bytes) != gpu::rt::success) {
      (void)gpu::rt::get_last_error();
      return nullptr;
    }
    return p;
  }
  void deallocate(int rank, void* p) {
    if (p == nullptr || rank < 0 || rank >= ranks()) return;
    const device_guard keep;
    (void)gpu::rt::set_device(device_of(rank));
    (void)gpu::rt::free(p);
  }
  status write(int rank, void* d, const void* s, std::size_t bytes) {
    return transfer(rank, d, s, bytes, "write");
  }
  status read(int rank, void* h, const void* d, std::size_t bytes) {
    return transfer(rank, h, d, bytes, "read");
  }

  // Frees the scratch cache (after the work in flight); the next run allocates it again. The
  // prepared programs point into it, so they go too.
  void release_scratch() {
    const device_guard keep;
    (void)wait_all();
    drop_programs();
    for (device_scratch& d : scratch_) {
      if (d.base != nullptr) {
        (void)gpu::rt::set_device(d.device);
        (void)gpu::rt::free(d.base);
      }
      d.base = nullptr;
      d.capacity = 0;
    }
  }
  // Bytes of scratch the executor holds now, over all devices.
  std::size_t scratch_held() const {
    std::size_t n = 0;
    for (const device_scratch& d : scratch_)
      n += d.capacity;
    return n;
  }

 private:
  struct lane {
    int device = 0;
    gpu::rt::stream_t stream = nullptr;
    gpu::rt::event_t fence = nullptr;  // orders this lane against the previous run (async mode)
    gpu::rt::event_t timing_start = nullptr, timing_end = nullptr;  // gpu_options::time_runs
    std::vector<gpu::rt::event_t> events;
    std::array<int, all_dtypes.size()> reduce_blocks{};
    bool busy = false;  // work issued since the last wait
  };
  // A plan prepared for one set of buffers: its operation lists on the devices (one allocation
  // per lane) and the actions that issue it.
  struct program {
    plan key;
    std::vector<buffer_view> in, out;
    std::vector<void*> descs;  // per lane, device memory or null
    std::vector<gpu::detail::action> actions;
    std::vector<bool> uses_lane;
    std::uint64_t last_use = 0;
    // Copies with the evict-first hints, where nothing reduces what they bring: side by side on
    // an H200 the hints made all-gather 1-4% faster at 16-256 MB but allreduce and
    // reduce-scatter 2-5% slower, their reductions reading what the copies had just pushed out
    // of L2 (bench/results/2026-11-29-h200-copy-kernel/).
    bool streaming_copies = true;
  };
  struct device_scratch {
    int device = 0;
    void* base = nullptr;
    std::size_t capacity = 0;
  };
  class device_guard {
   public:
    device_guard() {
      if (gpu::rt::get_device(&saved_) != gpu::rt::success) {
        saved_ = -1;
        (void)gpu::rt::get_last_error();
      }
    }
    ~device_guard() {
      if (saved_ >= 0) (void)gpu::rt::set_device(saved_);
    }
    device_guard(const device_guard&) = delete;
    device_guard& operator=(const device_guard&) = delete;

   private:
    int saved_ = -1;
  };

  static status gpu_failure(const char* what, int device, gpu::rt::error_t e) {
    (void)gpu::rt::get_last_error();  // clear a non-sticky error so later calls can proceed
    return {gpu::rt::is_out_of_memory(e) ? errc::out_of_memory : errc::gpu_error,
            std::string(what) + " on device " + std::to_string(device) +
                " failed: " + gpu::rt::describe(e)};
  }

  int lane_of(int rank) const { return lane_of_rank_[static_cast<std::size_t>(rank)]; }

  status initialize() {
    int count = 0;
    if (gpu::rt::error_t e = gpu::rt::device_count(&count); e != gpu::rt::success) {
      (void)gpu::rt::get_last_error();
      return {errc::gpu_error, std::string("no usable GPU: ") + gpu::rt::describe(e)};
    }
    if (device_of_.empty() || device_of_.size() > static_cast<std::size_t>(max_ranks))
      return {errc::invalid_group, "the rank -> device map must name 1.." +
                                       std::to_string(max_ranks) + " ranks, not " +
                                       std::to_string(device_of_.size())};
    for (std::size_t r = 0; r < device_of_.size(); ++r)
      if (device_of_[r] < 0 || device_of_[r] >= count)
        return {errc::invalid_group, "rank " + std::to_string(r) + " maps to device " +
                                         std::to_string(device_of_[r]) + ", but " +
                                         std::to_string(count) + " device(s) exist"};
    const device_guard keep;
    // Lanes, and one scratch slot per distinct device.
    for (std::size_t r = 0; r < device_of_.size(); ++r) {
      const int d = device_of_[r];
      int found = -1;
      if (options_.streams == stream_mode::per_device)
        for (std::size_t l = 0; l < lanes_.size(); ++l)
          if (lanes_[l].device == d) found = static_cast<int>(l);
      if (found < 0) {
        found = static_cast<int>(lanes_.size());
        lanes_.push_back({});
        lanes_.back().device = d;
      }
      lane_of_rank_.push_back(found);
      if (std::none_of(scratch_.begin(), scratch_.end(),
                       [d](const device_scratch& s) { return s.device == d; }))
        scratch_.push_back({d, nullptr, 0});
    }
    for (lane& l : lanes_) {
      if (gpu::rt::error_t e = gpu::rt::set_device(l.device); e != gpu::rt::success)
        return gpu_failure("selecting the device", l.device, e);
      if (gpu::rt::error_t e = gpu::rt::stream_create(&l.stream); e != gpu::rt::success)
        return gpu_failure("creating a stream", l.device, e);
      if (gpu::rt::error_t e = gpu::rt::event_create(&l.fence); e != gpu::rt::success)
        return gpu_failure("creating an event", l.device, e);
      if (options_.time_runs)
        for (gpu::rt::event_t* t : {&l.timing_start, &l.timing_end})
          if (gpu::rt::error_t e = gpu::rt::event_create(t, true); e != gpu::rt::success)
            return gpu_failure("creating a timing event", l.device, e);
    }
    // Peer access between every pair of devices in use, where the hardware has it.
    std::vector<int> devices;
    for (const device_scratch& s : scratch_)
      devices.push_back(s.device);
    peer_.assign(static_cast<std::size_t>(count * count), false);
    for (int a : devices)
      for (int b : devices) {
        if (a == b) continue;
        int can = 0;
        if (gpu::rt::error_t e = gpu::rt::can_access_peer(&can, a, b); e != gpu::rt::success)
          return gpu_failure("querying peer access", a, e);
        if (can == 0) continue;  // copies between a and b fall back to peer memcpy
        if (!gpu::detail::peer_enabled(a, b)) {
          if (gpu::rt::error_t e = gpu::rt::set_device(a); e != gpu::rt::success)
            return gpu_failure("selecting the device", a, e);
          if (gpu::rt::error_t e = gpu::rt::enable_peer_access(b); e != gpu::rt::success)
            return gpu_failure("enabling peer access", a, e);
          gpu::detail::note_peer_enabled(a, b);
        }
        peer_[static_cast<std::size_t>(a * count + b)] = true;
      }
    device_count_ = count;
    timed_lane_.assign(lanes_.size(), false);
    return {};
  }

  bool peer_ok(int from, int to) const {
    return from == to || peer_[static_cast<std::size_t>(from * device_count_ + to)];
  }

  status transfer(int rank, void* d, const void* s, std::size_t bytes, const char* what) {
    if (!init_) return init_;
    if (rank < 0 || rank >= ranks())
      return {errc::invalid_group, std::string(what) + ": no rank " + std::to_string(rank)};
    if (bytes == 0) return {};
    if (d == nullptr || s == nullptr)
      return {errc::invalid_buffer, std::string(what) + ": a null pointer"};
    const device_guard keep;
    if (status st = wait_all(); !st) return st;  // runs issued without synchronizing finish first
    const int dev = device_of(rank);
    if (gpu::rt::error_t e = gpu::rt::set_device(dev); e != gpu::rt::success)
      return gpu_failure(what, dev, e);
    if (gpu::rt::error_t e = gpu::rt::memcpy(d, s, bytes); e != gpu::rt::success)
      return gpu_failure(what, dev, e);
    return {};
  }

  status wait_all() {
    gpu::rt::error_t first = gpu::rt::success;
    int device = 0;
    for (lane& l : lanes_) {
      if (!l.busy) continue;
      l.busy = false;
      const gpu::rt::error_t e = gpu::rt::stream_synchronize(l.stream);
      if (e != gpu::rt::success && first == gpu::rt::success) {
        first = e;
        device = l.device;
      }
    }
    return first == gpu::rt::success ? status{} : gpu_failure("running the plan", device, first);
  }

  // Everything about the call that can be wrong, before anything is issued.
  status validate(const plan& p, std::span<const buffer_view> in,
                  std::span<const buffer_view> out) const {
    const auto n = static_cast<std::size_t>(p.ranks());
    if (p.ranks() != ranks())
      return {errc::invalid_group, "the plan has " + std::to_string(p.ranks()) +
                                       " ranks, the executor maps " + std::to_string(ranks())};
    if (p.input_bytes.size() != n || p.output_bytes.size() != n || p.scratch_bytes.size() != n)
      return {errc::invalid_schedule, "the plan's per-rank sizes do not have one entry per rank"};
    if (p.divisor < 1) return {errc::invalid_schedule, "the plan's divisor must be at least 1"};
    if (p.partial_size < 1) return {errc::invalid_schedule, "the plan's partial size is 0"};
    const auto esize = static_cast<std::uintptr_t>(p.element_size());
    if (esize == 0) return {errc::unsupported, "unknown dtype"};
    // Presence, size, alignment, in-place layout and overlaps: the checks every executor makes.
    if (status s = validate_buffers(p, in, out); !s) return s;
    // What only a GPU executor must know: the memory is the rank's device's (or managed).
    for (std::size_t r = 0; r < n; ++r)
      for (int b = 0; b < 2; ++b) {
        const buffer_view& v = b == 0 ? in[r] : out[r];
        if ((b == 0 ? p.input_bytes[r] : p.output_bytes[r]) == 0) continue;
        const std::string what =
            std::string(b == 0 ? "the input" : "the output") + " of rank " + std::to_string(r);
        int dev = -1;
        const gpu::rt::pointer_kind kind = gpu::rt::classify(v.data, &dev);
        if (kind == gpu::rt::pointer_kind::other)
          return {errc::invalid_buffer, what + " is not GPU memory"};
        if (kind == gpu::rt::pointer_kind::device && dev != device_of(static_cast<int>(r)))
          return {errc::invalid_buffer, what + " is memory of device " + std::to_string(dev) +
                                            ", but the rank runs on device " +
                                            std::to_string(device_of(static_cast<int>(r)))};
      }
    for (std::size_t i = 0; i < p.phases.size(); ++i) {
      const plan_phase& ph = p.phases[i];
      if (std::uint64_t{ph.first} + ph.size > p.ops.size())
        return {errc::invalid_schedule, "plan phase " + std::to_string(i) + " names missing ops"};
    }
    auto check = [&](const plan_operand& o, std::uint64_t count, std::size_t op,
                     std::uintptr_t width) -> status {
      const auto r = static_cast<std::size_t>(o.rank);
      const std::string where = "plan op " + std::to_string(op) + ": ";
      if (r >= n)
        return {errc::invalid_schedule, where + "rank " + std::to_string(r) + " out of range"};
      const std::uint64_t size = o.buf == buffer::input    ? p.input_bytes[r]
                                 : o.buf == buffer::output ? p.output_bytes[r]
                                                           : p.scratch_bytes[r];
      const std::uint64_t bytes = count * width;
      if (o.offset % width != 0 || o.offset > size || bytes > size - o.offset)
        return {errc::invalid_schedule, where + "bytes [" + std::to_string(o.offset) + ", " +
                                            std::to_string(o.offset + bytes) +
                                            ") lie outside the " + gpu::detail::buffer_name(o.buf) +
                                            " of rank " + std::to_string(r) + " (" +
                                            std::to_string(size) + " bytes)"};
      return {};
    };
    for (std::size_t i = 0; i < p.ops.size(); ++i) {
      const plan_op& o = p.ops[i];
      const bool copy = o.phase == phase::transfer;
      if (o.source_count < 1 || o.source_count > max_reduce_inputs ||
          (copy && o.source_count != 1) ||
          std::uint64_t{o.first_source} + o.source_count > p.sources.size())
        return {errc::invalid_schedule, "plan op " + std::to_string(i) + " has a bad source list"};
      if (status s = check(o.dst, o.count, i, static_cast<std::uintptr_t>(p.dst_width(o))); !s)
        return s;
      for (std::size_t k = 0; k < o.source_count; ++k) {
        const plan_operand& src = p.sources[o.first_source + k];
        if (status s = check(src, o.count, i, static_cast<std::uintptr_t>(p.source_width(o, k)));
            !s)
          return s;
        if (!copy && src.rank != o.dst.rank)
          return {errc::invalid_schedule,
                  "plan op " + std::to_string(i) + ": a reduction reads another rank's memory"};
      }
    }
    return {};
  }

  // Scratch: every device's ranks' areas in one grow-only allocation, 256-byte aligned.
  status reserve_scratch(const plan& p, std::vector<unsigned char*>& base) {
    base.assign(static_cast<std::size_t>(ranks()), nullptr);
    for (device_scratch& d : scratch_) {
      std::size_t need = 0;
      for (int r = 0; r < ranks(); ++r)
        if (device_of(r) == d.device)
          need += gpu::detail::round_up(p.scratch_bytes[static_cast<std::size_t>(r)], 256);
      if (need > d.capacity) {
        // Work in flight may use the old area, and every prepared program points into it.
        if (status s = wait_all(); !s) return s;
        drop_programs();
        if (gpu::rt::error_t e = gpu::rt::set_device(d.device); e != gpu::rt::success)
          return gpu_failure("selecting the device", d.device, e);
        if (d.base != nullptr) (void)gpu::rt::free(d.base);
        d.base = nullptr;
        d.capacity = 0;
        if (gpu::rt::error_t e = gpu::rt::malloc(&d.base, need); e != gpu::rt::success) {
          d.base = nullptr;
          return gpu_failure("allocating scratch", d.device, e);
        }
        d.capacity = need;
      }
      std::size_t offset = 0;
      for (int r = 0; r < ranks(); ++r)
        if (device_of(r) == d.device) {
          base[static_cast<std::size_t>(r)] = static_cast<unsigned char*>(d.base) + offset;
          offset += gpu::detail::round_up(p.scratch_bytes[static_cast<std::size_t>(r)], 256);
        }
    }
    return {};
  }

  status prepare(const plan& p, std::span<const buffer_view> in, std::span<const buffer_view> out) {
    using gpu::detail::interval;
    using gpu::detail::lane_work;
    std::vector<unsigned char*> scratch;
    if (status s = reserve_scratch(p, scratch); !s) return s;
    auto address = [&](const plan_operand& o) -> unsigned char* {
      const auto r = static_cast<std::size_t>(o.rank);
      unsigned char* b = o.buf == buffer::input    ? static_cast<unsigned char*>(in[r].data)
                         : o.buf == buffer::output ? static_cast<unsigned char*>(out[r].data)
                                                   : scratch[r];
      return b + o.offset;
    };
    const std::size_t lanes = lanes_.size();
    constexpr std::uint64_t tile_units = gpu::default_block * gpu::default_unroll;

    // 1. Each phase's operations, split by lane.
    std::vector<std::vector<lane_work>> phases(p.phases.size());
    for (std::size_t ph = 0; ph < p.phases.size(); ++ph) {
      std::vector<int> slot(lanes, -1);
      for (const plan_op& o : p.ops_of(p.phases[ph])) {
        if (o.count == 0) continue;
        const std::span<const plan_operand> srcs = p.sources_of(o);
        const int issuer = o.issuer(p.sources);  // the whole pool: issuer() indexes it
        const int l = lane_of(issuer);
        if (slot[static_cast<std::size_t>(l)] < 0) {
          slot[static_cast<std::size_t>(l)] = static_cast<int>(phases[ph].size());
          phases[ph].push_back({});
          phases[ph].back().lane = l;
        }
        lane_work& w = phases[ph][static_cast<std::size_t>(slot[static_cast<std::size_t>(l)])];
        const std::uint64_t bytes = o.count * static_cast<std::uint64_t>(p.dst_width(o));
        unsigned char* dst = address(o.dst);
        w.writes.push_back(
            {reinterpret_cast<std::uintptr_t>(dst), reinterpret_cast<std::uintptr_t>(dst) + bytes});
        std::array<const void*, max_reduce_inputs> ptrs{};
        for (std::size_t s = 0; s < srcs.size(); ++s) {
          ptrs[s] = address(srcs[s]);
          const auto a = reinterpret_cast<std::uintptr_t>(ptrs[s]);
          w.reads.push_back({a, a + o.count * static_cast<std::uint64_t>(p.source_width(o, s))});
        }
        if (o.phase == phase::transfer) {
          const int from = device_of(srcs[0].rank), to = device_of(o.dst.rank);
          if (options_.engine == copy_engine::kernel && peer_ok(from, to))
            w.copies.push_back(gpu::make_copy(ptrs[0], dst, bytes));
          else
            w.memcpys.push_back({dst, ptrs[0], to, from, static_cast<std::size_t>(bytes)});
        } else {
          w.reductions.push_back(gpu::make_reduce(dst, ptrs.data(), o.source_count, o.count,
                                                  p.element_size(), o.finalize ? p.divisor : 1,
                                                  o.partial_mask));
        }
      }
    }

    // 2. Dependencies between lanes: wait for the newest conflicting work of every other lane
    // that this lane is not already ordered after.
    std::vector<std::vector<int>> clock(lanes, std::vector<int>(lanes, -1));
    std::vector<std::vector<std::pair<std::size_t, std::size_t>>> done(lanes);  // per lane: works
    for (std::size_t ph = 0; ph < phases.size(); ++ph) {
      for (std::size_t wi = 0; wi < phases[ph].size(); ++wi) {
        lane_work& w = phases[ph][wi];
        const auto l = static_cast<std::size_t>(w.lane);
        std::vector<int>& mine = clock[l];
        for (std::size_t m = 0; m < lanes; ++m) {
          if (m == l) continue;
          for (int k = static_cast<int>(done[m].size()) - 1; k > mine[m]; --k) {
            lane_work& other = phases[done[m][static_cast<std::size_t>(k)].first]
                                     [done[m][static_cast<std::size_t>(k)].second];
            if (gpu::detail::overlaps(other.writes, w.reads) ||
                gpu::detail::overlaps(other.writes, w.writes) ||
                gpu::detail::overlaps(other.reads, w.writes)) {
              other.record = true;
              w.waits.push_back(done[m][static_cast<std::size_t>(k)]);
              for (std::size_t x = 0; x < lanes; ++x)
                mine[x] = std::max(mine[x], other.clock[x]);
              break;
            }
          }
        }
        mine[l] = static_cast<int>(done[l].size());
        w.clock = mine;
        done[l].push_back({ph, wi});
      }
    }

    // 3. Descriptor lists: one device buffer per lane, copies of all phases then reductions.
    std::vector<std::vector<unsigned char>> host(lanes);
    for (auto& works : phases)
      for (lane_work& w : works) {
        w.copy_tiles = gpu::assign_tiles(w.copies.data(), w.copies.size(), tile_units);
        w.reduce_tiles = gpu::assign_tiles(w.reductions.data(), w.reductions.size(), tile_units);
        auto append = [](std::vector<unsigned char>& h, const void* data, std::size_t n) {
          const std::size_t at = gpu::detail::round_up(h.size(), 16);
          h.resize(at + n);
          if (n != 0) std::memcpy(h.data() + at, data, n);
          return at;
        };
        auto& h = host[static_cast<std::size_t>(w.lane)];
        w.copy_offset = append(h, w.copies.data(), w.copies.size() * sizeof(gpu::copy_desc));
        w.reduce_offset =
            append(h, w.reductions.data(), w.reductions.size() * sizeof(gpu::reduce_desc));
      }
    // Make room first: an evicted program's lists may still be read by work in flight.
    if (programs_.size() >= static_cast<std::size_t>(std::max(options_.cached_plans, 1))) {
      if (status s = wait_all(); !s) return s;
      const auto oldest = std::min_element(
          programs_.begin(), programs_.end(),
          [](const program& a, const program& b) { return a.last_use < b.last_use; });
      free_program(*oldest);
      programs_.erase(oldest);
    }
    program prog;
    prog.descs.assign(lanes, nullptr);
    auto fail = [&](const char* what, int device, gpu::rt::error_t e) {
      free_program(prog);
      return gpu_failure(what, device, e);
    };
    for (std::size_t l = 0; l < lanes; ++l) {
      lane& ln = lanes_[l];
      if (gpu::rt::error_t e = gpu::rt::set_device(ln.device); e != gpu::rt::success)
        return fail("selecting the device", ln.device, e);
      if (!host[l].empty()) {
        if (gpu::rt::error_t e = gpu::rt::malloc(&prog.descs[l], host[l].size());
            e != gpu::rt::success) {
          prog.descs[l] = nullptr;
          return fail("allocating the operation lists", ln.device, e);
        }
        if (gpu::rt::error_t e = gpu::rt::memcpy(prog.descs[l], host[l].data(), host[l].size());
            e != gpu::rt::success)
          return fail("uploading the operation lists", ln.device, e);
      }
      if (ln.reduce_blocks[static_cast<std::size_t>(p.type)] == 0) {
        const gpu::rt::error_t e = visit_dtype(p.type, [&](auto x) {
          using T = decltype(x);
          return gpu::resident_blocks(&ln.reduce_blocks[static_cast<std::size_t>(p.type)],
                                      gpu::batched_reduce_kernel<T>, gpu::default_block, ln.device);
        });
        if (e != gpu::rt::success)
          return fail("querying the reduce kernel's occupancy", ln.device, e);
      }
    }

    // 4. Events for the works that others wait on, then the flat list of actions in issue order
    // (phase by phase, so that every event is recorded before anything waits on it).
    std::vector<int> used(lanes, 0);
    for (auto& works : phases)
      for (lane_work& w : works)
        if (w.record) w.event = used[static_cast<std::size_t>(w.lane)]++;
    for (std::size_t l = 0; l < lanes; ++l) {
      lane& ln = lanes_[l];
      while (ln.events.size() < static_cast<std::size_t>(used[l])) {
        if (gpu::rt::error_t e = gpu::rt::set_device(ln.device); e != gpu::rt::success)
          return fail("selecting the device", ln.device, e);
        gpu::rt::event_t ev = nullptr;
        if (gpu::rt::error_t e = gpu::rt::event_create(&ev); e != gpu::rt::success)
          return fail("creating an event", ln.device, e);
        ln.events.push_back(ev);
      }
    }
    using gpu::detail::action;
    std::vector<action>& actions = prog.actions;
    for (auto& works : phases)
      for (lane_work& w : works) {
        using kind = action::kind;
        for (auto [ph, slot] : w.waits) {
          const lane_work& other = phases[ph][slot];
          actions.push_back(
              {.what = kind::wait, .lane = w.lane, .event_lane = other.lane, .event = other.event});
        }
        const auto* base =
            static_cast<const unsigned char*>(prog.descs[static_cast<std::size_t>(w.lane)]);
        if (!w.copies.empty())
          actions.push_back({.what = kind::copy,
                             .lane = w.lane,
                             .descs = base + w.copy_offset,
                             .count = static_cast<std::uint32_t>(w.copies.size()),
                             .tiles = w.copy_tiles});
        for (const gpu::detail::peer_copy& c : w.memcpys)
          actions.push_back({.what = kind::memcpy, .lane = w.lane, .copy = c});
        if (!w.reductions.empty())
          actions.push_back({.what = kind::reduce,
                             .lane = w.lane,
                             .descs = base + w.reduce_offset,
                             .count = static_cast<std::uint32_t>(w.reductions.size()),
                             .tiles = w.reduce_tiles});
        if (w.record)
          actions.push_back(
              {.what = kind::record, .lane = w.lane, .event_lane = w.lane, .event = w.event});
      }
    prog.uses_lane.assign(lanes, false);
    for (const action& a : actions)
      prog.uses_lane[static_cast<std::size_t>(a.lane)] = true;
    prog.key = p;
    prog.streaming_copies =
        std::none_of(p.phases.begin(), p.phases.end(),
                     [](const plan_phase& ph) { return ph.phase == phase::reduce; });
    prog.in.assign(in.begin(), in.end());
    prog.out.assign(out.begin(), out.end());
    programs_.push_back(std::move(prog));
    return {};
  }

  program* find(const plan& p, std::span<const buffer_view> in, std::span<const buffer_view> out) {
    for (program& g : programs_)
      if (gpu::detail::same_views(in, g.in) && gpu::detail::same_views(out, g.out) &&
          gpu::detail::same_ops(p, g.key))
        return &g;
    return nullptr;
  }
  void free_program(program& g) {
    for (std::size_t l = 0; l < g.descs.size(); ++l)
      if (g.descs[l] != nullptr) {
        (void)gpu::rt::set_device(lanes_[l].device);
        (void)gpu::rt::free(g.descs[l]);
        g.descs[l] = nullptr;
      }
  }
  void drop_programs() {
    for (program& g : programs_)
      free_program(g);
    programs_.clear();
  }

  status issue(const program& prog) {
    const dtype type = prog.key.type;
    using gpu::detail::action;
    const std::size_t lanes = lanes_.size();
    int current = -1;
    auto on = [&](std::size_t l) -> gpu::rt::error_t {
      if (lanes_[l].device == current) return gpu::rt::success;
      current = lanes_[l].device;
      return gpu::rt::set_device(current);
    };
    // Without a final synchronization a run may overlap the previous one, whose last work on any
    // lane may conflict with this run's first work on another: join every busy lane into lane 0,
    // then fork lane 0 to every lane this run uses. Two events per lane and run, none per step.
    if (!options_.synchronize && lanes > 1) {
      for (std::size_t l = 1; l < lanes; ++l) {
        if (!lanes_[l].busy) continue;
        if (status s = fence(l, 0); !s) return s;
      }
      for (std::size_t l = 1; l < lanes; ++l) {
        if (!prog.uses_lane[l]) continue;
        if (status s = fence(0, l); !s) return s;
      }
      current = -1;
    }
    if (status s = mark_timing(prog, &lane::timing_start, current); !s) return s;
    for (const action& a : prog.actions) {
      const auto l = static_cast<std::size_t>(a.lane);
      lane& ln = lanes_[l];
      if (gpu::rt::error_t e = on(l); e != gpu::rt::success)
        return gpu_failure("selecting the device", ln.device, e);
      ln.busy = true;
      gpu::rt::error_t e = gpu::rt::success;
      const char* what = "";
      switch (a.what) {
        case action::kind::wait:
          what = "waiting on an event";
          e = gpu::rt::stream_wait_event(ln.stream, lanes_[static_cast<std::size_t>(a.event_lane)]
                                                        .events[static_cast<std::size_t>(a.event)]);
          stats_.waits++;
          break;
        case action::kind::record:
          what = "recording an event";
          e = gpu::rt::event_record(ln.events[static_cast<std::size_t>(a.event)], ln.stream);
          stats_.records++;
          break;
        case action::kind::copy:
          what = "launching the batched copy kernel";
          e = gpu::rt::launch(
              prog.streaming_copies
                  ? gpu::batched_copy_kernel<>
                  : gpu::batched_copy_kernel<gpu::default_block, gpu::default_unroll, false>,
              gpu::copy_grid(a.tiles), gpu::default_block, ln.stream,
              static_cast<const gpu::copy_desc*>(a.descs), a.count, a.tiles);
          stats_.launches++;
          break;
        case action::kind::reduce:
          what = "launching the batched reduce kernel";
          e = visit_dtype(type, [&](auto x) {
            using T = decltype(x);
            return gpu::rt::launch(gpu::batched_reduce_kernel<T>,
                                   grid(a.tiles, ln.reduce_blocks[static_cast<std::size_t>(type)]),
                                   gpu::default_block, ln.stream,
                                   static_cast<const gpu::reduce_desc*>(a.descs), a.count, a.tiles);
          });
          stats_.launches++;
          break;
        case action::kind::memcpy:
          what = "a peer memcpy";
          e = gpu::rt::memcpy_peer_async(a.copy.dst, a.copy.dst_device, a.copy.src,
                                         a.copy.src_device, a.copy.bytes, ln.stream);
          stats_.memcpys++;
          break;
      }
      if (e != gpu::rt::success) return gpu_failure(what, ln.device, e);
    }
    if (status s = mark_timing(prog, &lane::timing_end, current); !s) return s;
    for (std::size_t l = 0; l < lanes; ++l)
      stats_.lanes += prog.uses_lane[l] ? 1 : 0;
    return {};
  }

  // With gpu_options::time_runs, records one timing event (start or end) on every lane `prog`
  // uses; `current` tracks the selected device.
  status mark_timing(const program& prog, gpu::rt::event_t lane::*which, int& current) {
    if (!options_.time_runs) return {};
    for (std::size_t l = 0; l < lanes_.size(); ++l) {
      timed_lane_[l] = prog.uses_lane[l];
      if (!prog.uses_lane[l]) continue;
      lane& ln = lanes_[l];
      if (ln.device != current) {
        current = ln.device;
        if (gpu::rt::error_t e = gpu::rt::set_device(current); e != gpu::rt::success)
          return gpu_failure("selecting the device", current, e);
      }
      if (gpu::rt::error_t e = gpu::rt::event_record(ln.*which, ln.stream); e != gpu::rt::success)
        return gpu_failure("recording a timing event", ln.device, e);
    }
    return {};
  }

  // Lane `to` waits for everything issued so far on lane `from`.
  status fence(std::size_t from, std::size_t to) {
    lane& a = lanes_[from];
    lane& b = lanes_[to];
    if (gpu::rt::error_t e = gpu::rt::set_device(a.device); e != gpu::rt::success)
      return gpu_failure("selecting the device", a.device, e);
    if (gpu::rt::error_t e = gpu::rt::event_record(a.fence, a.stream); e != gpu::rt::success)
      return gpu_failure("recording an event", a.device, e);
    if (gpu::rt::error_t e = gpu::rt::set_device(b.device); e != gpu::rt::success)
      return gpu_failure("selecting the device", b.device, e);
    if (gpu::rt::error_t e = gpu::rt::stream_wait_event(b.stream, a.fence); e != gpu::rt::success)
      return gpu_failure("waiting on an event", b.device, e);
    b.busy = true;
    stats_.records++;
    stats_.waits++;
    return {};
  }

  static unsigned grid(std::uint64_t tiles, int resident) {
    const std::uint64_t r = resident > 0 ? static_cast<std::uint64_t>(resident) : 1;
    return static_cast<unsigned>(tiles < r ? tiles : r);
  }

  // Construction fills these through initialize(), so they come before init_.
  std::vector<int> device_of_;
  gpu_options options_;
  std::vector<int> lane_of_rank_;
  std::vector<lane> lanes_;
  std::vector<device_scratch> scratch_;
  std::vector<bool> peer_;
  std::vector<bool> timed_lane_;  // lanes the last run marked with timing events
  int device_count_ = 0;

  std::vector<program> programs_;
  std::uint64_t clock_ = 0;
  gpu_run_stats stats_;

  status init_;  // last: initialize() runs in its initializer, after every member above exists
};

static_assert(executor<gpu_executor>);

}  // namespace relay
