// What relay-bench's GPU ranks share (GPU code: ranks/nccl.cpp, ranks/ipc.cpp): the communicator,
// this rank's stream, its timing events, its device memory, and the timed loop, eager or (for
// transports whose calls can be captured) replaying a graph of captured calls. Subclasses say
// how the vendor's collective runs, if there is one. With split_groups (--split), relay's calls
// run on a communicator of the rank's group only, split from the job's; the job's communicator
// keeps the bench's own exchanges (barriers, timings, the checks' notes) and the vendor's. With
// parallel_plans, a call of parallel mode runs each group's single-group plan on a communicator
// of its own spanning the job (the other groups' ranks its helpers), each on a stream of its own
// forked from the rank's stream and joined back, so that the plans run at once.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ranks/gpu_rank.hpp"
#include "ranks/group_place.hpp"
#include "relay/comm/collectives.hpp"
#include "relay/comm/from_environment.hpp"
#include "relay/comm/split.hpp"
#include "relay/gpu/handles.hpp"
#include "relay/gpu/runtime.hpp"
#include "relay/hosted/bootstrap.hpp"

namespace relay::bench {

// A rank's place in the groups is the color and key of a split into them.
static_assert(group_place{}.group == no_color);

class stream_rank : public gpu_rank {
 public:
  // graph_calls > 0: timed relay runs replay a graph of that many captured calls.
  // RELAY_BENCH_GRAPH_INPUTS=0: a graph's staged inputs stay staged; otherwise they are
  // registered after capture (communicator::register_graph_inputs), as a user would.
  stream_rank(std::unique_ptr<communicator> comm, int device, int graph_calls = 0)
      : comm_(std::move(comm)), device_(device), graph_calls_(graph_calls) {
    const char* v = std::getenv("RELAY_BENCH_GRAPH_INPUTS");
    graph_inputs_ = v == nullptr || std::string(v) != "0";
  }
  ~stream_rank() override {
    (void)gpu::rt::set_device(device_);
    if (stream_ != nullptr) (void)gpu::rt::stream_synchronize(stream_);
    for (gpu::rt::stream_t s : plan_streams_)
      (void)gpu::rt::stream_synchronize(s);
    for (gpu::rt::event_t e : events_)
      (void)gpu::rt::event_destroy(e);
    for (gpu::rt::event_t e : plan_events_)
      (void)gpu::rt::event_destroy(e);
    if (register_memory_ && memory_ != nullptr)
      for (communicator* holder : holders())
        (void)holder->deregister_buffer(memory_);
    if (memory_ != nullptr) (void)gpu::rt::free(memory_);
    plan_comms_.clear();
    group_comm_.reset();
    comm_.reset();
    for (gpu::rt::stream_t s : plan_streams_)
      (void)gpu::rt::stream_destroy(s);
    if (stream_ != nullptr) (void)gpu::rt::stream_destroy(stream_);
  }

  status start() {
    if (gpu::rt::error_t e = gpu::rt::set_device(device_); e != gpu::rt::success)
      return gpu::failure("selecting the device", device_, e);
    if (gpu::rt::error_t e = gpu::rt::stream_create(&stream_); e != gpu::rt::success)
      return gpu::failure("creating a stream", device_, e);
    return {};
  }

  // Relay's calls from here on each run on a communicator of the rank's group, split from the
  // job's over the transport `make` builds (collective: at the first call of a shape whose
  // groups are new, every rank takes part).
  void split_groups(transport_factory make) { split_ = std::move(make); }
  // Parallel mode's communicators, each a copy of the job's, are made over the transport
  // `make(plans)` builds for `plans` plans at once (collective: at the first call of parallel
  // mode with another number of groups than the last).
  using plans_factory = std::function<transport_factory(int plans)>;
  void parallel_plans(plans_factory make) { parallel_ = std::move(make); }

  int rank() const override { return comm_->rank(); }
  int size() const override { return comm_->size(); }
  std::chrono::milliseconds timeout() const override { return comm_->config().timeout; }
  bootstrap& boot() override { return processes_of(*comm_); }
  int device() const override { return device_; }
  std::vector<int> hosted_devices() const override {
    if (const auto* v = dynamic_cast<const hosted::view*>(&comm_->boot()))
      return v->group().rule().devices;
    return {};
  }

