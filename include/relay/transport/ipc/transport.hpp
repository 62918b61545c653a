// Transport `ipc`: processes of one node, each with its own device (or sharing one), moving data
// by pushing into each other's registered device memory, ordered by device-side signals. No
// host work crosses processes during a call: a call is a few kernel launches on the caller's
// stream, so it can be captured into a CUDA/HIP graph and replayed.
//
//   std::unique_ptr<relay::communicator> comm;
//   relay::communicator_from_environment(relay::ipc_factory(), comm);   // under relay-run
//   relay::allreduce(*comm, groups, send, recv, counts, relay::dtype::bfloat16,
//                    relay::reduce_op::sum, {}, stream);                 // enqueues, returns
//
// Set-up (collective): every rank allocates one area of device memory (ipc/memory.hpp), exports
// it and maps every peer's. A call runs the out-of-place plan on the areas (plan/area_layout.hpp)
// as ipc/kernels.hpp describes: an entry stage (the input staged or read in place, ipc/direct.hpp),
// a stage per phase of the slice this rank issues in (its waits, then its pushes into peers'
// areas or its reductions), an exit stage; one launch each (stepped) or one in all (one-shot),
// as cost/choose.hpp picks once per plan. All on call.stream; run() returns without
// waiting. docs/ipc-transport.md ("As built") says how user memory, the fp8 wire, graph capture,
// failures and ranks sharing one device work, and why.
//
// Only code compiled by nvcc or hipcc may include this header.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "relay/bootstrap/bootstrap.hpp"
#include "relay/bootstrap/environment.hpp"
#include "relay/core/lru.hpp"
#include "relay/core/status.hpp"
#include "relay/cost/choose.hpp"
#include "relay/gpu/handles.hpp"
#include "relay/gpu/kernels.hpp"
#include "relay/gpu/runtime.hpp"
#include "relay/plan/area_layout.hpp"
#include "relay/plan/bind.hpp"
#include "relay/plan/slice.hpp"
#include "relay/plan/validate.hpp"
#include "relay/transport/ipc/direct.hpp"
#include "relay/transport/ipc/graph_inputs.hpp"
#include "relay/transport/ipc/grids.hpp"
#include "relay/transport/ipc/kernels.hpp"
#include "relay/transport/ipc/launch.hpp"
#include "relay/transport/ipc/memory.hpp"
#include "relay/transport/ipc/options.hpp"
#include "relay/transport/ipc/pull.hpp"
#include "relay/transport/ipc/pull_plan.hpp"
#include "relay/transport/ipc/report.hpp"
#include "relay/transport/transport.hpp"

namespace relay::ipc {

class transport final : public relay::transport {
 public:
  // Collective: every rank of `boot` calls it. The bootstrap serves set-up and teardown only.
  static status create(bootstrap& boot, int device, const options& o,
                       std::chrono::milliseconds timeout, std::unique_ptr<transport>& out) {
    std::unique_ptr<transport> t(new transport(boot, device));
    t->form_ = o.form;
    t->costs_ = o.costs;
    t->one_shot_tiles_ = static_cast<std::uint64_t>(std::max(0, o.one_shot_tiles));
    t->device_share_ = std::max(1, o.device_share);
    if (status s = t->area_.open(boot, device, o.bytes_per_rank, timeout); !s) return s;
    if (gpu::rt::error_t e = ticks_per_ms(&t->ticks_per_ms_, device); e != gpu::rt::success)
      return gpu::failure("reading the device clock's rate", device, e);
    if (status s = t->size_grids(boot, timeout); !s) return s;
    // The stage a refused call's entry runs (no lists: the agreement alone).
    const ipc_stage bare{.enter = 1};
    if (gpu::rt::error_t e = gpu::rt::malloc(&t->bare_entry_, sizeof bare); e != gpu::rt::success) {
      t->bare_entry_ = nullptr;
      return gpu::failure("allocating the entry stage", device, e);
    }
    if (gpu::rt::error_t e = gpu::rt::upload(t->bare_entry_, &bare, sizeof bare);
        e != gpu::rt::success)
      return gpu::failure("uploading the entry stage", device, e);
    if (status s = t->graph_inputs_.open(device); !s) return s;
    for (int q = 0; q < t->area_.ranks(); ++q)
      t->peers_.controls[q] = t->area_.control_of(q);
    t->ready_ = true;
    t->watch_peers();
    out = std::move(t);
    return {};
  }

  ~transport() override {
    if (watchdog_.joinable()) {
      stop_watching_.store(true);
      watchdog_.join();
    }
    const gpu::device_guard keep;
    (void)gpu::rt::set_device(device_);
    (void)gpu::rt::device_synchronize();
    // A peer may still publish its last marks into this rank's area: every rank finishes its
    // device work before any frees (bounded: a dead peer costs the wait, nothing more). A
    // transport whose creation failed never ran a call, and its peers may not come here.
    if (ready_) (void)boot_->barrier(std::chrono::seconds(10));
    for (program& p : programs_)
      (void)gpu::rt::free(p.device);
    if (bare_entry_ != nullptr) (void)gpu::rt::free(bare_entry_);
    graph_inputs_.close();
    area_.close();
  }

  std::string_view name() const override { return "ipc"; }

  // Registered user buffers (transport/ipc/direct.hpp; collective, see ipc::area). A rank whose
  // registration did not run to its end is out of step with its peers' rounds (area::in_step):
  // it leaves, as on any failure of its own, and its peers are told at once.
  status register_buffer(void* p, std::size_t bytes, std::chrono::milliseconds timeout) override {
    if (status s = current(); !s) return s;
    status s = area_.register_buffer(*boot_, p, bytes, timeout);
    sort_registrations();
    return area_.in_step() ? s : fail(s);
  }
  status deregister_buffer(void* p, std::chrono::milliseconds timeout) override {
    if (status s = current(); !s) return s;
    status s = area_.deregister_buffer(*boot_, p, timeout, graph_slots_);  // not a graph's
    sort_registrations();
    return area_.in_step() ? s : fail(s);
  }

