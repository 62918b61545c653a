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
// The parts, each in its own header: runtime handles (gpu/handles.hpp), peer access
// (exec/gpu/peer_access.hpp), the scratch pool (exec/gpu/scratch_pool.hpp), the lowering from plan
// to lane work (exec/gpu/lowering.hpp, no runtime in it), programs and their cache
// (exec/gpu/program.hpp, exec/gpu/program_cache.hpp), the timing of runs (exec/gpu/tracing.hpp).
// This file holds the executor and its issue loop.
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
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "relay/core/dtype.hpp"
#include "relay/core/status.hpp"
#include "relay/exec/executor.hpp"
#include "relay/exec/gpu/lowering.hpp"
#include "relay/exec/gpu/paced_copy.hpp"
#include "relay/exec/gpu/peer_access.hpp"
#include "relay/exec/gpu/program.hpp"
#include "relay/exec/gpu/program_cache.hpp"
#include "relay/exec/gpu/scratch_pool.hpp"
#include "relay/exec/gpu/tracing.hpp"
#include "relay/gpu/fp8_kernels.hpp"
#include "relay/gpu/handles.hpp"
#include "relay/gpu/kernels.hpp"
#include "relay/gpu/runtime.hpp"
#include "relay/plan/plan.hpp"
#include "relay/plan/validate.hpp"

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
  // With time_runs: also an event after every launch and memcpy, for last_run_actions(): where a
  // run's device time goes, phase by phase (a diagnostic; it adds a record per action, and the
  // first timed runs create the events).
  bool time_actions = false;
  // Mesh emulation (docs/mesh-emulation.md): bytes per second of every ordered pair of
  // ranks. Above 0, every copy between two ranks is paced so that each pair moves at most this
  // much at any moment, whatever else runs: a node with one link per pair, on any GPUs. Needs
  // copy_engine::kernel and peer access between the devices in use. 0 (default): off, and the
  // copy path is the batched copy kernel as without it.
  std::uint64_t emulate_mesh = 0;
};

// What the last run issued; for tests and benchmarks.
struct gpu_run_stats {
  bool prepared = false;  // it validated, built and uploaded (a miss of the preparation cache)
  int lanes = 0;          // lanes with work
  int launches = 0, memcpys = 0, waits = 0, records = 0;
};

class gpu_executor : public gpu::device_memory<gpu_executor> {
 public:
  explicit gpu_executor(std::vector<int> rank_device, gpu_options options = {})
      : device_memory(std::move(rank_device)),
        options_(options),
        programs_(options.cached_plans),
        init_(initialize()) {}
  ~gpu_executor() {
    const gpu::device_guard keep;
    (void)wait_all();
    release_scratch();  // also frees the prepared programs
    for (std::size_t l = 0; l < links_.size(); ++l)
      gpu::device_free(lanes_[l].device, links_[l]);
    for (gpu::lane& l : lanes_)
      gpu::close_lane(l);
  }
  gpu_executor(const gpu_executor&) = delete;
  gpu_executor& operator=(const gpu_executor&) = delete;

  // Whether construction succeeded (devices exist, streams and events were created). Every other
  // call returns this status while it is an error.
  const status& init_status() const { return init_; }
  int device_of(int rank) const { return device_of_[static_cast<std::size_t>(rank)]; }
  const gpu_options& options() const { return options_; }
  const gpu_run_stats& last_run() const { return stats_; }

  status run(const plan& p, std::span<const buffer_view> in, std::span<const buffer_view> out) {
    if (!init_) return init_;
    const gpu::device_guard keep;
    stats_ = {};
    gpu::program* prog = programs_.find(p, in, out);
    if (prog == nullptr) {
      if (status s = validate(p, in, out); !s) return s;
      if (status s = prepare(p, in, out, prog); !s) return s;
      stats_.prepared = true;
    }
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
    return tracer_.seconds(lanes_);
  }

  // With gpu_options::time_actions, every launch and memcpy of the last run with its device
  // times (after waiting for the run to end); empty otherwise, or if the runtime cannot say.
  std::vector<gpu_action_time> last_run_actions() {
    if (!init_ || !options_.time_runs || !options_.time_actions) return {};
    return tracer_.actions(lanes_);
  }

  // Mesh emulation: the bytes every link (from * ranks + to) carried since the last call (or
  // since construction), after the work in flight; the counters start again from zero. Empty
  // without emulation.
  status take_link_bytes(std::vector<std::uint64_t>& bytes) {
    bytes.clear();
    if (!init_) return init_;
    if (options_.emulate_mesh == 0) return {};
    const gpu::device_guard keep;
    if (status s = wait_all(); !s) return s;
    bytes.assign(link_count(), 0);
    std::vector<std::uint64_t> lane_bytes(link_count());
    for (std::size_t l = 0; l < links_.size(); ++l) {
      const int device = lanes_[l].device;
      std::uint64_t* counters = links_[l] + link_count();
      if (status s = gpu::device_copy(device, lane_bytes.data(), counters,
                                      lane_bytes.size() * sizeof(std::uint64_t),
                                      "reading the link byte counters");
          !s)
        return s;
      for (std::size_t k = 0; k < bytes.size(); ++k)
        bytes[k] += lane_bytes[k];
      if (status s = gpu::device_zero(device, counters, lane_bytes.size() * sizeof(std::uint64_t));
          !s)
        return s;
    }
    return {};
  }

