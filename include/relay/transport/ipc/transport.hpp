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
// By job, as CUB's device -> dispatch -> agent: this file sets up, runs and launches (a call's
// places: the caller's buffers or staged ones, ipc/user_memory.hpp); ipc/program.hpp turns a plan
// into a program on the host, ipc/programs.hpp keeps them on the device, kernels.hpp and pull.hpp
// run them. docs/ipc-transport.md says how every part works, and why.
//
// Set-up (collective): every rank allocates its control block and its area (ipc/memory.hpp),
// exports them and maps every peer's. A call runs its plan's program (an entry, a stage per phase
// this rank issues in, an exit) in one launch per stage, one in all, or the pull kernel alone,
// all on call.stream; run() returns without waiting.
//
// Only code compiled by nvcc or hipcc may include this header.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "relay/bootstrap/bootstrap.hpp"
#include "relay/core/status.hpp"
#include "relay/gpu/handles.hpp"
#include "relay/gpu/runtime.hpp"
#include "relay/hosted/streams.hpp"
#include "relay/plan/area_layout.hpp"
#include "relay/plan/slice.hpp"
#include "relay/transport/ipc/graph_inputs.hpp"
#include "relay/transport/ipc/grids.hpp"
#include "relay/transport/ipc/kernel_launch.hpp"
#include "relay/transport/ipc/kernels.hpp"
#include "relay/transport/ipc/launch.hpp"
#include "relay/transport/ipc/memory.hpp"
#include "relay/transport/ipc/options.hpp"
#include "relay/transport/ipc/program.hpp"
#include "relay/transport/ipc/programs.hpp"
#include "relay/transport/ipc/pull.hpp"
#include "relay/transport/ipc/report.hpp"
#include "relay/transport/ipc/user_memory.hpp"
#include "relay/transport/ipc/watchdog.hpp"
#include "relay/transport/transport.hpp"

namespace relay::ipc {

class transport final : public relay::transport, public hosted::stream_side {
 public:
  // Collective: every rank of `boot` calls it. The bootstrap serves set-up and teardown only.
  static status create(bootstrap& boot, int device, const options& o,
                       std::chrono::milliseconds timeout, std::unique_ptr<transport>& out) {
    std::unique_ptr<transport> t(new transport(boot, device));
    t->setting_.form = o.form;
    t->setting_.emulate_mesh = o.emulate_mesh;
    t->setting_.paced_blocks = static_cast<std::uint32_t>(std::max(0, o.paced_blocks));
    t->setting_.paced_parts = o.paced_move_kib == 16 ? 4u : 1u;
    t->setting_.costs = o.costs;
    t->setting_.one_shot_tiles = static_cast<std::uint64_t>(std::max(0, o.one_shot_tiles));
    t->share_at_least_ = std::max(1, o.device_share);
    t->early_launch_ = o.early_launch != 0;
    if (status s = t->area_.open(boot, device, o.bytes_per_rank, timeout); !s) return s;
    if (gpu::rt::error_t e = ticks_per_ms(&t->ticks_per_ms_, device); e != gpu::rt::success)
      return gpu::failure("reading the device clock's rate", device, e);
    if (status s = t->load_kernels(); !s) return s;
    if (status s = t->size_grids(boot, timeout); !s) return s;
    // After the ranks agreed on the options (size_grids): so every rank refuses alike.
    if (status s = check_options(o); !s) return s;
    if (status s = t->programs_.open(device); !s) return s;
    if (status s = t->graph_inputs_.open(device); !s) return s;
    if (status s = t->open_side_streams(); !s) return s;
    for (int q = 0; q < t->area_.ranks(); ++q) {
      t->peers_.controls[q] = t->area_.control_of(q);
      t->areas_.push_back(t->area_.data(q));
    }
    t->setting_.areas = t->areas_;
    t->ready_ = true;
    t->watch_peers();
    out = std::move(t);
    return {};
  }

  ~transport() override {
    watchdog_.stop();
    const gpu::device_guard keep;
    (void)gpu::rt::set_device(device_);
    (void)gpu::rt::device_synchronize();
    // A peer may still publish its last marks into this rank's area: every rank finishes its
    // device work before any frees (bounded: a dead peer costs the wait, nothing more). A
    // transport whose creation failed never ran a call, and its peers may not come here.
    if (ready_) (void)boot_->barrier(std::chrono::seconds(10));
    programs_.close();
    graph_inputs_.close();
    close_side_streams();
    area_.close();
  }