  // The inputs of the pull form's calls captured with their input staged since the last time
  // (ipc/graph_inputs.hpp): their allocations registered, collectively (as many rounds as the
  // rank with the most), and their words written, so that replays read them in place. An
  // allocation that cannot be registered (no slot left, not exportable, a peer cannot map it)
  // leaves its inputs staged, right either way. Not during capture; synchronizes the device.
  status register_graph_inputs(std::chrono::milliseconds timeout) override {
    if (status s = current(); !s) return s;
    const gpu::device_guard keep;
    if (gpu::rt::error_t e = gpu::rt::set_device(device_); e != gpu::rt::success)
      return fail(gpu::failure("selecting the device", device_, e));
    std::vector<std::pair<void*, std::size_t>> todo;  // allocations, each once
    for (const ipc::graph_inputs::pending_input& in : graph_inputs_.pending()) {
      if (ipc::find_registration(graph_ranges_, in.data, in.bytes) >= 0) continue;
      void* base = nullptr;
      std::size_t size = 0;
      if (gpu::rt::address_range(&base, &size, in.data) != gpu::rt::success) {
        (void)gpu::rt::get_last_error();  // not exportable: it stays staged
        continue;
      }
      if (std::find(todo.begin(), todo.end(), std::pair{base, size}) == todo.end())
        todo.emplace_back(base, size);
    }
    std::uint64_t rounds = 0;
    if (status s = most_of_all(todo.size(), rounds, timeout); !s) return fail(s);
    for (std::uint64_t i = 0; i < rounds; ++i) {
      const bool mine = i < todo.size();
      int slot = -1;
      const status s = area_.register_buffer(*boot_, mine ? todo[i].first : nullptr,
                                             mine ? todo[i].second : 0, timeout, &slot);
      if (!area_.in_step()) return fail(s);
      if (slot >= 0) graph_slots_ |= std::uint32_t{1} << slot;
    }
    sort_registrations();
    std::size_t in_place = 0;
    const auto place = [&](const void* p, std::size_t bytes) -> std::uint64_t {
      const int slot = ipc::find_registration(graph_ranges_, p, bytes);
      if (slot < 0) return 0;
      const std::uint64_t offset =
          reinterpret_cast<std::uintptr_t>(p) - area_.registered_start(slot);
      return offset <= ipc::pull_entry_max_offset
                 ? ipc::graph_input_word(static_cast<std::uint64_t>(slot), offset)
                 : 0;
    };
    if (status s = graph_inputs_.resolve(place, device_, in_place); !s) return fail(s);
    counts_.graph_inputs += in_place;
    return {};
  }
  // Every captured input staged again (its word 0, once the device is idle), then the graphs'
  // registrations ended, collectively: after it, graphs still replay right (staged), and their
  // buffers may be freed.
  status deregister_graph_inputs(std::chrono::milliseconds timeout) override {
    if (status s = current(); !s) return s;
    const gpu::device_guard keep;
    if (gpu::rt::error_t e = gpu::rt::set_device(device_); e != gpu::rt::success)
      return fail(gpu::failure("selecting the device", device_, e));
    if (gpu::rt::error_t e = gpu::rt::device_synchronize(); e != gpu::rt::success)
      return fail(gpu::failure("waiting before the graphs' deregistration", device_, e));
    if (status s = graph_inputs_.clear(device_); !s) return fail(s);
    std::vector<void*> mine;
    for (int k = 0; k < ipc::max_registrations; ++k)
      if (((graph_slots_ >> k) & 1) != 0)
        mine.push_back(reinterpret_cast<void*>(graph_ranges_[static_cast<std::size_t>(k)].begin));
    std::uint64_t rounds = 0;
    if (status s = most_of_all(mine.size(), rounds, timeout); !s) return fail(s);
    for (std::uint64_t i = 0; i < rounds; ++i) {
      const status s = area_.deregister_buffer(*boot_, i < mine.size() ? mine[i] : nullptr, timeout,
                                               ~graph_slots_);
      if (!area_.in_step()) return fail(s);
    }
    graph_slots_ = 0;
    sort_registrations();
    return {};
  }
  // Calls of this rank so far whose input was read from, and whose output written to, the
  // caller's buffers (no copy in, no copy out); tests check that registration took effect.
  struct direct_counts {
    std::uint64_t calls = 0, inputs = 0, outputs = 0, one_shot = 0;
    std::uint64_t pull = 0;     // of the one-shot calls, those of the pull form (ipc/pull.hpp)
    std::uint64_t entries = 0;  // calls entered, refused ones too (the device's call counter)
    // Pull calls captured with a staged input (each given a word), and of those the inputs that
    // register_graph_inputs let replays read in place (ipc/graph_inputs.hpp).
    std::uint64_t captured_inputs = 0, graph_inputs = 0;
  };
  const direct_counts& counts() const { return counts_; }
  // The pull form's per-phase device times of its last ipc::trace_calls calls, block 0's wall
  // clock at each trace point (transport/ipc/pull.hpp; zeros unless built with RELAY_IPC_TRACE=1).
  void device_trace(std::uint64_t (&out)[ipc::trace_calls][ipc::trace_points]) const {
    area_.trace(out);
  }
  int device() const { return device_; }
  std::size_t bytes_per_rank() const { return area_.data_bytes(); }
  // The grids a call may launch: this rank's share of its device (ranks that share a device
  // divide it, so that a rank's spinning kernel leaves room for its peers').
  std::uint64_t one_shot_grid() const { return one_shot_grid_; }
  std::uint64_t stepped_grid() const { return static_cast<std::uint64_t>(max_grid_); }
  int ranks_per_device() const { return share_; }
  // The ranks the device's blocks are divided among: this communicator's there, or the more that
  // options::device_share names (a split communicator's parent's).
  int device_share() const override { return divided_; }
  bool judges_on_host() const override { return false; }
  // On an fp8 wire the sender quantizes into the receiver's slot and the receiver dequantizes in
  // an arrival of its own, so that only the image crosses the link (kernels.hpp).
  fp8_ends wire_ends() const override { return fp8_ends::receiver; }
  bool broken() const override { return !current().ok(); }
  status async_status() const override { return current(); }