  // Grow-only. With register_memory_ the memory is registered with every communicator relay's
  // calls run on (register_buffer); registration is collective, so every rank takes part on
  // every call, with its new memory or none.
  void* device_memory(std::size_t bytes) override {
    const bool grow = bytes > capacity_;
    const std::vector<communicator*> held =
        register_memory_ ? holders() : std::vector<communicator*>{};
    for (communicator* holder : held)
      report(holder->deregister_buffer(grow ? memory_ : nullptr));
    if (grow) {
      (void)gpu::rt::stream_synchronize(stream_);
      if (memory_ != nullptr) (void)gpu::rt::free(memory_);
      memory_ = nullptr;
      capacity_ = 0;
      if (gpu::rt::malloc(&memory_, bytes) != gpu::rt::success) {
        (void)gpu::rt::get_last_error();
        memory_ = nullptr;
      } else {
        capacity_ = bytes;
      }
    }
    for (communicator* holder : held)
      report(holder->register_buffer(grow ? memory_ : nullptr, grow ? capacity_ : 0));
    return memory_;
  }
  status upload(void* dst, const void* src, std::size_t bytes) override {
    if (gpu::rt::error_t e = gpu::rt::upload(dst, src, bytes); e != gpu::rt::success)
      return gpu::failure("an upload", device_, e);
    return {};
  }
  status download(void* dst, const void* src, std::size_t bytes) override {
    if (gpu::rt::error_t e = gpu::rt::memcpy(dst, src, bytes); e != gpu::rt::success)
      return gpu::failure("a download", device_, e);
    return {};
  }

  status run(const rank_collective& c, bool vendor, int iterations, std::vector<double>* seconds,
             call_timing timing = call_timing::loop) override {
    if (split_)
      if (status s = split_for(c.groups); !s) return s;
    if (c.parallel && !vendor)
      if (status s = make_plan_comms(c.groups.size()); !s) return s;
    if (status s = before_calls(c, vendor); !s) return s;
    // Event pairs: one around the loop, or one around each call.
    const bool each = timing == call_timing::per_call;
    const int pairs = each ? iterations : 1;
    while (events_.size() < 2 * static_cast<std::size_t>(pairs)) {
      gpu::rt::event_t e = nullptr;
      if (gpu::rt::error_t x = gpu::rt::event_create(&e, true); x != gpu::rt::success)
        return gpu::failure("creating a timing event", device_, x);
      events_.push_back(e);
    }
    // Graphs for timed runs only (the vendor's where it can be captured): the checked run stays
    // one eager call.
    const bool replay = graph_calls_ > 0 && (!vendor || vendor_graphs()) && seconds != nullptr;
    gpu::rt::graph_exec_t exec = nullptr;
    if (replay)
      if (status s = capture(c, vendor, exec); !s) return s;
    status issued;
    for (int i = 0; i < iterations && issued; ++i) {
      const auto at = static_cast<std::size_t>(each ? 2 * i : 0);
      if (each || i == 0)
        if (gpu::rt::error_t e = gpu::rt::event_record(events_[at], stream_); e != gpu::rt::success)
          return gpu::failure("recording a timing event", device_, e);
      if (replay) {
        if (gpu::rt::error_t e = gpu::rt::graph_launch(exec, stream_); e != gpu::rt::success)
          (void)(issued = gpu::failure("replaying the graph", device_, e));
      } else {
        (void)(issued = vendor ? vendor_call(c) : relay_call(c));
      }
      if (each || i + 1 == iterations || !issued)
        if (gpu::rt::error_t e = gpu::rt::event_record(events_[at + 1], stream_);
            e != gpu::rt::success)
          return gpu::failure("recording a timing event", device_, e);
    }
    const gpu::rt::error_t synced = gpu::rt::stream_synchronize(stream_);
    if (exec != nullptr) (void)gpu::rt::graph_exec_destroy(exec);
    // Before the memory can be reallocated for the next row (collective, as the capture was).
    if (replay && !vendor && graph_inputs_)
      for (communicator* calls : calls_on(c))
        if (status s = calls->deregister_graph_inputs(); !s) return s;
    if (!issued) return issued;
    if (synced != gpu::rt::success) return gpu::failure("running the calls", device_, synced);
    if (status s = after_calls(); !s) return s;
    if (seconds != nullptr) {
      seconds->assign(static_cast<std::size_t>(iterations), 0);
      // Seconds per call from a pair's milliseconds: a replay holds graph_calls_ calls, and the
      // loop's pair spans every iteration.
      const double per = (replay ? 1e-3 / graph_calls_ : 1e-3) / (each ? 1 : iterations);
      for (int i = 0; i < pairs; ++i) {
        float ms = 0;
        const auto at = static_cast<std::size_t>(2 * i);
        if (gpu::rt::error_t e = gpu::rt::event_elapsed_ms(&ms, events_[at], events_[at + 1]);
            e != gpu::rt::success)
          return gpu::failure("reading a timing event", device_, e);
        if (each)
          (*seconds)[static_cast<std::size_t>(i)] = ms * per;
        else
          seconds->assign(static_cast<std::size_t>(iterations), ms * per);
      }
    }
    return {};
  }