  std::string_view name() const override { return "ipc"; }

  // Registered user buffers (transport/ipc/user_memory.hpp; collective, see ipc::area). A rank
  // whose registration did not run to its end is out of step with its peers' rounds
  // (area::in_step): it leaves, as on any failure of its own, and its peers are told at once.
  status register_buffer(void* p, std::size_t bytes, std::chrono::milliseconds timeout) override {
    if (status s = current(); !s) return s;
    status s = area_.register_buffer(*boot_, p, bytes, timeout);
    graph_inputs_.sort(area_.registered());
    return area_.in_step() ? s : fail(s);
  }
  status deregister_buffer(void* p, std::chrono::milliseconds timeout) override {
    if (status s = current(); !s) return s;
    // Not a graph's registration: those end with deregister_graph_inputs.
    status s = area_.deregister_buffer(*boot_, p, timeout, graph_inputs_.graph_slots());
    graph_inputs_.sort(area_.registered());
    return area_.in_step() ? s : fail(s);
  }

  // The inputs of the pull form's calls captured with their input staged since the last time,
  // registered so that replays read them in place, and those registrations ended
  // (ipc/graph_inputs.hpp; collective). Not during capture; they synchronize the device.
  status register_graph_inputs(std::chrono::milliseconds timeout) override {
    if (status s = current(); !s) return s;
    std::size_t in_place = 0;
    if (status s = graph_inputs_.register_pending(area_, *boot_, device_, timeout, in_place); !s)
      return fail(s);
    counts_.graph_inputs += in_place;
    return {};
  }
  status deregister_graph_inputs(std::chrono::milliseconds timeout) override {
    if (status s = current(); !s) return s;
    const status s = graph_inputs_.deregister_all(area_, *boot_, device_, timeout);
    return s ? s : fail(s);
  }

  const call_counts& counts() const { return counts_; }
  // The device trace (zeros unless built with RELAY_IPC_TRACE=1): the pull and the ll form's
  // per-phase times of their last trace_calls calls, block 0's wall clock at each trace point
  // (ipc/pull.hpp, ipc/ll.hpp), and the step kernel's stage rows (ipc/stage_trace.hpp).
  void device_trace(std::uint64_t (&out)[trace_calls][trace_points]) const { area_.trace(out); }
  int device() const override { return device_; }
  std::size_t bytes_per_rank() const { return area_.data_bytes(); }
  // The smallest of the job's areas (ranks may ask for different sizes): what every rank cuts
  // calls into pieces by, alike.
  std::uint64_t area_bytes() const override { return area_.smallest_data_bytes(); }
  // The ranks the device's blocks are divided among: this communicator's there, or the more that
  // options::device_share names (a split communicator's parent's).
  int device_share() const override { return device_share_; }
  bool judges_on_host() const override { return false; }
  // On an fp8 wire the sender quantizes into the receiver's slot and the receiver dequantizes in
  // an arrival of its own, so that only the image crosses the link (kernels.hpp).
  fp8_ends wire_ends() const override { return fp8_ends::receiver; }
  bool broken() const override { return !current().ok(); }
  status async_status() const override { return current(); }
  // The calls this rank's device skipped on a verdict other than `go` (every rank skipped them),
  // oldest first, each once; not those this rank refused itself (its record says so: run()
  // returned its refusal).
  status take_failed_call() override {
    const std::uint64_t written = area_.failed_written();
    const auto me = static_cast<std::size_t>(boot_->rank());
    while (failed_read_ < written) {
      const std::uint64_t n = failed_read_++;
      bool kept = true;
      const failed_call f = area_.failed(n, kept);
      if (!kept) {  // fell behind the ring: say so, from the oldest record still there
        const std::uint64_t missed = written - ipc::failed_call_slots - n;
        failed_read_ = written - ipc::failed_call_slots;
        return {errc::peer_error, std::to_string(missed + 1) +
                                      " calls failed on the device before this rank looked "
                                      "(their records were written over); the next ones follow"};
      }
      if (me < f.verdict.ranks && f.verdict.records[me].code != 0) continue;
      return failed_call_status(f, {});
    }
    return {};
  }

