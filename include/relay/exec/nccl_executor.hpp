// The nccl transport driven from one process: every rank a thread of its own, on a device of its
// own, with its own NCCL communicator (ncclCommInitAll) and nccl_transport. It is an `executor`
// (exec/executor.hpp), so the collective calls, the property suite and relay-bench run the
// rank-local transport exactly as they run the single-process executors; each rank's thread does
// what a process of a multi-process job does: run its slice on its own stream.
//
//   relay::nccl_executor nccl({0, 1, 2, 3});   // rank -> device, one rank per device
//   relay::status s = relay::allreduce(nccl, groups, send, recv, counts, type, op, opts);
//
// Arguments are validated once, before any rank runs (validate_plan and the buffers' devices),
// so the per-call peer check of the transport is off here. Not thread-safe: one thread drives one
// executor.
//
// Only code compiled by nvcc or hipcc may include this header.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "relay/exec/executor.hpp"
#include "relay/exec/rank_threads.hpp"
#include "relay/gpu/handles.hpp"
#include "relay/gpu/runtime.hpp"
#include "relay/plan/make_plan.hpp"
#include "relay/plan/slice.hpp"
#include "relay/plan/validate.hpp"
#include "relay/transport/nccl/factory.hpp"

namespace relay {

struct nccl_executor_options {
  bool synchronize = true;  // run() waits for every rank's stream
  bool time_runs = false;   // timing events around each rank's part, for last_run_seconds()
};

class nccl_executor : public gpu::device_memory<nccl_executor> {
 public:
  explicit nccl_executor(std::vector<int> rank_device, nccl_executor_options options = {})
      : device_memory(std::move(rank_device)), options_(options), init_(initialize()) {}
  ~nccl_executor() {
    threads_.stop();
    const gpu::device_guard keep;
    for (rank_state& r : ranks_) {
      (void)gpu::rt::set_device(r.device);
      (void)gpu::rt::stream_synchronize(r.stream);
      r.link.reset();
      for (gpu::rt::event_t e : {r.start, r.end})
        if (e != nullptr) (void)gpu::rt::event_destroy(e);
      if (r.stream != nullptr) (void)gpu::rt::stream_destroy(r.stream);
      if (r.comm != nullptr) (void)nccl_->comm_destroy(r.comm);
    }
  }
  nccl_executor(const nccl_executor&) = delete;
  nccl_executor& operator=(const nccl_executor&) = delete;

  const status& init_status() const { return init_; }

  status run(const plan& p, std::span<const buffer_view> in, std::span<const buffer_view> out) {
    if (!init_) return init_;
    if (p.ranks() != ranks())
      return {errc::invalid_group, "the plan has " + std::to_string(p.ranks()) +
                                       " ranks, the executor has " + std::to_string(ranks())};
    if (status s = validate_plan(p, in, out); !s) return s;
    if (status s = gpu::check_buffer_devices(p, in, out, device_of_); !s) return s;
    if (status s = shape(p); !s) return s;
    ++sequence_;
    job_ = {&p, in, out};
    threads_.run(ranks(), [this](int r) { run_rank(static_cast<std::size_t>(r)); });
    for (rank_state& r : ranks_)
      if (!r.result) return r.result;
    return {};
  }

  status synchronize() {
    if (!init_) return init_;
    const gpu::device_guard keep;
    for (rank_state& r : ranks_) {
      (void)gpu::rt::set_device(r.device);
      if (gpu::rt::error_t e = gpu::rt::stream_synchronize(r.stream); e != gpu::rt::success)
        return gpu::failure("running the plan", r.device, e);
    }
    return {};
  }

  // The longest rank's time between its timing events of the last run (time_runs), or -1.
  double last_run_seconds() {
    if (!init_ || !options_.time_runs) return -1;
    std::vector<gpu::timed_span> spans;
    for (const rank_state& r : ranks_)
      spans.push_back({r.device, r.start, r.end});
    return gpu::longest_seconds(spans);
  }

  void release_scratch() {
    for (rank_state& r : ranks_)
      if (r.link) r.link->release();
  }

 private:
  struct rank_state {
    int device = 0;
    nccl_comm comm = nullptr;
    gpu::rt::stream_t stream = nullptr;
    gpu::rt::event_t start = nullptr, end = nullptr;
    std::unique_ptr<nccl_transport> link;
    plan_slice slice;
    status result;
  };
  struct job {
    const plan* p = nullptr;
    std::span<const buffer_view> in, out;
  };