  // Waits for everything issued and reports the first error.
  status synchronize() {
    if (!init_) return init_;
    const gpu::device_guard keep;
    return wait_all();
  }

  // Frees the scratch cache (after the work in flight); the next run allocates it again. The
  // prepared programs point into it, so they go too.
  void release_scratch() {
    const gpu::device_guard keep;
    (void)wait_all();
    programs_.clear(lanes_);
    scratch_.release();
  }
  // Bytes of scratch the executor holds now, over all devices.
  std::size_t scratch_held() const { return scratch_.held(); }

 private:
  status initialize() {
    int count = 0;
    if (status s = gpu::check_device_map(device_of_, count); !s) return s;
    const gpu::device_guard keep;
    // Lanes, and one scratch slot per distinct device.
    for (const int d : device_of_) {
      int found = -1;
      if (options_.streams == stream_mode::per_device)
        for (std::size_t l = 0; l < lanes_.size(); ++l)
          if (lanes_[l].device == d) found = static_cast<int>(l);
      if (found < 0) {
        found = static_cast<int>(lanes_.size());
        lanes_.push_back({});
        lanes_.back().device = d;
      }
      layout_.lane_of_rank.push_back(found);
      scratch_.add_device(d);
    }
    for (gpu::lane& l : lanes_)
      if (status s = gpu::open_lane(l, options_.time_runs); !s) return s;
    // Peer access between every pair of devices in use, where the hardware has it.
    if (status s = peers_.enable(scratch_.devices(), count); !s) return s;
    layout_.device_of_rank = device_of_;
    layout_.lanes = static_cast<int>(lanes_.size());
    layout_.devices = count;
    layout_.kernel_copy = peers_.matrix();
    if (options_.engine != copy_engine::kernel)
      layout_.kernel_copy.assign(layout_.kernel_copy.size(), false);
    tracer_.open(lanes_.size());
    return options_.emulate_mesh != 0 ? open_links() : status{};
  }

  // Ordered pairs of ranks: the links of an emulated mesh.
  std::size_t link_count() const { return device_of_.size() * device_of_.size(); }

  // Mesh emulation: every lane's link clocks (ranks x ranks, zero: never booked), then as many
  // byte counters, one array per lane on its device. A link (a, b) is booked only by copies
  // rank a issues, all on a's lane, so no clock is shared across devices or lanes.
  status open_links() {
    if (options_.engine != copy_engine::kernel)
      return {errc::unsupported,
              "mesh emulation paces the copy kernel: it needs "
              "copy_engine::kernel, not the memcpy engine"};
    for (std::size_t r = 0; r < device_of_.size(); ++r)
      for (std::size_t q = 0; q < device_of_.size(); ++q)
        if (!layout_.by_kernel(device_of_[r], device_of_[q]))
          return {errc::unsupported,
                  "mesh emulation needs peer access between the devices of every pair of ranks; "
                  "device " +
                      std::to_string(device_of_[r]) + " cannot write to device " +
                      std::to_string(device_of_[q])};
    const std::size_t bytes = 2 * link_count() * sizeof(std::uint64_t);
    for (const gpu::lane& l : lanes_) {
      links_.push_back(static_cast<std::uint64_t*>(gpu::device_allocate(l.device, bytes)));
      if (links_.back() == nullptr)
        return {errc::out_of_memory,
                "no device memory for the link clocks on device " + std::to_string(l.device)};
      if (status s = gpu::device_zero(l.device, links_.back(), bytes); !s) return s;
    }
    return {};
  }

  // device_memory's write and read: runs issued without synchronizing finish first.
  friend class gpu::device_memory<gpu_executor>;
  status finish_issued() { return wait_all(); }

  status wait_all() { return gpu::wait_lanes(lanes_); }

  // Everything about the call that can be wrong, before anything is issued: the plan and the
  // buffers as every executor checks them, then that the memory is the rank's device's.
  status validate(const plan& p, std::span<const buffer_view> in,
                  std::span<const buffer_view> out) const {
    if (p.ranks() != ranks())
      return {errc::invalid_group, "the plan has " + std::to_string(p.ranks()) +
                                       " ranks, the executor maps " + std::to_string(ranks())};
    if (status s = validate_plan(p, in, out); !s) return s;
    return gpu::check_buffer_devices(p, in, out, device_of_);
  }