  // This rank leaves: its kernels stop at their next look at the host's flag, and every peer is
  // told at once (its alarm, its reason and its dead mark copied into their control blocks, with
  // no kernel of this rank needed), so their waits end with an error naming this rank.
  void abort(const status& why) override {
    const status w = why.ok() ? status{errc::peer_error, "this rank aborted"} : why;
    if (aborted_.ok()) aborted_ = w;
    if (broken_.ok()) broken_ = w;
    if (!ready_) return;
    alarm_record a;
    a.code = report_aborted;
    a.by = a.peer = static_cast<std::uint32_t>(boot_->rank());
    a.call = counts_.entries;
    raise(a);
    area_.tell_peers(a, w.message(), std::chrono::milliseconds(200));
  }

  // What the device (or the host's watchdog) reported so far: ok, or why this rank gave up.
  status device_status() const {
    const report r = area_.report();
    if (r.code != report_ok) return report_status(r, context());
    const alarm_record a = area_.raised();
    if (a.code != report_ok) return alarm_status(a, "", context());
    return {};
  }

  // Beside other ranks of this process (hosted helpers, hosted/streams.hpp): a hosted rank's calls
  // run on a stream of its own, after an event on the caller's stream, and the caller's stream
  // waits for them; the program of every rank's part is made before any part launches.
  void* own_stream() const override { return own_; }
  void prepare(const call_context& call) override {
    if (!current().ok() || !call.local.ok() || call.p == nullptr || call.slice == nullptr) return;
    const gpu::device_guard keep;
    if (gpu::rt::set_device(device_) != gpu::rt::success) return;
    const loaded_program* prog = nullptr;
    (void)program_for(call, static_cast<gpu::rt::stream_t>(call.stream), prog);  // run() meets it
  }
  status fork(void* stream, void*& point) override {
    const gpu::device_guard keep;
    gpu::rt::error_t e = gpu::rt::set_device(device_);
    if (e == gpu::rt::success)
      e = gpu::rt::event_record(forked_, static_cast<gpu::rt::stream_t>(stream));
    if (e != gpu::rt::success)
      return fail(gpu::failure("forking the hosted ranks' streams", device_, e));
    point = forked_;
    return {};
  }
  status follow(void* point) override {
    const gpu::device_guard keep;
    gpu::rt::error_t e = gpu::rt::set_device(device_);
    if (e == gpu::rt::success)
      e = gpu::rt::stream_wait_event(own_, static_cast<gpu::rt::event_t>(point));
    if (e != gpu::rt::success)
      return fail(gpu::failure("ordering a hosted rank's stream after the caller's", device_, e));
    return {};
  }
  void keep_launches(bool on) override {
    keeping_ = on;
    kept_.clear();
  }
  std::size_t kept_launches() const override { return kept_.size(); }
  std::uint32_t kept_order(std::size_t i) const override { return kept_[i].order; }
  status launch_kept(std::size_t i) override {
    const gpu::device_guard keep;
    if (gpu::rt::error_t e = gpu::rt::set_device(device_); e != gpu::rt::success)
      return fail(gpu::failure("selecting the device", device_, e));
    return launch_now(kept_[i]);
  }
  status rejoin(void* stream) override {
    const gpu::device_guard keep;
    gpu::rt::error_t e = gpu::rt::set_device(device_);
    if (e == gpu::rt::success) e = gpu::rt::event_record(joined_, own_);
    if (e == gpu::rt::success)
      e = gpu::rt::stream_wait_event(static_cast<gpu::rt::stream_t>(stream), joined_);
    if (e != gpu::rt::success)
      return fail(gpu::failure("ordering the caller's stream after a hosted rank's", device_, e));
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
    env.piece = call.piece != 0 ? 1 : 0;
    env.system = ranks_on_device_ < area_.ranks() ? 1 : 0;
    env.link_mbps = static_cast<std::uint32_t>(setting_.emulate_mesh / 1'000'000);
    // Whether this rank accepts the call: not where its arguments or buffers were refused
    // (call.local), nor where it cannot run the call's plan. Either way the rank still takes part
    // in the agreement, so that every peer learns of it at once and the calls stay in step.
    status accepted = call.local;
    const loaded_program* prog = nullptr;
    if (accepted && (call.p == nullptr || call.slice == nullptr))
      accepted = {errc::invalid_argument, "the call has no plan or no slice"};
    if (accepted) {
      if (status s = program_for(call, stream, prog); !s) {
        if (capturing(stream)) return s;  // nothing issued (see program_for)
        accepted = s;
      }
    }
    if (!accepted) return refuse(accepted, env, stream);
    entries_seen_.store(++counts_.entries);
    if (prog->form.ll) return run_ll(call, *prog, env, stream);
    if (prog->form.pull) return run_pull(call, *prog, env, stream);
    return run_plan(call, *prog, env, stream);
  }