  // This rank leaves: its kernels stop at their next look at the host's flag, and every peer is
  // told at once (its alarm, its reason and its dead mark copied into their control blocks, with
  // no kernel of this rank needed), so their waits end with an error naming this rank.
  void abort(const status& why) override {
    const status w = why.ok() ? status{errc::peer_error, "this rank aborted"} : why;
    if (aborted_.ok()) aborted_ = w;
    if (broken_.ok()) broken_ = w;
    if (!ready_) return;
    ipc::alarm_record a;
    a.code = ipc::report_aborted;
    a.by = a.peer = static_cast<std::uint32_t>(boot_->rank());
    a.call = counts_.entries;
    raise(a);
    area_.tell_peers(a, w.message(), std::chrono::milliseconds(200));
  }

  // What the device (or the host's watchdog) reported so far: ok, or why this rank gave up (see
  // the top of this file).
  status device_status() const {
    const ipc::report r = area_.report();
    if (r.code != ipc::report_ok) return ipc::report_status(r, context());
    const ipc::alarm_record a = area_.raised();
    if (a.code != ipc::report_ok) return ipc::alarm_status(a, "", context());
    return {};
  }

  status run(const call_context& call) override {
    if (status s = current(); !s) return s;
    const auto stream = static_cast<gpu::rt::stream_t>(call.stream);
    const gpu::device_guard keep;
    if (gpu::rt::error_t e = gpu::rt::set_device(device_); e != gpu::rt::success)
      return fail(gpu::failure("selecting the device", device_, e));
    timeout_ms_ = call.timeout.count();
    ipc_env env =
        area_.env(static_cast<std::uint64_t>(call.timeout.count()) * ticks_per_ms_, ticks_per_ms_);
    env.record = record_of(call);
    env.system = share_ < area_.ranks() ? 1 : 0;
    // This rank's own refusal: its arguments or buffers (call.local), the call's plan where this
    // rank cannot run it. Either way the rank still takes part in the agreement, so that every
    // peer learns of it at once and the calls stay in step.
    status refusal = call.local;
    const program* prog = nullptr;
    if (refusal && (call.p == nullptr || call.slice == nullptr))
      refusal = {errc::invalid_argument, "the call has no plan or no slice"};
    if (refusal) {
      if (status s = program_for(*call.p, *call.slice, call.fingerprint, stream, prog); !s) {
        if (capturing(stream)) return s;  // nothing issued (see program_for)
        refusal = s;
      }
    }
    if (!refusal) return refuse(refusal, env, stream);
    entries_seen_.store(++counts_.entries);

    const plan& p = *call.p;
    const int me = call.slice->rank;
    const auto r = static_cast<std::size_t>(me);
    const area_layout at = layout_of(p, r);
    if (prog->pull) return run_pull(call, *prog, at, env, stream);
    unsigned char* mine = area_.data(me);
    // Where this call's input and output are: the caller's buffers where they may be used there
    // (ipc/direct.hpp), else staged through the area by the entry's and the exit's copies.
    const std::uint64_t in_bytes = p.input_bytes[r], out_bytes = p.output_bytes[r];
    const ipc::direct_choice direct = ipc::choose_direct(
        prog->direct, call.placement, call.send, in_bytes, call.recv, out_bytes,
        out_bytes > 0 ? ipc::find_registration(eager_ranges_, call.recv.data, out_bytes) : -1);
    if (direct.input) env.in_delta = delta(call.send.data, mine + at.input);
    if (direct.output) {
      env.out_delta = delta(call.recv.data, mine + at.output);
      env.out_slot = static_cast<std::uint64_t>(direct.slot) + 1;
      env.out_offset =
          reinterpret_cast<std::uintptr_t>(call.recv.data) - area_.registered_start(direct.slot);
    }
    ++counts_.calls;
    counts_.inputs += direct.input ? 1 : 0;
    counts_.outputs += direct.output ? 1 : 0;
    const gpu::copy_desc in =
        user_copy(call.send.data, mine + at.input, direct.input ? 0 : in_bytes);
    const gpu::copy_desc out =
        user_copy(mine + at.output, call.recv.data, direct.output ? 0 : out_bytes);
    const std::uint64_t in_tiles = user_tiles(in, direct.input ? 0 : in_bytes);
    const std::uint64_t out_tiles = user_tiles(out, direct.output ? 0 : out_bytes);
    if (prog->one_shot) {
      ++counts_.one_shot;
      return launch_one_shot(p.type, *prog, in, in_tiles, out, out_tiles, env, stream);
    }
    if (status s = launch(p.type, prog->entry, in, in_tiles, env, stream); !s) return s;
    for (const stage_ref& st : prog->phases)
      if (status s = launch(p.type, st, {}, 0, env, stream); !s) return s;
    return launch(p.type, prog->exit, out, out_tiles, env, stream);
  }

 private:
  // The registrations as the calls look them up: the caller's (eager_ranges_, what register_buffer
  // made) apart from the graphs' (graph_ranges_, register_graph_inputs'), after any change.
  void sort_registrations() {
    const std::span<const ipc::registration> all = area_.registered();
    for (std::size_t k = 0; k < all.size(); ++k) {
      const bool graph = ((graph_slots_ >> k) & 1) != 0;
      eager_ranges_[k] = graph ? ipc::registration{} : all[k];
      graph_ranges_[k] = graph ? all[k] : ipc::registration{};
    }
  }

  // The largest `n` of any rank (collective).
  status most_of_all(std::uint64_t n, std::uint64_t& most, std::chrono::milliseconds timeout) {
    std::vector<std::vector<std::byte>> all;
    if (status s = boot_->all_gather(std::as_bytes(std::span(&n, 1)), all, timeout); !s) return s;
    most = 0;
    for (const auto& a : all) {
      std::uint64_t v = 0;
      if (a.size() != sizeof v) return {errc::mismatch, "a malformed count of registrations"};
      std::memcpy(&v, a.data(), sizeof v);
      most = std::max(most, v);
    }
    return {};
  }

