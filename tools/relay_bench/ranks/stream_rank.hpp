// What relay-bench's GPU ranks share (GPU code: nccl_rank.cpp, ipc_rank.cpp): the communicator,
// this rank's stream, its timing events, its device memory, and the timed loop, eager or (for
// transports whose calls can be captured) replaying a graph of captured calls. Subclasses say
// how the vendor's collective runs, if there is one.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "ranks/gpu_rank.hpp"
#include "relay/comm/collectives.hpp"
#include "relay/comm/from_environment.hpp"
#include "relay/gpu/handles.hpp"
#include "relay/gpu/runtime.hpp"

namespace relay::bench {

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
    for (gpu::rt::event_t e : events_)
      (void)gpu::rt::event_destroy(e);
    if (register_memory_ && memory_ != nullptr) (void)comm_->deregister_buffer(memory_);
    if (memory_ != nullptr) (void)gpu::rt::free(memory_);
    comm_.reset();
    if (stream_ != nullptr) (void)gpu::rt::stream_destroy(stream_);
  }

  status start() {
    if (gpu::rt::error_t e = gpu::rt::set_device(device_); e != gpu::rt::success)
      return gpu::failure("selecting the device", device_, e);
    if (gpu::rt::error_t e = gpu::rt::stream_create(&stream_); e != gpu::rt::success)
      return gpu::failure("creating a stream", device_, e);
    return {};
  }

  int rank() const override { return comm_->rank(); }
  int size() const override { return comm_->size(); }
  std::chrono::milliseconds timeout() const override { return comm_->config().timeout; }
  bootstrap& boot() override { return comm_->boot(); }

  // Grow-only. With register_memory_ the memory is registered with the communicator
  // (register_buffer); registration is collective, so every rank takes part on every call, with
  // its new memory or none.
  void* device_memory(std::size_t bytes) override {
    const bool grow = bytes > capacity_;
    if (register_memory_) report(comm_->deregister_buffer(grow ? memory_ : nullptr));
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
    if (register_memory_)
      report(comm_->register_buffer(grow ? memory_ : nullptr, grow ? capacity_ : 0));
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

  status run(const rank_collective& c, bool vendor, int iterations,
             std::vector<double>* seconds) override {
    while (events_.size() < 2 * static_cast<std::size_t>(iterations)) {
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
      const auto at = static_cast<std::size_t>(2 * i);
      if (gpu::rt::error_t e = gpu::rt::event_record(events_[at], stream_); e != gpu::rt::success)
        return gpu::failure("recording a timing event", device_, e);
      if (replay) {
        if (gpu::rt::error_t e = gpu::rt::graph_launch(exec, stream_); e != gpu::rt::success)
          (void)(issued = gpu::failure("replaying the graph", device_, e));
      } else {
        (void)(issued = vendor ? vendor_call(c) : relay_call(c));
      }
      if (gpu::rt::error_t e = gpu::rt::event_record(events_[at + 1], stream_);
          e != gpu::rt::success)
        return gpu::failure("recording a timing event", device_, e);
    }
    const gpu::rt::error_t synced = gpu::rt::stream_synchronize(stream_);
    if (exec != nullptr) (void)gpu::rt::graph_exec_destroy(exec);
    // Before the memory can be reallocated for the next row (collective, as the capture was).
    if (replay && !vendor && graph_inputs_)
      if (status s = comm_->deregister_graph_inputs(); !s) return s;
    if (!issued) return issued;
    if (synced != gpu::rt::success) return gpu::failure("running the calls", device_, synced);
    if (status s = after_calls(); !s) return s;
    if (seconds != nullptr) {
      seconds->assign(static_cast<std::size_t>(iterations), 0);
      const double per = replay ? 1e-3 / graph_calls_ : 1e-3;
      for (int i = 0; i < iterations; ++i) {
        float ms = 0;
        const auto at = static_cast<std::size_t>(2 * i);
        if (gpu::rt::error_t e = gpu::rt::event_elapsed_ms(&ms, events_[at], events_[at + 1]);
            e != gpu::rt::success)
          return gpu::failure("reading a timing event", device_, e);
        (*seconds)[static_cast<std::size_t>(i)] = ms * per;
      }
    }
    return {};
  }

 protected:
  communicator& comm() { return *comm_; }
  const communicator& comm() const { return *comm_; }
  int device() const { return device_; }
  gpu::rt::stream_t stream() const { return stream_; }

  status relay_call(const rank_collective& c) {
    return run_collective(*comm_, c.coll, c.groups, c.send, c.recv, c.counts, c.type, c.op, c.opt,
                          stream_);
  }
  virtual status vendor_call(const rank_collective& c) = 0;
  // Whether the vendor's calls replay from a captured graph like relay's (with --graph).
  virtual bool vendor_graphs() const { return false; }
  // Register the device memory with the communicator (see device_memory).
  bool register_memory_ = false;
  // Register a graph's inputs after capture (see the constructor).
  bool graph_inputs_ = true;
  bool replays_graphs() const { return graph_calls_ > 0; }
  // The transport's verdict once the stream is idle (asynchronous errors).
  virtual status after_calls() = 0;

 private:
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
      if (status s = comm_->register_graph_inputs(); !s) return s;
    return {};
  }

  std::unique_ptr<communicator> comm_;
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
std::unique_ptr<gpu_rank> make_stream_rank(const transport_factory& factory, DeviceOf device_of,
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