 protected:
  communicator& comm() { return *comm_; }
  const communicator& comm() const { return *comm_; }
  gpu::rt::stream_t stream() const { return stream_; }

  // The communicator of this rank's group where the groups run apart (null: the rank is in no
  // group), else null.
  const communicator* group_communicator() const { return group_comm_.get(); }

  status relay_call(const rank_collective& c) {
    if (c.parallel) return parallel_call(c);
    if (!split_)
      return run_collective(*comm_, c.coll, c.groups, c.send, c.recv, c.counts, c.type, c.op, c.opt,
                            stream_);
    if (!group_comm_) return {};  // in no group: nothing to run
    const std::int64_t count = c.counts[static_cast<std::size_t>(split_group_)];
    return run_collective(*group_comm_, c.coll, split_call_, c.send, c.recv, std::span(&count, 1),
                          c.type, c.op, c.opt, stream_);
  }
  virtual status vendor_call(const rank_collective& c) = 0;
  // Whether the vendor's calls replay from a captured graph like relay's (with --graph).
  virtual bool vendor_graphs() const { return false; }
  // Register the device memory with the communicator (see device_memory).
  bool register_memory_ = false;
  // Register a graph's inputs after capture (see the constructor).
  bool graph_inputs_ = true;
  bool replays_graphs() const { return graph_calls_ > 0; }
  // What a run of `c` needs made first (collective: every rank runs every form of every row),
  // such as the vendor's communicators of its groups.
  virtual status before_calls(const rank_collective& /*c*/, bool /*vendor*/) { return {}; }
  // The transport's verdict once the stream is idle (asynchronous errors).
  virtual status after_calls() = 0;

 private:
  // The communicator relay's calls run on: the group's where the groups run apart (null where
  // the rank is in none), else the job's.
  communicator* relays_on() { return split_ ? group_comm_.get() : comm_.get(); }
  // Every communicator a registration goes to: that one and parallel mode's.
  std::vector<communicator*> holders() {
    std::vector<communicator*> all;
    if (communicator* c = relays_on()) all.push_back(c);
    for (const std::unique_ptr<communicator>& p : plan_comms_)
      all.push_back(p.get());
    return all;
  }
  // The communicators the relay call `c` runs on.
  std::vector<communicator*> calls_on(const rank_collective& c) {
    std::vector<communicator*> on;
    if (c.parallel) {
      for (std::size_t g = 0; g < c.groups.size() && g < plan_comms_.size(); ++g)
        on.push_back(plan_comms_[g].get());
    } else if (communicator* one = relays_on()) {
      on.push_back(one);
    }
    return on;
  }