  // What the kernels move a staged place by to reach the caller's buffer (ipc_env's deltas).
  static std::int64_t delta(const void* user, const unsigned char* staged) {
    return static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(user) -
                                     reinterpret_cast<std::uintptr_t>(staged));
  }

  // A stage in device memory and its tile count (for the grid).
  struct stage_ref {
    const ipc_stage* device = nullptr;
    std::uint64_t tiles = 0;
    bool fp8 = false;  // it has fp8 ends: the kernel's Fp8 form runs it
  };
  struct program {
    plan key;
    void* device = nullptr;
    stage_ref entry, exit;  // stored contiguously: entry, phases..., exit
    std::vector<stage_ref> phases;
    std::uint64_t most_tiles = 0;  // of any phase
    std::uint64_t last_use = 0;
    bool one_shot = false;  // the form (decided once per plan, alike on every rank)
    bool pull = false;      // of one-shot: the pull form, with pull_args (ipc/pull.hpp)
    bool direct = false;    // the plan lets this rank's input and output stay in user memory
    ipc_pull pull_args{};
  };
  static constexpr std::size_t cached_programs = 64;
  static constexpr std::uint64_t tile_units =
      static_cast<std::uint64_t>(gpu::default_block) * gpu::default_unroll;

  transport(bootstrap& boot, int device) : boot_(&boot), device_(device) {}

  // Broken (a failure left the ranks out of step), or what the device or the watchdog found.
  status current() const {
    if (status s = device_status(); !s) return s;
    return broken_;
  }
  ipc::report_context context() const {
    ipc::report_context c;
    c.me = boot_->rank();
    c.ranks = area_.ranks();
    c.timeout_ms = timeout_ms_;
    c.pids = area_.pids();
    c.own_refusal = refusal_;
    c.aborted = aborted_;
    return c;
  }

  // A failure of this rank's own (a runtime call): part of a call may be enqueued and the ranks
  // out of step, so this rank leaves, as abort() does, and its peers learn of it at once.
  status fail(status s) {
    if (broken_.ok()) abort(s);
    return s;
  }

  bool capturing(gpu::rt::stream_t stream) const {
    bool on = false;
    return gpu::rt::is_capturing(stream, &on) == gpu::rt::success && on;
  }

  // This rank refuses the call: the entry alone (the agreement, with this rank's record saying
  // why and its text for the peers), nothing else; then the rank stays given up.
  status refuse(const status& why, ipc_env& env, gpu::rt::stream_t stream) {
    entries_seen_.store(++counts_.entries);
    env.record.code = static_cast<std::uint8_t>(why.code());
    area_.set_own_text(why.message());
    if (refusal_.ok()) refusal_ = why;
    const gpu::rt::error_t e = ipc::launch_step_kernel(
        dtype::float32, false, 1, stream, static_cast<const ipc_stage*>(bare_entry_), {}, 0, env);
    if (e != gpu::rt::success)
      return fail(gpu::failure("launching the ipc entry kernel", device_, e));
    if (broken_.ok()) broken_ = why;  // its peers learn of it from its record
    return why;
  }

  // This rank's kernels give up at their next look (the first alarm raised stays).
  void raise(const ipc::alarm_record& a) {
    bool expected = false;
    if (raised_.compare_exchange_strong(expected, true)) area_.raise(a);
  }

