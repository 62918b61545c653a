// The hosted transport: every rank a process runs, its own and the helpers it hosts
// (docs/hosted-helpers.md), behind the one transport its communicator holds. Each rank keeps a
// transport of its own (made by the same factory over its own view, hosted/bootstrap.hpp); this
// one hands every step the process's own rank takes to the hosted ranks too:
//
//   a call       each hosted rank takes part as a helper with no buffers, with its slice of the
//                same plan (made once per plan and kept with a copy of it), in the same agreement.
//                Where the call was refused before it had a plan, each passes the refusal on
//                (errc::peer_error naming its host); where the plan makes it active (a fused call,
//                a group that names it), it refuses the call: it holds no buffers.
//     host       (shm) each hosted rank's part runs in a thread of the crew (hosted/crew.hpp)
//                while the caller runs its own; the call returns once all have.
//     stream     (ipc) every rank's host work first (hosted/streams.hpp: prepare), then an event
//                on the caller's stream, each hosted rank's kernels on its own stream after it,
//                the process's own on the caller's stream, every rank's launches made together
//                by order (launch_in_order), and the caller's stream made to wait for each
//                hosted rank's: one enqueue on the caller's stream, capturable.
//   collective   registration, graph inputs and teardown run on every rank at once, each from
//   steps        its own thread, their exchanges together (views::begin_together).
//
// What a call returns is the process's own rank's status, or, where that is ok, the failure of a
// hosted rank that broke (its transport's error, which names that rank where it is the cause).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "relay/hosted/bootstrap.hpp"
#include "relay/hosted/crew.hpp"
#include "relay/hosted/streams.hpp"
#include "relay/plan/slice.hpp"
#include "relay/transport/transport.hpp"

namespace relay::hosted {

namespace detail {

// For tests: called in a hosted rank's thread before it takes its part of call `sequence` on a host
// transport (a test delays one there, to show that a hosted rank that stalls is named everywhere).
inline void (*before_part)(int rank, std::uint64_t sequence) = nullptr;

}  // namespace detail

class transport final : public relay::transport {
 public:
  // `ranks[k]`: the transport of local rank k (group->local_ranks()[k]; 0 the process's own);
  // `boots[k]` the views they were made over (boots[0] unused: the communicator holds its own).
  // A stream transport must offer stream_side (hosted::make refuses it otherwise).
  transport(std::shared_ptr<views> group, std::vector<std::unique_ptr<bootstrap>> boots,
            std::vector<std::unique_ptr<relay::transport>> ranks)
      : group_(std::move(group)),
        boots_(std::move(boots)),
        ranks_(std::move(ranks)),
        streams_(ranks_.size(), nullptr),
        contexts_(ranks_.size()),
        results_(ranks_.size()),
        crew_(static_cast<int>(ranks_.size()) - 1) {
    for (std::size_t k = 0; k < ranks_.size(); ++k)
      streams_[k] = dynamic_cast<stream_side*>(ranks_[k].get());
    plans_.reserve(capacity);
  }

  // Every rank's teardown at once (a stream transport's meets its peers through the views).
  ~transport() override {
    (void)together([&](std::size_t k) {
      ranks_[k].reset();
      return status{};
    });
  }

  // The process's own rank's transport (what a test or a tool asks of the transport itself).
  relay::transport& own() { return *ranks_[0]; }
  // Local rank k's transport (group().local_ranks()[k]; 0: own()), for a test or a tool that asks
  // a hosted rank's transport itself (its device trace).
  relay::transport& local(std::size_t k) { return *ranks_[k]; }
  const views& group() const { return *group_; }

  std::string_view name() const override { return ranks_[0]->name(); }
  bool judges_on_host() const override { return ranks_[0]->judges_on_host(); }
  fp8_ends wire_ends() const override { return ranks_[0]->wire_ends(); }
  std::uint64_t area_bytes() const override { return ranks_[0]->area_bytes(); }
  int device() const override { return ranks_[0]->device(); }
  int device_share() const override { return ranks_[0]->device_share(); }
  bool broken() const override {
    return std::any_of(ranks_.begin(), ranks_.end(), [](const auto& t) { return t->broken(); });
  }
  status async_status() const override {
    for (const auto& t : ranks_)
      if (status s = t->async_status(); !s) return s;
    return {};
  }
  status take_failed_call() override {
    drain_hosted();
    return ranks_[0]->take_failed_call();
  }
  void abort(const status& why) override {
    for (const auto& t : ranks_)
      t->abort(why);
  }