  status initialize() {
    int count = 0;
    if (status s = gpu::check_device_map(device_of_, count); !s) return s;
    for (std::size_t r = 0; r < device_of_.size(); ++r) {
      for (std::size_t q = 0; q < r; ++q)
        if (device_of_[q] == device_of_[r])
          return {errc::invalid_group, "ranks " + std::to_string(q) + " and " + std::to_string(r) +
                                           " share device " + std::to_string(device_of_[r]) +
                                           ": NCCL puts one rank per device"};
    }
    if (status s = gpu_nccl(nccl_); !s) return s;
    const gpu::device_guard keep;
    std::vector<nccl_comm> comms(device_of_.size(), nullptr);
    if (nccl_result e = nccl_->comm_init_all(comms.data(), ranks(), device_of_.data());
        e != nccl_success)
      return detail::nccl_failure(*nccl_, "ncclCommInitAll", e);
    ranks_.resize(device_of_.size());
    for (std::size_t r = 0; r < ranks_.size(); ++r) {
      rank_state& s = ranks_[r];
      s.device = device_of_[r];
      s.comm = comms[r];
      if (gpu::rt::error_t e = gpu::rt::set_device(s.device); e != gpu::rt::success)
        return gpu::failure("selecting the device", s.device, e);
      if (gpu::rt::error_t e = gpu::rt::stream_create(&s.stream); e != gpu::rt::success)
        return gpu::failure("creating a stream", s.device, e);
      for (gpu::rt::event_t* t : {&s.start, &s.end})
        if (gpu::rt::error_t e = gpu::rt::event_create(t, true); e != gpu::rt::success)
          return gpu::failure("creating a timing event", s.device, e);
      if (status o = nccl_transport::over(s.comm, s.device, s.link); !o) return o;
    }
    return {};
  }

  // The out-of-place plan of the call (what every rank of a multi-process job derives) and each
  // rank's slice of it, kept while calls repeat the shape.
  status shape(const plan& p) {
    if (have_shape_ && p == last_) return {};
    plan_request req = request_of(p);
    req.in_place = false;
    if (p.in_place) {
      if (status s = make_plan(req, choice_of(p), out_of_place_); !s) return s;
    } else {
      out_of_place_ = p;
    }
    for (std::size_t r = 0; r < ranks_.size(); ++r)
      ranks_[r].slice = slice_plan(out_of_place_, static_cast<int>(r));
    last_ = p;
    have_shape_ = true;
    return {};
  }

  void run_rank(std::size_t r) {
    rank_state& s = ranks_[r];
    const gpu::device_guard keep;
    if (gpu::rt::error_t e = gpu::rt::set_device(s.device); e != gpu::rt::success) {
      (void)(s.result = gpu::failure("selecting the device", s.device, e));
      return;
    }
    const plan& p = *job_.p;
    call_context call;
    call.p = &out_of_place_;
    call.slice = &s.slice;
    const bool has_buffers = p.input_bytes[r] > 0 || p.output_bytes[r] > 0;
    call.send = has_buffers ? job_.in[r] : buffer_view{};
    call.recv = has_buffers ? job_.out[r] : buffer_view{};
    call.placement = !has_buffers ? placement::helper
                     : p.in_place ? placement::in_place
                                  : placement::out_of_place;
    call.sequence = sequence_;
    call.stream = s.stream;
    if (options_.time_runs)
      if (gpu::rt::error_t e = gpu::rt::event_record(s.start, s.stream); e != gpu::rt::success) {
        (void)(s.result = gpu::failure("recording a timing event", s.device, e));
        return;
      }
    (void)(s.result = s.link->run(call));
    if (!s.result) return;
    if (options_.time_runs)
      if (gpu::rt::error_t e = gpu::rt::event_record(s.end, s.stream); e != gpu::rt::success) {
        (void)(s.result = gpu::failure("recording a timing event", s.device, e));
        return;
      }
    if (options_.synchronize)
      if (gpu::rt::error_t e = gpu::rt::stream_synchronize(s.stream); e != gpu::rt::success)
        (void)(s.result = gpu::failure("running the plan", s.device, e));
  }

  // device_memory's write and read: every rank's stream finishes first.
  friend class gpu::device_memory<nccl_executor>;
  status finish_issued() { return synchronize(); }

  const nccl_api* nccl_ = nullptr;  // before init_, which initialize() sets
  nccl_executor_options options_;
  std::vector<rank_state> ranks_;
  plan last_, out_of_place_;
  bool have_shape_ = false;
  std::uint64_t sequence_ = 0;
  job job_{};
  rank_threads threads_;  // each rank's thread
  status init_;  // last: initialize() runs in its initializer, after every member above exists
};

static_assert(executor<nccl_executor>);

}  // namespace relay