  // The watchdog: a host thread that looks every 2 ms whether each peer process still exists
  // (kernels cannot see processes), and raises this rank's flag naming the first one gone. Peers
  // in this process, and processes this one cannot see (another pid namespace), are not watched.
  // It allocates nothing while it watches (the calls' allocation count is the process's).
  void watch_peers() {
    const std::span<const std::uint64_t> pids = area_.pids();
    const auto self = static_cast<std::uint64_t>(::getpid());
    struct watched {
      int rank;
      std::uint64_t pid;
      std::string stat;  // /proc/<pid>/stat
    };
    std::vector<watched> peers;
    for (std::size_t q = 0; q < pids.size(); ++q)
      if (pids[q] != 0 && pids[q] != self &&
          (::kill(static_cast<pid_t>(pids[q]), 0) == 0 || errno == EPERM))
        peers.push_back(
            {static_cast<int>(q), pids[q], "/proc/" + std::to_string(pids[q]) + "/stat"});
    if (peers.empty()) return;
    const auto me = static_cast<std::uint32_t>(boot_->rank());
    watchdog_ = std::thread([this, peers = std::move(peers), me] {
      while (!stop_watching_.load()) {
        for (const watched& w : peers)
          if (ipc::process_gone(static_cast<pid_t>(w.pid), w.stat.c_str())) {
            ipc::alarm_record a;
            a.code = ipc::report_peer_exited;
            a.by = me;
            a.peer = static_cast<std::uint32_t>(w.rank);
            a.call = entries_seen_.load();
            raise(a);
            return;
          }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    });
  }

  // The grids of both forms (see the top): the device's resident blocks, the smallest any form of
  // the kernels allows, divided among the ranks that share the device; and the smallest of every
  // rank's, which every rank prices the forms with (cost/form.hpp), so that every rank
  // takes the same form.
  status size_grids(bootstrap& boot, std::chrono::milliseconds timeout) {
    int sms = 0, resident = 0;
    if (gpu::rt::error_t e = gpu::rt::sm_count(&sms, device_); e != gpu::rt::success)
      return gpu::failure("counting the multiprocessors", device_, e);
    if (gpu::rt::error_t e = ipc::fewest_resident_blocks(&resident, device_); e != gpu::rt::success)
      return gpu::failure("querying the ipc kernels' occupancy", device_, e);
    device_info mine;
    mine.sms = sms;
    mine.resident = resident;
    mine.form = static_cast<std::int64_t>(form_);
    mine.one_shot_tiles = static_cast<std::int64_t>(one_shot_tiles_);
    mine.launch = costs_.launch;
    mine.signal = costs_.signal;
    mine.tile = costs_.tile;
    mine.share_at_least = device_share_;
#if defined(RELAY_GPU_HIP)
    const gpu::rt::error_t placed = hipDeviceGetPCIBusId(mine.place.data(), 31, device_);
#else
    const gpu::rt::error_t placed = cudaDeviceGetPCIBusId(mine.place.data(), 31, device_);
#endif
    if (placed != gpu::rt::success)
      return gpu::failure("reading the device's PCI address", device_, placed);
    std::vector<std::vector<std::byte>> all;
    if (status s = boot.all_gather(std::as_bytes(std::span(&mine, 1)), all, timeout); !s) return s;
    std::vector<device_info> devices(all.size());
    for (std::size_t q = 0; q < all.size(); ++q)
      if (all[q].size() == sizeof(device_info))
        std::memcpy(&devices[q], all[q].data(), sizeof(device_info));
    for (std::size_t q = 0; q < devices.size(); ++q)
      if (!devices[q].same_choice(mine))
        return {errc::invalid_argument,
                "rank " + std::to_string(q) +
                    " chooses the ipc transport's forms with other "
                    "options than rank " +
                    std::to_string(boot.rank()) +
                    " (RELAY_IPC_FORM, RELAY_IPC_ONE_SHOT_TILES, RELAY_IPC_LAUNCH_US, "
                    "RELAY_IPC_SIGNAL_US, RELAY_IPC_TILE_US): every rank must set them alike"};
    const grids g = grids_of(devices, boot.rank());
    share_ = g.share;
    divided_ = g.divided;
    max_grid_ = static_cast<int>(g.stepped);
    one_shot_grid_ = g.one_shot;
    priced_one_shot_grid_ = g.priced_one_shot;
    priced_stepped_grid_ = g.priced_stepped;
    return {};
  }

  // The entry's or exit's copy between the user's buffer and the area (none when bytes is 0).
  static gpu::copy_desc user_copy(const void* src, void* dst, std::uint64_t bytes) {
    return bytes > 0 ? gpu::make_copy(src, dst, bytes) : gpu::copy_desc{};
  }
  static std::uint64_t user_tiles(const gpu::copy_desc& c, std::uint64_t bytes) {
    return bytes > 0 ? gpu::tiles_for(c.units, tile_units) : 0;
  }

  status launch(dtype type, const stage_ref& st, const gpu::copy_desc& user,
                std::uint64_t user_tiles, const ipc_env& env, gpu::rt::stream_t stream) {
    const std::uint64_t tiles = std::max<std::uint64_t>(1, st.tiles + user_tiles);
    const auto most = static_cast<std::uint64_t>(std::max(1, max_grid_));
    const auto grid = static_cast<unsigned>(std::min(tiles, most));
    const gpu::rt::error_t e =
        ipc::launch_step_kernel(type, st.fp8, grid, stream, st.device, user, user_tiles, env);
    if (e != gpu::rt::success)
      return fail(gpu::failure("launching the ipc step kernel", device_, e));
    return {};
  }

  // The whole call in one launch, one block per tile of its largest stage up to one per
  // multiprocessor (all resident; a larger stage's blocks walk its tiles in rounds).
  status launch_one_shot(dtype type, const program& prog, const gpu::copy_desc& in,
                         std::uint64_t in_tiles, const gpu::copy_desc& out, std::uint64_t out_tiles,
                         const ipc_env& env, gpu::rt::stream_t stream) {
    const auto grid = static_cast<unsigned>(std::min(
        one_shot_grid_, std::max<std::uint64_t>({1, prog.most_tiles, prog.entry.tiles + in_tiles,
                                                 prog.exit.tiles + out_tiles})));
    const auto count = static_cast<std::uint32_t>(prog.phases.size() + 2);
    const gpu::rt::error_t e = ipc::launch_one_shot_kernel(
        type, grid, stream, prog.entry.device, count, in, in_tiles, out, out_tiles, env);
    if (e != gpu::rt::success)
      return fail(gpu::failure("launching the ipc one-shot kernel", device_, e));
    return {};
  }

  // A call of the pull form (ipc/pull.hpp): the output always in the caller's buffer (only this
  // rank writes it); the input read by the peers where the caller keeps it when that lies in a
  // registration and is 16-byte aligned (and is not also the output), else staged by the kernel's
  // own copy; this rank reads its own input where it is.
  status run_pull(const call_context& call, const program& prog, const area_layout& at,
                  ipc_env& env, gpu::rt::stream_t stream) {
    const plan& p = *call.p;
    const auto r = static_cast<std::size_t>(call.slice->rank);
    unsigned char* mine = area_.data(call.slice->rank);
    const std::uint64_t in_bytes = p.input_bytes[r], out_bytes = p.output_bytes[r];
    env.in_place = call.placement == placement::in_place ? 1 : 0;
    if (in_bytes > 0) env.in_delta = delta(call.send.data, mine + at.input);
    if (out_bytes > 0) env.out_delta = delta(call.recv.data, mine + at.output);
    const int slot = ipc::choose_pull_input(call.placement, call.send, in_bytes, eager_ranges_);
    // Its offset in the registration's allocation, as the entry words carry it (56 bits: no
    // allocation comes near; beyond, the input is staged, with the same result).
    const std::uint64_t offset =
        slot < 0 ? 0
                 : reinterpret_cast<std::uintptr_t>(call.send.data) - area_.registered_start(slot);
    const bool in_direct = slot >= 0 && offset <= ipc::pull_entry_max_offset;
    gpu::copy_desc in{};
    std::uint64_t in_tiles = 0;
    if (in_direct) {
      env.in_slot = static_cast<std::uint64_t>(slot) + 1;
      env.in_offset = offset;
    } else if (in_bytes > 0 && prog.pull_args.readers != 0) {
      in = gpu::make_copy(call.send.data, mine + at.input, in_bytes);
      in_tiles = gpu::tiles_for(in.units, ipc::pull_block_threads);
      // Captured: a word that register_graph_inputs may point at the input where it is (on the
      // terms choose_pull_input sets for a registered one).
      if (call.placement != placement::in_place && ipc::direct_aligned(call.send.data) &&
          capturing(stream)) {
        env.in_word = graph_inputs_.take(call.send.data, in_bytes);
        counts_.captured_inputs += env.in_word != nullptr ? 1 : 0;
      }
    }
    ++counts_.calls;
    ++counts_.one_shot;
    ++counts_.pull;
    counts_.inputs += in_direct ? 1 : 0;
    counts_.outputs += out_bytes > 0 ? 1 : 0;
    const gpu::rt::error_t e =
        ipc::launch_pull_kernel(p.type, stream, prog.pull_args, peers_, in, in_tiles, env);
    if (e != gpu::rt::success)
      return fail(gpu::failure("launching the ipc pull kernel", device_, e));
    return {};
  }

  // The pull program of this rank for `p` (pull_applies): its sum against the staged places.
  ipc_pull pull_program(const plan& p, int me) const {
    const ipc::pull_role role = ipc::pull_role_of(p, me);
    ipc_pull a;
    a.readers = role.readers;
    if (role.members.empty()) return a;  // grid 1: the agreement alone
    a.grid = ipc::pull_grid(p, priced_one_shot_grid_);
    a.members = static_cast<std::uint32_t>(role.members.size());
    for (std::size_t k = 0; k < role.members.size(); ++k) {
      const int q = role.members[k];
      a.member[k] = static_cast<std::uint16_t>(q);
      if (q == me) a.mine = static_cast<std::uint32_t>(k);
      a.src[k] = area_.data(q) + layout_of(p, static_cast<std::size_t>(q)).input;
    }
    a.dst = area_.data(me) + layout_of(p, static_cast<std::size_t>(me)).output;
    a.count = role.count;
    a.divisor = p.divisor;
    return a;
  }

  // What depends only on the plan, checked when a plan is first seen (so every rank refuses
  // alike, with nothing enqueued). Per call it would cost more than the launches: validate_plan
  // alone took 4-13 us a call on a slow host for A=2 allreduce shapes.
  status check(const plan& p) const {
    if (status s = validate_plan(p); !s) return s;
    if (p.ranks() != area_.ranks())
      return {errc::invalid_argument, "the plan has " + std::to_string(p.ranks()) +
                                          " ranks; the ipc transport has " +
                                          std::to_string(area_.ranks())};
    if (p.in_place)
      return {errc::invalid_argument, "the ipc transport runs the out-of-place plan of a call"};
    if (2 * p.phases.size() + 1 >= signal_abort)  // marks: up to two per phase
      return {errc::unsupported, "the plan has more phases than a signal word counts"};
    if (const std::uint64_t need = largest_area(p); need > area_.data_bytes())
      return {errc::out_of_memory, "the call needs " + std::to_string(need) +
                                       " bytes of registered memory per rank; the ipc transport "
                                       "has " +
                                       std::to_string(area_.data_bytes()) +
                                       " (raise RELAY_IPC_BYTES or options::bytes_per_rank)"};
    return {};
  }

  // The cached program of this plan, else checked, built and uploaded (not while capturing).
  // A repeated call (the same plan object and a non-zero fingerprint, as the communicator passes
  // for one cached shape) skips even the comparison of plans.
  status program_for(const plan& p, const plan_slice& slice, std::uint64_t fingerprint,
                     gpu::rt::stream_t stream, const program*& out) {
    if (fingerprint != 0 && &p == last_plan_ && fingerprint == last_fingerprint_) {
      programs_[last_index_].last_use = ++uses_;
      out = &programs_[last_index_];
      return {};
    }
    last_plan_ = nullptr;
    for (std::size_t i = 0; i < programs_.size(); ++i)
      if (programs_[i].key == p) {
        programs_[i].last_use = ++uses_;
        remember(p, fingerprint, i);
        out = &programs_[i];
        return {};
      }
    if (status s = check(p); !s) return s;
    bool capturing = false;
    if (gpu::rt::error_t e = gpu::rt::is_capturing(stream, &capturing); e != gpu::rt::success)
      return gpu::failure("asking whether the stream is capturing", device_, e);
    if (capturing)
      return {errc::invalid_argument,
              "the ipc transport prepares each call shape on its first call, which allocates: "
              "make one call of this shape before capturing it into a graph"};
    if (programs_.size() >= cached_programs) {
      // The oldest may still be read by work in flight.
      if (gpu::rt::error_t e = gpu::rt::device_synchronize(); e != gpu::rt::success)
        return gpu::failure("waiting before evicting a descriptor list", device_, e);
      evict_least_recent(programs_, [](program& x) { (void)gpu::rt::free(x.device); });
    }
    program built;
    if (status s = build(p, slice, stream, built); !s) return s;
    built.last_use = ++uses_;
    programs_.push_back(std::move(built));
    remember(p, fingerprint, programs_.size() - 1);
    out = &programs_.back();
    return {};
  }
  void remember(const plan& p, std::uint64_t fingerprint, std::size_t index) {
    last_plan_ = &p;
    last_fingerprint_ = fingerprint;
    last_index_ = index;
  }

  // The stages of this rank's slice as device-side lists, in one allocation. The slice is cut
  // with the receiver's fp8 ends (wire_ends).
  status build(const plan& p, const plan_slice& slice, gpu::rt::stream_t stream, program& out) {
    const bool fp8 = p.wire.taken != wire_format::native;
    if (slice.marks_per_phase != (fp8 ? 2 : 1))
      return {errc::invalid_argument,
              "the slice was cut with other fp8 ends than the ipc transport's (wire_ends)"};
    auto address = [&](const plan_operand& o) {
      return address_of(o, areas_at(area_.data(o.rank), layout_of(p, o.rank)));
    };
    auto waits_of = [&](const std::vector<slice_wait>& ws) {
      std::vector<ipc_wait> v;
      for (const slice_wait& w : ws) {
        if (w.phase < 0) continue;  // an entry: the entry stage waited for every peer's
        ipc_wait x;
        x.peer = w.peer;
        x.phase = w.phase;
        x.done = slice_mark(slice, w);
        if (w.phase >= 0) {
          const plan_phase& ph = p.phases[static_cast<std::size_t>(w.phase)];
          x.step = ph.step;
          x.kind = w.arrival                   ? ipc::wait_arrival
                   : ph.phase == phase::reduce ? ipc::wait_reduce
                                               : ipc::wait_transfer;
        }
        v.push_back(x);
      }
      return v;
    };
    struct host_stage {
      std::vector<ipc_wait> waits;
      std::vector<gpu::copy_desc> copies;
      std::vector<gpu::reduce_desc> reduces;
      std::vector<ipc_copy_tags> copy_tags;      // parallel to copies
      std::vector<ipc_reduce_tags> reduce_tags;  // parallel to reduces
      std::vector<gpu::fp8_desc> fp8[2];         // ends of elements, of float partials
      bool moves = false;                        // some operand has a tag
      ipc_stage s;
    };
    // Which operands follow the call's buffers (ipc/direct.hpp); none where the plan breaks the
    // rules that allow it (then every call of it is staged).
    const int me = slice.rank;
    out.direct = !fp8 && ipc::plan_runs_direct(p);
    auto tag = [&](const plan_operand& o) {
      return out.direct ? ipc::operand_tag(o, me) : ipc::tag_fixed;
    };
    // The form, priced alike on every rank (cost/choose.hpp).
    const std::vector<std::uint64_t> priced = plan_stages(p, tile_units * 16);
    const std::uint64_t largest = *std::max_element(priced.begin(), priced.end());
    const bool one_shot_fits = !fp8 && one_shot_tiles_ > 0 && largest <= one_shot_tiles_;
    const std::uint64_t pull_tiles = ipc::pull_stage_tiles(p, tile_units * 16);
    const bool pull_fits = one_shot_fits && ipc::pull_applies(p) && pull_tiles <= one_shot_tiles_;
    const form_choice form =
        choose_form(form_, p, {one_shot_fits, pull_fits},
                    price_forms(priced, costs_, priced_one_shot_grid_, priced_stepped_grid_));
    out.pull = form.pull;
    out.one_shot = form.one_shot;
    if (out.pull) out.pull_args = pull_program(p, me);
    std::vector<host_stage> stages;
    host_stage entry;
    entry.s.enter = 1;  // the agreement: it waits for every peer's entry, so no stage waits for one
    stages.push_back(entry);
    for (const slice_phase& sp : slice.phases) {
      if (sp.issued.empty()) continue;  // only receives: the peers' waits cover them
      host_stage h;
      h.waits = waits_of(sp.waits);
      h.s.publish = static_cast<std::int32_t>(slice_mark(
          slice,
          {static_cast<std::uint16_t>(me), static_cast<std::int32_t>(sp.index), sp.arrival}));
      h.s.fp8_dequantize = sp.arrival ? 1 : 0;
      h.s.fp8_format = static_cast<std::uint32_t>(fp8 ? fp8_format_of(p.wire.taken) : fp8_format{});
      for (std::uint32_t i : sp.issued) {
        const plan_op& o = p.ops[i];
        if (o.count == 0) continue;
        const auto sources = p.sources_of(o);
        if (fp8 && p.crosses_wire(o)) {
          // Quantize into the receiver's slot, or (arrival) dequantize from this rank's.
          const plan_operand slot = wire_recv_end(p, i);
          const bool wide = (sp.arrival ? p.dst_width(o) : p.source_width(o, 0)) == 4;
          h.fp8[wide ? 1 : 0].push_back(
              sp.arrival ? gpu::fp8_desc{address(slot), address(o.dst), o.count, 0}
                         : gpu::fp8_desc{address(sources[0]), address(slot), o.count, 0});
          continue;
        }
        if (o.phase == phase::transfer) {
          h.copies.push_back(
              gpu::make_copy(address(sources[0]), address(o.dst), o.count * p.dst_width(o)));
          const ipc_copy_tags g{tag(sources[0]), tag(o.dst)};
          if (g.dst >= ipc::tag_peer_output) h.s.push_mask |= std::uint64_t{1} << o.dst.rank;
          h.moves = h.moves || g.src != ipc::tag_fixed || g.dst != ipc::tag_fixed;
          h.copy_tags.push_back(g);
          continue;
        }
        ipc_reduce_tags g;
        g.dst = tag(o.dst);
        bool moves = g.dst != ipc::tag_fixed;
        for (std::size_t k = 0; k < sources.size(); ++k) {
          g.src[k] = tag(sources[k]);
          moves = moves || g.src[k] != ipc::tag_fixed;
        }
        h.moves = h.moves || moves;
        h.reduce_tags.push_back(g);
        h.reduces.push_back(gpu::reduce_of(p, o, address));
      }
      h.s.copy_tiles = gpu::assign_tiles(h.copies.data(), h.copies.size(), tile_units);
      h.s.reduce_tiles = gpu::assign_tiles(h.reduces.data(), h.reduces.size(), tile_units);
      for (int w = 0; w < 2; ++w)
        h.s.fp8_tiles[w] = gpu::assign_fp8_tiles(
            h.fp8[w], w == 1 ? sizeof(float) : static_cast<std::size_t>(p.element_size()));
      stages.push_back(std::move(h));
    }
    host_stage exit;
    exit.waits = waits_of(slice.exit_waits);
    stages.push_back(exit);

    // Every rank's staged output here: where a peer's output delta is measured from.
    std::vector<std::uint64_t> peer_out(static_cast<std::size_t>(p.ranks()));
    for (std::size_t q = 0; q < peer_out.size(); ++q)
      peer_out[q] = reinterpret_cast<std::uintptr_t>(area_.data(static_cast<int>(q)) +
                                                     layout_of(p, q).output);

    // One blob: the stage structs first, then each stage's lists (16-byte aligned), then
    // peer_out.
    auto up = [](std::size_t x) { return (x + 15) / 16 * 16; };
    std::size_t bytes = up(stages.size() * sizeof(ipc_stage));
    for (const host_stage& h : stages)
      bytes +=
          up(h.waits.size() * sizeof(ipc_wait)) + up(h.copies.size() * sizeof(gpu::copy_desc)) +
          up(h.reduces.size() * sizeof(gpu::reduce_desc)) +
          (h.moves ? up(h.copy_tags.size() * sizeof(ipc_copy_tags)) +
                         up(h.reduce_tags.size() * sizeof(ipc_reduce_tags))
                   : 0) +
          up(h.fp8[0].size() * sizeof(gpu::fp8_desc)) + up(h.fp8[1].size() * sizeof(gpu::fp8_desc));
    bytes += up(peer_out.size() * sizeof(std::uint64_t));
    if (gpu::rt::error_t e = gpu::rt::malloc(&out.device, bytes); e != gpu::rt::success) {
      out.device = nullptr;
      return gpu::failure("allocating the ipc descriptor lists", device_, e);
    }
    auto* base = static_cast<unsigned char*>(out.device);
    std::vector<unsigned char> host(bytes);
    std::size_t at = up(stages.size() * sizeof(ipc_stage));
    auto place = [&](const auto& v) {
      using E = typename std::decay_t<decltype(v)>::value_type;
      const std::size_t n = v.size() * sizeof(E);
      if (n > 0) std::memcpy(host.data() + at, v.data(), n);
      const auto* where = reinterpret_cast<const E*>(base + at);
      at += up(n);
      return where;
    };
    const std::uint64_t* peer_out_at = place(peer_out);
    for (std::size_t i = 0; i < stages.size(); ++i) {
      host_stage& h = stages[i];
      h.s.waits = place(h.waits);
      h.s.copies = place(h.copies);
      h.s.reduces = place(h.reduces);
      if (h.moves) {
        h.s.copy_tags = h.copy_tags.empty() ? nullptr : place(h.copy_tags);
        h.s.reduce_tags = h.reduce_tags.empty() ? nullptr : place(h.reduce_tags);
        h.s.peer_out = peer_out_at;
      }
      for (int w = 0; w < 2; ++w) {
        h.s.fp8[w] = h.fp8[w].empty() ? nullptr : place(h.fp8[w]);
        h.s.fp8_count[w] = static_cast<std::uint32_t>(h.fp8[w].size());
      }
      h.s.wait_count = static_cast<std::uint32_t>(h.waits.size());
      h.s.copy_count = static_cast<std::uint32_t>(h.copies.size());
      h.s.reduce_count = static_cast<std::uint32_t>(h.reduces.size());
      std::memcpy(host.data() + i * sizeof(ipc_stage), &h.s, sizeof h.s);
      const std::uint64_t fp8_tiles = h.s.fp8_tiles[0] + h.s.fp8_tiles[1];
      const stage_ref ref{reinterpret_cast<const ipc_stage*>(base) + i,
                          h.s.copy_tiles + h.s.reduce_tiles + fp8_tiles, fp8_tiles > 0};
      if (i == 0)
        out.entry = ref;
      else if (i + 1 == stages.size())
        out.exit = ref;
      else
        out.phases.push_back(ref);
      if (i > 0 && i + 1 < stages.size()) out.most_tiles = std::max(out.most_tiles, ref.tiles);
    }
    // On the call's stream, so the launches that read the lists come after them (a plain memcpy
    // from pageable memory may return before the device has the bytes; see gpu::rt::upload).
    // Pageable memory is staged before the call returns, so `host` may go.
    if (gpu::rt::error_t e = gpu::rt::memcpy_async(out.device, host.data(), bytes, stream);
        e != gpu::rt::success) {
      (void)gpu::rt::free(out.device);
      out.device = nullptr;
      return gpu::failure("uploading the ipc descriptor lists", device_, e);
    }
    out.key = p;
    return {};
  }

  bootstrap* boot_;
  bool ready_ = false;  // created: its peers mapped its area
  int device_ = 0;
  ipc::area area_;
  std::uint64_t ticks_per_ms_ = 1;
  int max_grid_ = 1;
  call_form form_ = call_form::automatic;
  form_costs costs_{};
  std::uint64_t one_shot_tiles_ = 0;
  int share_ = 1;                    // ranks on this device
  int device_share_ = 1;             // options::device_share
  int divided_ = 1;                  // the ranks the grids divide the device among
  std::uint64_t one_shot_grid_ = 1;  // this rank's one-shot launch grid (max_grid_: stepped)
  std::uint64_t priced_one_shot_grid_ = 1, priced_stepped_grid_ = 1;  // the smallest of all ranks'
  direct_counts counts_;
  long long timeout_ms_ = 0;
  status broken_;
  status refusal_;              // this rank's first refusal (a verdict of refused_here returns it)
  status aborted_;              // why abort() was called
  void* bare_entry_ = nullptr;  // a ipc_stage: the entry alone (refuse)
  ipc_peers peers_{};           // every rank's control block here (the pull kernel's argument)
  ipc::graph_inputs graph_inputs_;  // captured inputs' words (ipc/graph_inputs.hpp)
  std::uint32_t graph_slots_ = 0;   // bit k: registration slot k is a graph's
  std::array<ipc::registration, ipc::max_registrations> eager_ranges_{}, graph_ranges_{};
  // The watchdog (watch_peers) and the flag it shares with abort(): the first to raise wins.
  std::thread watchdog_;
  std::atomic<bool> stop_watching_{false}, raised_{false};
  std::atomic<std::uint64_t> entries_seen_{0};
  std::vector<program> programs_;
  std::uint64_t uses_ = 0;
  // The last call's plan and program (program_for's fast path).
  const plan* last_plan_ = nullptr;
  std::uint64_t last_fingerprint_ = 0;
  std::size_t last_index_ = 0;
};

}  // namespace relay::ipc