  // Parallel mode's communicators (copies of the job's: one color, keyed by rank), streams
  // and fork/join events, `groups` of each, unless the last parallel call made as many; the
  // memory is registered with new ones. Made for that many plans at once (a transport that
  // divides the device among its ranks divides it among the plans too).
  status make_plan_comms(std::size_t groups) {
    if (!parallel_)
      return {errc::unsupported, "this transport's ranks run fused and single, not parallel"};
    if (plan_comms_.size() != groups) {
      for (gpu::rt::stream_t s : plan_streams_)
        if (gpu::rt::error_t e = gpu::rt::stream_synchronize(s); e != gpu::rt::success)
          return gpu::failure("finishing the plans before new ones", device_, e);
      for (const std::unique_ptr<communicator>& old : plan_comms_)
        if (register_memory_ && memory_ != nullptr) (void)old->deregister_buffer(memory_);
      plan_comms_.clear();
      const transport_factory make = parallel_(static_cast<int>(groups));
      while (plan_comms_.size() < groups) {
        std::unique_ptr<communicator> copy;
        if (status s = split_communicator(*comm_, 0, rank(), make, copy); !s) return s;
        if (register_memory_)
          report(copy->register_buffer(memory_, memory_ != nullptr ? capacity_ : 0));
        plan_comms_.push_back(std::move(copy));
      }
    }
    while (plan_streams_.size() < groups) {
      gpu::rt::stream_t s = nullptr;
      if (gpu::rt::error_t e = gpu::rt::stream_create(&s); e != gpu::rt::success)
        return gpu::failure("creating a stream", device_, e);
      plan_streams_.push_back(s);
    }
    while (plan_events_.size() < groups + 1) {  // the fork's, then each plan's join
      gpu::rt::event_t e = nullptr;
      if (gpu::rt::error_t x = gpu::rt::event_create(&e, false); x != gpu::rt::success)
        return gpu::failure("creating an event", device_, x);
      plan_events_.push_back(e);
    }
    return {};
  }

  // Each group's single-group call on its own communicator and stream: the rank's own group
  // with its buffers, the others as a helper. Forked from the rank's stream and joined back, so
  // that the timing events (and a capture) around the call hold every plan.
  status parallel_call(const rank_collective& c) {
    const std::size_t groups = c.groups.size();
    if (plan_comms_.size() != groups || plan_streams_.size() < groups)
      return {errc::invalid_argument, "parallel mode's communicators are not made"};
    auto fail = [&](const char* what, gpu::rt::error_t e) {
      return gpu::failure(what, device_, e);
    };
    if (gpu::rt::error_t e = gpu::rt::event_record(plan_events_[0], stream_); e != gpu::rt::success)
      return fail("recording the fork of parallel mode", e);
    const int mine = place_in(c.groups, rank()).group;
    status issued;
    for (std::size_t g = 0; g < groups; ++g) {
      gpu::rt::stream_t on = plan_streams_[g];
      if (gpu::rt::error_t e = gpu::rt::stream_wait_event(on, plan_events_[0]);
          e != gpu::rt::success)
        return fail("forking a plan's stream", e);
      const bool member = static_cast<int>(g) == mine;
      const group_list one{c.groups[g]};
      const std::int64_t count = c.counts[g];
      if (issued)
        (void)(issued = run_collective(
                   *plan_comms_[g], c.coll, one, member ? c.send : buffer_view{},
                   member ? c.recv : buffer_view{}, std::span(&count, 1), c.type, c.op, c.opt, on));
      // Joined back even after a failure, so that the rank's stream (a capture) stays whole.
      if (gpu::rt::error_t e = gpu::rt::event_record(plan_events_[g + 1], on);
          e != gpu::rt::success)
        return fail("recording a plan's join", e);
      if (gpu::rt::error_t e = gpu::rt::stream_wait_event(stream_, plan_events_[g + 1]);
          e != gpu::rt::success)
        return fail("joining a plan's stream", e);
    }
    return issued;
  }