  // Scratch, lowering, room in the cache, then the program; `prog` points at it in the cache.
  status prepare(const plan& p, std::span<const buffer_view> in, std::span<const buffer_view> out,
                 gpu::program*& prog) {
    std::vector<unsigned char*> scratch;
    // Work in flight may use the old areas, and every prepared program points into them.
    if (status s = scratch_.reserve(p, device_of_, scratch,
                                    [&] {
                                      const status w = wait_all();
                                      programs_.clear(lanes_);
                                      return w;
                                    });
        !s)
      return s;
    const gpu::lowered_plan low = gpu::lower(p, layout_, {in, out, scratch});
    if (status s = programs_.make_room(lanes_, [&] { return wait_all(); }); !s) return s;
    gpu::program built;
    if (status s = gpu::build_program(p, in, out, low, lanes_, built, options_.emulate_mesh); !s)
      return s;
    prog = &programs_.insert(std::move(built));
    return {};
  }

  status issue(const gpu::program& prog) {
    const dtype type = prog.key.type;
    using gpu::action;
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
        if (status s = order_lanes(l, 0); !s) return s;
      }
      for (std::size_t l = 1; l < lanes; ++l) {
        if (!prog.uses_lane[l]) continue;
        if (status s = order_lanes(0, l); !s) return s;
      }
      current = -1;
    }
    if (options_.time_runs)
      if (status s = tracer_.mark(lanes_, prog, &gpu::lane::timing_start, current); !s) return s;
    tracer_.begin();
    for (const action& a : prog.actions) {
      const auto l = static_cast<std::size_t>(a.lane);
      gpu::lane& ln = lanes_[l];
      if (gpu::rt::error_t e = on(l); e != gpu::rt::success)
        return gpu::failure("selecting the device", ln.device, e);
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
        case action::kind::paced_copy:
          what = "launching the paced copy kernel";
          e = gpu::rt::launch(
              prog.streaming_copies ? gpu::paced_copy_kernel<true> : gpu::paced_copy_kernel<false>,
              static_cast<unsigned>(a.tiles), gpu::paced_block, ln.stream,
              static_cast<const gpu::copy_desc*>(a.descs),
              static_cast<const gpu::paced_entry*>(a.entries), a.count, links_[l],
              links_[l] + link_count(), options_.emulate_mesh);
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
        case action::kind::quantize:
        case action::kind::dequantize:
          what = a.what == action::kind::quantize ? "launching the fp8 quantize kernel"
                                                  : "launching the fp8 dequantize kernel";
          e = launch_fp8(a, fp8_format_of(prog.key.wire.taken), type, ln.stream);
          stats_.launches++;
          break;
        case action::kind::memcpy:
          what = "a peer memcpy";
          e = gpu::rt::memcpy_peer_async(a.copy.dst, a.copy.dst_device, a.copy.src,
                                         a.copy.src_device, static_cast<std::size_t>(a.copy.bytes),
                                         ln.stream);
          stats_.memcpys++;
          break;
      }
      if (e != gpu::rt::success) return gpu::failure(what, ln.device, e);
      if (options_.time_runs && options_.time_actions)
        if (status s = tracer_.trace(lanes_, a, what); !s) return s;
    }
    if (options_.time_runs)
      if (status s = tracer_.mark(lanes_, prog, &gpu::lane::timing_end, current); !s) return s;
    for (std::size_t l = 0; l < lanes; ++l)
      stats_.lanes += prog.uses_lane[l] ? 1 : 0;
    return {};
  }

  // A lane's fp8 copy ends of one phase and element width, one list kernel for all of them, with
  // the kernel of their element type (float for float32 data and fp32 partial sums).
  static gpu::rt::error_t launch_fp8(const gpu::action& a, fp8_format f, dtype type,
                                     gpu::rt::stream_t stream) {
    auto go = [&](auto zero) {
      using T = decltype(zero);
      return gpu::launch_fp8_list<T>(a.what == gpu::action::kind::quantize,
                                     static_cast<const gpu::fp8_desc*>(a.descs), a.count, a.tiles,
                                     f, stream);
    };
    if (a.wide) return go(float{});
    return type == dtype::float16 ? go(float16{}) : go(bfloat16{});
  }

  // Lane `to` waits for everything issued so far on lane `from`.
  status order_lanes(std::size_t from, std::size_t to) {
    if (status s = gpu::order_lanes(lanes_[from], lanes_[to]); !s) return s;
    stats_.records++;
    stats_.waits++;
    return {};
  }

  static unsigned grid(std::uint64_t tiles, int resident) {
    const std::uint64_t r = resident > 0 ? static_cast<std::uint64_t>(resident) : 1;
    return static_cast<unsigned>(tiles < r ? tiles : r);
  }

  // Construction fills these through initialize(), so they come before init_.
  gpu_options options_;
  std::vector<gpu::lane> lanes_;
  gpu::lane_layout layout_;
  gpu::scratch_pool scratch_;
  gpu::peer_map peers_;
  gpu::program_cache programs_;
  std::vector<std::uint64_t*> links_;  // mesh emulation: per lane, its link clocks (open_links)
  gpu::run_tracer tracer_;             // time_runs, time_actions
  gpu_run_stats stats_;

  status init_;  // last: initialize() runs in its initializer, after every member above exists
};

static_assert(executor<gpu_executor>);

}  // namespace relay