  status run(const call_context& call) override {
    if (status s = async_status(); !s) return s;
    drain_hosted();
    const hosted_plan* hp = plan_for(call);
    for (std::size_t k = 1; k < ranks_.size(); ++k)
      hosted_context(call, hp, k, contexts_[k]);
    if (ranks_[0]->judges_on_host()) {
      // Each rank's part in a thread of its own; a transport that agrees over the bootstrap does
      // so together.
      group_->begin_together();
      auto each = [&](int k) {
        const auto i = static_cast<std::size_t>(k);
        if (k > 0 && detail::before_part != nullptr)
          detail::before_part(group_->local_ranks()[i], call.sequence);
        results_[i] = ranks_[i]->run(k == 0 ? call : contexts_[i]);
      };
      crew_.run(each);
      group_->end_together();
      return outcome();
    }
    return run_streams(call);
  }

  status register_buffer(void* p, std::size_t bytes, std::chrono::milliseconds timeout) override {
    return together([&](std::size_t k) {
      return k == 0 ? ranks_[0]->register_buffer(p, bytes, timeout)
                    : ranks_[k]->register_buffer(nullptr, 0, timeout);
    });
  }
  status deregister_buffer(void* p, std::chrono::milliseconds timeout) override {
    return together(
        [&](std::size_t k) { return ranks_[k]->deregister_buffer(k == 0 ? p : nullptr, timeout); });
  }
  status register_graph_inputs(std::chrono::milliseconds timeout) override {
    return together([&](std::size_t k) { return ranks_[k]->register_graph_inputs(timeout); });
  }
  status deregister_graph_inputs(std::chrono::milliseconds timeout) override {
    return together([&](std::size_t k) { return ranks_[k]->deregister_graph_inputs(timeout); });
  }

 private:
  // A plan as the hosted ranks run it: a copy (its address stays while it is kept, so a stream
  // transport that knows a plan again by its address does) and each hosted rank's slice.
  struct hosted_plan {
    plan p;
    std::vector<plan_slice> slices;  // [k - 1]
    std::uint64_t last_use = 0;
  };
  static constexpr std::size_t capacity = 64;  // as the communicator's plan cache

  int host() const { return group_->local_ranks()[0]; }

  // The hosted ranks' copy of `call`'s plan: the last one first, then by content; else made,
  // in place of the least recently used.
  const hosted_plan* plan_for(const call_context& call) {
    if (call.p == nullptr || call.slice == nullptr) return nullptr;
    ++uses_;
    if (last_ != nullptr && last_source_ == call.p && last_fingerprint_ == call.fingerprint) {
      last_->last_use = uses_;
      return last_;
    }
    hosted_plan* found = nullptr;
    for (const auto& e : plans_)
      if (e->p == *call.p) found = e.get();
    if (found == nullptr) {
      if (plans_.size() < capacity) {
        found = plans_.emplace_back(std::make_unique<hosted_plan>()).get();
      } else {
        found = std::min_element(plans_.begin(), plans_.end(), [](const auto& a, const auto& b) {
                  return a->last_use < b->last_use;
                })->get();
      }
      found->p = *call.p;
      found->slices.clear();
      for (std::size_t k = 1; k < ranks_.size(); ++k)
        found->slices.push_back(
            slice_plan(found->p, group_->local_ranks()[k], ranks_[k]->wire_ends()));
    }
    found->last_use = uses_;
    last_ = found;
    last_source_ = call.p;
    last_fingerprint_ = call.fingerprint;
    return found;
  }