 private:
  transport(bootstrap& boot, int device) : boot_(&boot), device_(device) {}

  // The stream and events a hosted rank's calls use (made with the transport: never while a
  // caller's stream captures).
  status open_side_streams() {
    const gpu::device_guard keep;
    gpu::rt::error_t e = gpu::rt::set_device(device_);
    if (e == gpu::rt::success) e = gpu::rt::stream_create(&own_);
    if (e == gpu::rt::success) e = gpu::rt::event_create(&forked_);
    if (e == gpu::rt::success) e = gpu::rt::event_create(&joined_);
    if (e != gpu::rt::success) return gpu::failure("making the hosted ranks' stream", device_, e);
    return {};
  }
  void close_side_streams() {
    if (joined_ != nullptr) (void)gpu::rt::event_destroy(joined_);
    if (forked_ != nullptr) (void)gpu::rt::event_destroy(forked_);
    if (own_ != nullptr) (void)gpu::rt::stream_destroy(own_);
    own_ = nullptr;
    forked_ = joined_ = nullptr;
  }

  // Broken (a failure left the ranks out of step), or what the device or the watchdog found.
  status current() const {
    if (status s = device_status(); !s) return s;
    return broken_;
  }
  report_context context() const {
    report_context c;
    c.me = boot_->rank();
    c.ranks = area_.ranks();
    c.timeout_ms = timeout_ms_;
    c.pids = area_.pids();
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

  // The program of the call's plan: cached, else checked, built and uploaded (not while the
  // stream captures: that allocates).
  status program_for(const call_context& call, gpu::rt::stream_t stream,
                     const loaded_program*& out) {
    const plan& p = *call.p;
    if ((out = programs_.find(p, call.fingerprint)) != nullptr) return {};
    if (status s = check_plan(p, area_.ranks(), area_.data_bytes()); !s) return s;
    if (capturing(stream))
      return {errc::invalid_argument,
              "the ipc transport prepares each call shape on its first call, which allocates: "
              "make one call of this shape before capturing it into a graph"};
    program pr;
    if (status s = build_program(p, *call.slice, setting_, pr); !s) return s;
    return programs_.add(p, call.fingerprint, pr, device_, stream, out);
  }

  // This rank refuses the call: the entry alone (the agreement, with this rank's record saying
  // why and its text for the peers), nothing else. Every rank skips the call on the device and
  // goes on; the peers learn of it from its record (take_failed_call), this rank from `why`.
  status refuse(const status& why, ipc_env& env, gpu::rt::stream_t stream) {
    entries_seen_.store(++counts_.entries);
    env.record.code = static_cast<std::uint8_t>(why.code());
    area_.set_own_text(why.message());
    kernel_launch l;
    l.stream = stream;
    l.stages = programs_.bare_entry();
    l.env = env;
    l.name = "launching the ipc entry kernel";
    if (status s = issue(l); !s) return s;
    return why;
  }

  // This rank's kernels give up at their next look (the first alarm raised stays).
  void raise(const alarm_record& a) {
    bool expected = false;
    if (raised_.compare_exchange_strong(expected, true)) area_.raise(a);
  }

  // The watchdog (ipc/watchdog.hpp) raises this rank's flag naming the first peer process gone.
  void watch_peers() {
    const auto me = static_cast<std::uint32_t>(boot_->rank());
    watchdog_.start(area_.pids(), [this, me](int rank) {
      alarm_record a;
      a.code = report_peer_exited;
      a.by = me;
      a.peer = static_cast<std::uint32_t>(rank);
      a.call = entries_seen_.load();
      raise(a);
    });
  }

  // Every ipc kernel, loaded on this device before any call (ipc/launch.hpp: load_kernels).
  status load_kernels() {
    const gpu::device_guard keep;
    gpu::rt::error_t e = gpu::rt::set_device(device_);
    if (e == gpu::rt::success) e = ipc::load_kernels();
    if (e != gpu::rt::success) return gpu::failure("loading the ipc kernels", device_, e);
    return {};
  }

  // The grids of both forms (ipc/grids.hpp), from every rank's device and form options, which
  // must be alike (every rank prices the forms with the same numbers, so every rank takes the
  // same form).
  status size_grids(bootstrap& boot, std::chrono::milliseconds timeout) {
    device_info mine;
    if (status s = describe_device(device_, mine, setting_.emulate_mesh != 0); !s) return s;
    mine.form = static_cast<std::int64_t>(setting_.form);
    mine.one_shot_tiles = static_cast<std::int64_t>(setting_.one_shot_tiles);
    mine.launch = setting_.costs.launch;
    mine.signal = setting_.costs.signal;
    mine.tile = setting_.costs.tile;
    mine.share_at_least = share_at_least_;
    mine.emulate_mesh = setting_.emulate_mesh;
    grids g;
    if (status s = gather_grids(boot, mine, timeout, g); !s) return s;
    ranks_on_device_ = g.ranks_on_device;
    device_share_ = g.device_share;
    stepped_grid_ = static_cast<int>(g.stepped);
    one_shot_grid_ = g.one_shot;
    setting_.one_shot_grid = g.priced_one_shot;  // every rank prices with the smallest grids
    setting_.stepped_grid = g.priced_stepped;
    return {};
  }

  // A call of the plan's forms: its input and output in the caller's buffers where they may be
  // (ipc/user_memory.hpp), else staged by the entry's and the exit's copies; then its stages.
  status run_plan(const call_context& call, const loaded_program& prog, ipc_env& env,
                  gpu::rt::stream_t stream) {
    const plan& p = *call.p;
    const auto r = static_cast<std::size_t>(call.slice->rank);
    const area_layout at = layout_of(p, r);
    unsigned char* mine = areas_[r];
    const std::uint64_t in_bytes = p.input_bytes[r], out_bytes = p.output_bytes[r];
    // Where peers on other devices may push into a registered output (not on AMD: signals.hpp).
    const bool pushable = peers_push_into_user_memory || ranks_on_device_ == area_.ranks();
    // A piece of a larger call whose buffer is several runs is staged: the kernels move an
    // operand by one delta.
    const bool in_runs = call.send_runs.count > 1, out_runs = call.recv_runs.count > 1;
    user_memory_choice user = choose_user_memory(
        prog.user_memory, call.placement, call.send, in_bytes, call.recv, out_bytes,
        out_bytes > 0 && pushable && !out_runs
            ? find_registration(graph_inputs_.eager(), call.recv.data, out_bytes)
            : -1);
    if (in_runs) user.input = false;
    if (out_runs) user.output = false;
    if (user.input) env.in_delta = delta_to(call.send.data, mine + at.input);
    if (user.output) {
      env.out_delta = delta_to(call.recv.data, mine + at.output);
      env.out_slot = static_cast<std::uint64_t>(user.slot) + 1;
      env.out_offset =
          reinterpret_cast<std::uintptr_t>(call.recv.data) - area_.registered_start(user.slot);
    }
    ++counts_.calls;
    counts_.inputs += user.input ? 1 : 0;
    counts_.outputs += user.output ? 1 : 0;
    const std::uint64_t in_copied = user.input ? 0 : in_bytes;
    const std::uint64_t out_copied = user.output ? 0 : out_bytes;
    std::uint64_t in_tiles = 0, out_tiles = 0;
    const user_runs in = user_copy_runs(call.send.data, call.send_runs.stride, mine + at.input, 0,
                                        in_copied, call.send_runs.count, in_tiles);
    const user_runs out = user_copy_runs(mine + at.output, 0, call.recv.data, call.recv_runs.stride,
                                         out_copied, call.recv_runs.count, out_tiles);
    if (prog.form.one_shot) {
      ++counts_.one_shot;
      return launch_one_shot(p.type, prog, in, in_tiles, out, out_tiles, env, stream);
    }
    if (status s = launch_stage(p.type, prog.entry, in, in_tiles, env, stream); !s) return s;
    for (const stage_ref& st : prog.phases)
      if (status s = launch_stage(p.type, st, {}, 0, env, stream); !s) return s;
    return launch_stage(p.type, prog.exit, out, out_tiles, env, stream);
  }

  status launch_stage(dtype type, const stage_ref& st, const user_runs& user,
                      std::uint64_t user_tiles, const ipc_env& env, gpu::rt::stream_t stream) {
    const std::uint64_t tiles = std::max<std::uint64_t>(1, st.tiles + user_tiles);
    const auto most = static_cast<std::uint64_t>(std::max(1, stepped_grid_));
    kernel_launch l;
    l.order = st.order;
    l.type = type;
    l.fp8 = st.fp8;
    l.paced = st.paced;
    l.grid = static_cast<unsigned>(std::min(tiles, most));
    l.stream = stream;
    l.stages = st.device;
    l.in = user;
    l.in_tiles = user_tiles;
    l.env = env;
    return issue(l);
  }

  // `l` launched now, or kept for the hosted transport to launch in order (keep_launches).
  status issue(const kernel_launch& l) {
    if (keeping_) {
      kept_.push_back(l);
      return {};
    }
    return launch_now(l);
  }
  status launch_now(const kernel_launch& l) {
    if (gpu::rt::error_t e = launch_kernel(l); e != gpu::rt::success)
      return fail(gpu::failure(l.name, device_, e));
    return {};
  }

  // The whole call in one launch, one block per tile of its largest stage up to one per
  // multiprocessor (all resident; a larger stage's blocks walk its tiles in rounds).
  status launch_one_shot(dtype type, const loaded_program& prog, const user_runs& in,
                         std::uint64_t in_tiles, const user_runs& out, std::uint64_t out_tiles,
                         const ipc_env& env, gpu::rt::stream_t stream) {
    const auto grid = static_cast<unsigned>(std::min(
        one_shot_grid_, std::max<std::uint64_t>({1, prog.most_tiles, prog.entry.tiles + in_tiles,
                                                 prog.exit.tiles + out_tiles})));
    kernel_launch l;
    l.what = kernel_launch::kernel::one_shot;
    l.type = type;
    l.grid = grid;
    l.stream = stream;
    l.stages = prog.entry.device;
    l.count = static_cast<std::uint32_t>(prog.phases.size() + 2);
    l.in = in;
    l.in_tiles = in_tiles;
    l.out = out;
    l.out_tiles = out_tiles;
    l.env = env;
    l.name = "launching the ipc one-shot kernel";
    return issue(l);
  }

  // A call of the pull form (ipc/pull.hpp): the output always in the caller's buffer (only this
  // rank writes it); the input read by the peers where the caller keeps it when that lies in a
  // registration and is 16-byte aligned (and is not also the output), else staged by the kernel's
  // own copy; this rank reads its own input where it is. An allreduce, its only collective, has
  // one block a buffer: a piece of one is a single run of the caller's.
  status run_pull(const call_context& call, const loaded_program& prog, ipc_env& env,
                  gpu::rt::stream_t stream) {
    const plan& p = *call.p;
    const auto r = static_cast<std::size_t>(call.slice->rank);
    const area_layout at = layout_of(p, r);
    unsigned char* mine = areas_[r];
    const std::uint64_t in_bytes = p.input_bytes[r], out_bytes = p.output_bytes[r];
    env.in_place = call.placement == placement::in_place ? 1 : 0;
    if (in_bytes > 0) env.in_delta = delta_to(call.send.data, mine + at.input);
    if (out_bytes > 0) env.out_delta = delta_to(call.recv.data, mine + at.output);
    const int slot = choose_pull_input(call.placement, call.send, in_bytes, graph_inputs_.eager());
    const pull_input_place place =
        pull_input_of(slot, call.send.data, slot < 0 ? 0 : area_.registered_start(slot));
    const bool in_registered = place.slot != 0;
    gpu::copy_desc in{};
    std::uint64_t in_tiles = 0;
    if (in_registered) {
      env.in_slot = place.slot;
      env.in_offset = place.offset;
    } else if (in_bytes > 0 && prog.pull.readers != 0) {
      in = gpu::make_copy(call.send.data, mine + at.input, in_bytes);
      in_tiles = gpu::tiles_for(in.units, pull_block_threads);
      // Captured: a word that register_graph_inputs may point at the input where it is (on the
      // terms choose_pull_input sets for a registered one).
      if (call.placement != placement::in_place && user_aligned(call.send.data) &&
          capturing(stream)) {
        env.in_word = graph_inputs_.take(call.send.data, in_bytes);
        counts_.captured_inputs += env.in_word != nullptr ? 1 : 0;
      }
    }
    ++counts_.calls;
    ++counts_.one_shot;
    ++counts_.pull;
    counts_.inputs += in_registered ? 1 : 0;
    counts_.outputs += out_bytes > 0 ? 1 : 0;
    kernel_launch l;
    l.what = kernel_launch::kernel::pull;
    l.type = p.type;
    l.stream = stream;
    l.pull = &prog.pull;
    l.peers = &peers_;
    l.copy = in;
    l.in_tiles = in_tiles;
    l.env = env;
    l.name = "launching the ipc pull kernel";
    return issue(l);
  }

  // A call of the ll form (ipc/ll.hpp): the pull form's role, with the input read and the output
  // written where the caller keeps them, by this rank alone (its peers get its input as words).
  status run_ll(const call_context& call, const loaded_program& prog, const ipc_env& env,
                gpu::rt::stream_t stream) {
    const ipc_pull& pl = prog.pull;
    kernel_launch l;
    l.what = kernel_launch::kernel::ll;
    l.type = call.p->type;
    l.grid = pl.grid;
    l.stream = stream;
    l.ll.in = call.send.data;
    l.ll.out = call.recv.data;
    l.ll.count = pl.count;
    l.ll.divisor = pl.divisor;
    l.ll.members = pl.members;
    l.ll.mine = pl.mine;
    for (std::uint32_t k = 0; k < pl.members; ++k)
      l.ll.member[k] = pl.member[k];
    l.peers = &peers_;
    l.env = env;
    l.early = early_launch_;
    l.name = "launching the ipc ll kernel";
    ++counts_.calls;
    ++counts_.one_shot;
    ++counts_.ll;
    const bool summed = pl.members > 0;
    counts_.inputs += summed ? 1 : 0;
    counts_.outputs += summed ? 1 : 0;
    return issue(l);
  }

  bootstrap* boot_;
  bool ready_ = false;  // created: its peers mapped its area
  int device_ = 0;
  area area_;
  std::vector<unsigned char*> areas_;  // [rank]: its data area as this process maps it
  std::uint64_t ticks_per_ms_ = 1;
  int stepped_grid_ = 1;
  int ranks_on_device_ = 1;    // this communicator's ranks on this rank's device, itself included
  int share_at_least_ = 1;     // options::device_share: the job's ranks there, at least
  int device_share_ = 1;       // the ranks the grids divide the device among: the larger of those
  bool early_launch_ = false;  // options::early_launch
  std::uint64_t one_shot_grid_ = 1;  // this rank's one-shot launch grid (stepped_grid_: stepped)
  program_setting setting_;  // what the programs are built against (the form's inputs: alike)
  call_counts counts_;
  long long timeout_ms_ = 0;
  status broken_;
  std::uint64_t failed_read_ = 0;  // the device's failed calls read (take_failed_call)
  status aborted_;                 // why abort() was called
  ipc_peers peers_{};              // every rank's control block here (the pull kernel's argument)
  graph_inputs graph_inputs_;      // captured inputs' words, and which registrations are graphs'
  program_cache programs_;
  gpu::rt::stream_t own_ = nullptr;  // stream_side: a hosted rank's calls run here
  gpu::rt::event_t forked_ = nullptr, joined_ = nullptr;
  bool keeping_ = false;             // stream_side::keep_launches
  std::vector<kernel_launch> kept_;  // the launches kept meanwhile
  // The watchdog and the flag it shares with abort(): the first to raise wins.
  watchdog watchdog_;
  std::atomic<bool> raised_{false};
  std::atomic<std::uint64_t> entries_seen_{0};
};

}  // namespace relay::ipc