  // A communicator per group of `groups` (color: the group's index, key: the rank's position in
  // it), unless the last split made these already. The old one goes first, with its
  // registration; the memory is registered with the new one.
  status split_for(const group_list& groups) {
    if (split_made_ && groups == split_of_) return {};
    if (gpu::rt::error_t e = gpu::rt::stream_synchronize(stream_); e != gpu::rt::success)
      return gpu::failure("finishing the calls before a split", device_, e);
    if (group_comm_ && register_memory_ && memory_ != nullptr)
      (void)group_comm_->deregister_buffer(memory_);
    group_comm_.reset();
    split_made_ = false;
    const group_place at = place_in(groups, rank());
    if (status s = split_communicator(*comm_, at.group, at.index, split_, group_comm_); !s)
      return s;
    split_of_ = groups;
    split_made_ = true;
    split_group_ = at.group;
    // The group alone, ranked by its position in the job's group (the split's key).
    split_call_.assign(1, {});
    for (int r = 0; group_comm_ && r < group_comm_->size(); ++r)
      split_call_[0].push_back(r);
    if (group_comm_ && register_memory_)
      report(group_comm_->register_buffer(memory_, memory_ != nullptr ? capacity_ : 0));
    return {};
  }

  // A registration that failed: the calls stage their buffers, still right; said once.
  void report(const status& s) {
    if (!s && !reported_)
      std::fprintf(stderr, "registering the buffers: %s\n", s.to_string().c_str());
    reported_ = reported_ || !s;
  }

  // graph_calls_ calls (relay's, or the vendor's) captured from this rank's stream into one
  // executable graph.
  status capture(const rank_collective& c, bool vendor, gpu::rt::graph_exec_t& exec) {
    gpu::rt::graph_t graph = nullptr;
    if (gpu::rt::error_t e = gpu::rt::begin_capture(stream_); e != gpu::rt::success)
      return gpu::failure("starting a graph capture", device_, e);
    status captured;
    for (int k = 0; k < graph_calls_ && captured; ++k)
      (void)(captured = vendor ? vendor_call(c) : relay_call(c));
    const gpu::rt::error_t ended = gpu::rt::end_capture(stream_, &graph);
    if (!captured) {
      if (graph != nullptr) (void)gpu::rt::graph_destroy(graph);
      return captured;
    }
    if (ended != gpu::rt::success) return gpu::failure("ending a graph capture", device_, ended);
    const gpu::rt::error_t made = gpu::rt::graph_instantiate(&exec, graph);
    (void)gpu::rt::graph_destroy(graph);
    if (made != gpu::rt::success) return gpu::failure("instantiating the graph", device_, made);
    if (!vendor && graph_inputs_)
      for (communicator* calls : calls_on(c))
        if (status s = calls->register_graph_inputs(); !s) return s;
    return {};
  }

  std::unique_ptr<communicator> comm_;
  // --split: how a group's communicator is made, the groups it was made for, the rank's group
  // (its index) and the groups its calls pass (the group's ranks on it), built once per split.
  transport_factory split_;
  std::unique_ptr<communicator> group_comm_;
  group_list split_of_;
  bool split_made_ = false;
  int split_group_ = -1;
  group_list split_call_;
  // Parallel mode: how its communicators are made, and each plan's communicator, stream and
  // join event (plan_events_[0]: the fork).
  plans_factory parallel_;
  std::vector<std::unique_ptr<communicator>> plan_comms_;
  std::vector<gpu::rt::stream_t> plan_streams_;
  std::vector<gpu::rt::event_t> plan_events_;
  int device_ = 0;
  int graph_calls_ = 0;
  gpu::rt::stream_t stream_ = nullptr;
  std::vector<gpu::rt::event_t> events_;
  void* memory_ = nullptr;
  std::size_t capacity_ = 0;
  bool reported_ = false;
};

// This process's rank over the transport `factory` makes: the communicator from the environment
// (collective), then a Rank on the device `device_of(communicator)` names, started; nullptr and
// `why` where any of it fails.
template <class Rank, class DeviceOf, class... Extra>
std::unique_ptr<Rank> make_stream_rank(const transport_factory& factory, DeviceOf device_of,
                                       std::string& why, Extra... extra) {
  std::unique_ptr<communicator> comm;
  if (status s = communicator_from_environment(factory, comm); !s) {
    why = s.to_string();
    return nullptr;
  }
  const int device = device_of(*comm);
  auto r = std::make_unique<Rank>(std::move(comm), device, extra...);
  if (status s = r->start(); !s) {
    why = s.to_string();
    return nullptr;
  }
  return r;
}

}  // namespace relay::bench