  // Hosted rank k's part of `call`: a helper's, on its slice of `hp` (null: refused before a
  // plan), its own refusal where it has one.
  void hosted_context(const call_context& call, const hosted_plan* hp, std::size_t k,
                      call_context& out) const {
    const int me = group_->local_ranks()[k];
    out.p = hp != nullptr ? &hp->p : nullptr;
    out.slice = hp != nullptr ? &hp->slices[k - 1] : nullptr;
    out.send = out.recv = {};
    out.send_runs = out.recv_runs = {};
    out.piece = call.piece;
    out.placement = placement::helper;
    out.sequence = call.sequence;
    out.fingerprint = call.fingerprint;
    out.timeout = call.timeout;
    out.stream = streams_[k] != nullptr ? streams_[k]->own_stream() : call.stream;
    if (hp == nullptr) {
      // The host refused before it had a plan: passed on, so the agreement names the host.
      out.local = {errc::peer_error,
                   "rank " + std::to_string(host()) + " refused call #" +
                       std::to_string(call.sequence) + ": " + call.local.to_string(),
                   host()};
    } else if (const auto r = static_cast<std::size_t>(me);
               hp->p.input_bytes[r] > 0 || hp->p.output_bytes[r] > 0) {
      out.local = {errc::invalid_argument,
                   rank_name(group_->rule(), me) + " is a hosted helper (it holds no buffers), " +
                       "but call #" + std::to_string(call.sequence) + " makes it active (" +
                       std::to_string(hp->p.input_bytes[r]) + " input bytes, " +
                       std::to_string(hp->p.output_bytes[r]) +
                       " output bytes): a communicator with hosted helpers runs one group of "
                       "its processes' ranks"};
    } else if (!out.local.ok()) {
      out.local = {};
    }
  }

  // A stream transport's call (see the file's comment). A runtime call of the forking or joining
  // that fails leaves the process's ranks out of step with their peers: every one of them leaves.
  status run_streams(const call_context& call) {
    for (std::size_t k = 0; k < ranks_.size(); ++k)
      streams_[k]->prepare(k == 0 ? call : contexts_[k]);
    void* point = nullptr;
    status s = ranks_.size() > 1 ? streams_[0]->fork(call.stream, point) : status{};
    for (std::size_t k = 1; k < ranks_.size() && s; ++k)
      s = streams_[k]->follow(point);
    if (!s) {
      abort(s);
      return s;
    }
    for (stream_side* side : streams_)
      side->keep_launches(true);
    for (std::size_t k = 1; k < ranks_.size(); ++k)
      results_[k] = ranks_[k]->run(contexts_[k]);
    results_[0] = ranks_[0]->run(call);
    launch_in_order(streams_, results_, next_launch_);
    for (stream_side* side : streams_)
      side->keep_launches(false);
    for (std::size_t k = 1; k < ranks_.size() && s; ++k)
      s = streams_[k]->rejoin(call.stream);
    if (!s) {
      abort(s);
      return s;
    }
    return outcome();
  }

  // The call's status: the process's own rank's, else the failure of a hosted rank that broke.
  status outcome() const {
    if (!results_[0]) return results_[0];
    for (std::size_t k = 1; k < ranks_.size(); ++k)
      if (!results_[k] && ranks_[k]->broken()) return results_[k];
    return results_[0];
  }

  // A hosted rank's verdicts are its host's (the same records, judged alike): not kept twice.
  void drain_hosted() {
    for (std::size_t k = 1; k < ranks_.size(); ++k)
      while (!ranks_[k]->take_failed_call().ok()) {
      }
  }

  // `step(k)` on every rank at once, its exchanges together; a rank whose step fails leaves it,
  // so that the others' exchanges name it instead of waiting. The process's own rank's status,
  // else a hosted rank's failure.
  template <class Step>
  status together(Step&& step) {
    group_->begin_together();
    auto each = [&](int k) {
      const auto i = static_cast<std::size_t>(k);
      results_[i] = step(i);
      if (!results_[i]) group_->leave(k, results_[i]);
    };
    crew_.run(each);
    group_->end_together();
    if (!results_[0]) return results_[0];
    for (std::size_t k = 1; k < ranks_.size(); ++k)
      if (!results_[k]) return results_[k];
    return {};
  }

  std::shared_ptr<views> group_;
  std::vector<std::unique_ptr<bootstrap>> boots_;  // before ranks_: outlives them
  std::vector<std::unique_ptr<relay::transport>> ranks_;
  std::vector<stream_side*> streams_;     // [k]: ranks_[k] as a stream transport, or null
  std::vector<call_context> contexts_;    // [k]: hosted rank k's part of the call (reused)
  std::vector<status> results_;           // [k]: its status
  std::vector<std::size_t> next_launch_;  // launch_in_order's scratch
  std::vector<std::unique_ptr<hosted_plan>> plans_;
  hosted_plan* last_ = nullptr;
  const plan* last_source_ = nullptr;  // the plan the last call passed, and its fingerprint
  std::uint64_t last_fingerprint_ = 0;
  std::uint64_t uses_ = 0;
  crew crew_;  // last: its threads stop before anything they use goes
};

}  // namespace relay::hosted
