// A control plane: host-side, on the node, one per communicator, so that ranks that do not run
// the model can serve whatever the ranks that do call.
//
//   relay::serve::attach_plane(*comm, rank < 2 ? plane_role::call : plane_role::serve);
//
// Collective: every rank says whether it calls (makes its own calls, as today) or serves (learns
// every step from the plane: serve/serve.hpp). The publisher is the lowest rank that calls, a
// fixed rule every rank applies to the roles it gathered. From then on the communicator announces
// each step to the plane before the step's agreement (comm/announcer.hpp), without user code: on
// the publisher the plane writes it into the call stream, on the other callers it does nothing,
// and a serving rank that makes a step itself reads the step's record and passes it over.
//
// Two streams (serve/segment.hpp, serve/ring.hpp):
//   - the call stream: one record per step the serving ranks take (a call, a refusal, a
//     registration, a capture's start and end, a replay, stop). Its records are numbered by the
//     publisher; each carries the communicator's call sequence, so a reader not where the
//     publisher was finds out at once. The publisher reuses a slot once every serving rank has
//     taken its record, and waits for that at most the communicator's timeout.
//   - the plan stream: a program's own plans, by epoch (0, 1, 2, ...), for helpers that run
//     ahead (publish_forward / consume_forward in relay's terms, publish_control /
//     consume_control in torchcomms'). Only the publisher publishes; any other rank consumes, and
//     is waited for from its first consume on. A consumer's wait watches the publisher and every
//     other consumer: one gone is a failure of the stream, named at once on every rank that
//     waits, and the publisher's next publish gives up on the plane with it.
//
// Every wait has a deadline and checks the rank it waits for every few milliseconds: a process
// gone, a plane closed, a rank that gave up (its failure, recorded in its block) end the wait at
// once with an error naming that rank first; a stalled one after the deadline. A rank that gives
// up on the plane records why, so the ranks waiting on it report the same cause.
//
// At attach_plane every rank gathers every rank's role and torchcomms plan limit
// (serve/plan_limits.hpp): a rank whose limit differs from rank 0's, or whose own was refused,
// fails the plane on every rank, named first.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "relay/bootstrap/exchange.hpp"
#include "relay/comm/communicator.hpp"
#include "relay/core/no_copy.hpp"
#include "relay/hosted/bootstrap.hpp"
#include "relay/serve/plan_limits.hpp"
#include "relay/serve/record.hpp"
#include "relay/serve/ring.hpp"
#include "relay/serve/segment.hpp"
#include "relay/transport/shm/wait.hpp"

namespace relay::serve {

constexpr const char* name(plane_role r) {
  return r == plane_role::call ? "call" : r == plane_role::serve ? "serve" : "unknown";
}

class control_plane final : public announcer, no_copy {
 public:
  control_plane(int rank, std::chrono::milliseconds timeout) : rank_(rank), timeout_(timeout) {}
  ~control_plane() override {
    if (open_)
      std::atomic_ref<std::uint32_t>(seg_.rank_block(rank_).left)
          .store(1, std::memory_order_release);
  }

  // Collective over `boot` (see attach_plane).
  status open(bootstrap& boot, plane_role role, const plane_geometry& geometry) {
    role_ = role;
    if (status s = seg_.open(boot, geometry, timeout_); !s) return s;
    plane_rank& me = seg_.rank_block(rank_);
    me.pid = ::getpid();
    me.role = static_cast<std::uint32_t>(role);
    open_ = true;
    // What every rank must agree on: its role, its plan limit (or why it has none: the text).
    const status own = resolve_control_limit(geometry.control_max_calls, plan_bytes(), limit_);
    const attach_terms mine{role, own.ok() ? limit_.max_calls : 0};
    std::vector<with_text<attach_terms>> all;
    if (status s = exchange(boot, mine, own.message(), all, timeout_, "control-plane terms"); !s)
      return s;
    for (std::size_t q = 0; q < all.size(); ++q) {
      const std::string who = "rank " + std::to_string(q);
      if (all[q].value.max_calls == 0)
        return {errc::invalid_argument, who + ": " + all[q].text, static_cast<int>(q)};
      if (all[q].value.max_calls != all[0].value.max_calls)
        return {errc::invalid_argument,
                who + " limits torchcomms plans to " + std::to_string(all[q].value.max_calls) +
                    " counts, rank 0 to " + std::to_string(all[0].value.max_calls) + " (" +
                    control_max_calls_variable +
                    "): every rank's must be the same, or a plan one rank publishes another "
                    "would refuse",
                static_cast<int>(q)};
    }
    publisher_ = -1;
    servers_.clear();
    for (std::size_t q = 0; q < all.size(); ++q) {
      const plane_role r = all[q].value.role;
      if (r == plane_role::call && publisher_ < 0) publisher_ = static_cast<int>(q);
      if (r == plane_role::serve) servers_.push_back(static_cast<int>(q));
      if (r != plane_role::call && r != plane_role::serve)
        return {errc::invalid_argument,
                "rank " + std::to_string(q) + " gave the control plane an unknown role",
                static_cast<int>(q)};
    }
    if (publisher_ < 0)
      return {errc::invalid_argument,
              "every rank serves: a control plane needs a rank that calls (its publisher)"};
    return {};
  }

  int rank() const { return rank_; }
  plane_role role() const { return role_; }
  // The lowest rank that calls: the one that publishes.
  int publisher() const { return publisher_; }
  bool publishes() const { return rank_ == publisher_; }
  const std::vector<int>& servers() const { return servers_; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  std::size_t plan_bytes() const { return seg_.header().plan_bytes; }
  // The most counts a torchcomms plan may have here (every rank's is the same), where it came
  // from, and the most the plan slots hold.
  std::uint32_t control_max_calls() const { return limit_.max_calls; }
  const std::string& control_limit_source() const { return limit_.source; }
  std::uint32_t control_counts_held() const {
    return serve::control_counts_held(seg_.header().plan_bytes);
  }
  // The publisher: call-stream records written so far (any thread may ask).
  std::uint64_t published() const { return published_.load(std::memory_order_acquire); }
  // Whether this rank gave up on the plane (its failure is what every later use returns).
  const status& failure() const { return failed_; }

  // The communicator's steps (comm/announcer.hpp).
  status announce(const announcement& a) override {
    if (!failed_.ok()) return failed_;
    if (role_ == plane_role::serve) return serving_ ? status{} : pass_over(a);
    if (!publishes() || servers_.empty()) return {};
    std::lock_guard<std::mutex> hold(publishing_);
    mark_stopped(0);
    record_head h;
    h.publisher = static_cast<std::uint32_t>(rank_);
    h.sequence = a.sequence;
    h.capture = capture_;
    if (a.step == announced_step::call || a.step == announced_step::refusal)
      last_call_ = a.sequence + a.rounds - 1;
    std::span<std::byte> out(scratch_);
    bool fits = true;
    std::size_t n = 0;
    switch (a.step) {
      case announced_step::call:
        h.kind = record_kind::call;
        n = write_call(out, h, served_call{*a.shape, *a.choice}, fits);
        if (!fits) {
          h.kind = record_kind::unservable;
          n = write_head(out, h, fits);
        }
        break;
      case announced_step::refusal:
        h.kind = record_kind::refusal;
        n = write_refusal(out, h, served_refusal{a.refusal->code(), a.refusal->message()}, fits);
        break;
      case announced_step::register_buffer: h.kind = record_kind::register_buffer; break;
      case announced_step::deregister_buffer: h.kind = record_kind::deregister_buffer; break;
      case announced_step::register_graph_inputs:
        h.kind = record_kind::register_graph_inputs;
        break;
      case announced_step::deregister_graph_inputs:
        h.kind = record_kind::deregister_graph_inputs;
        break;
    }
    if (n == 0) n = write_head(out, h, fits);
    return publish_record(std::span<const std::byte>(scratch_.data(), n));
  }

  // The publisher: a step that is no call of the communicator's (a capture's start or end, a
  // replay, stop), after the calls announced so far (from any thread: a stop published while a
  // call is in flight follows it). Other callers: nothing to do.
  status publish_step(record_kind kind, std::uint64_t capture, const status& failure = {}) {
    if (!failed_.ok()) return failed_;
    if (role_ == plane_role::serve)
      return {errc::invalid_argument, "rank " + std::to_string(rank_) +
                                          " serves: only the ranks that call publish " +
                                          name(kind)};
    if (!publishes() || servers_.empty()) return {};
    std::lock_guard<std::mutex> hold(publishing_);
    record_head h;
    h.kind = kind;
    h.publisher = static_cast<std::uint32_t>(rank_);
    h.sequence = last_call_;
    h.capture = capture;
    bool fits = true;
    // A stop after a failure says why: the serving ranks return it.
    const std::size_t n =
        failure.ok() ? write_head(scratch_, h, fits)
                     : write_refusal(
                           scratch_, h,
                           served_refusal{failure.code(), failure.message(), failure.peer()}, fits);
    // Marked before the record is written: a serving rank returns once it reads the stop, and
    // a caller that finds it gone then finds the mark (explain).
    mark_stopped(kind == record_kind::stop ? last_call_ + 1 : 0);
    status s = publish_record(std::span<const std::byte>(scratch_.data(), n));
    if (!s) mark_stopped(0);
    return s;
  }

  // A call of a rank that calls failed waiting for its peers: where the publisher's stop was
  // its last step before the call (the ranks that serve returned from serve() and take no part),
  // the failure is that stop's, named so (comm/announcer.hpp).
  status explain(std::uint64_t sequence, status failure) override {
    if (failure.ok() || role_ != plane_role::call || publishes() || servers_.empty() ||
        (failure.code() != errc::peer_lost && failure.code() != errc::timeout))
      return failure;
    const std::uint64_t stop =
        std::atomic_ref<const std::uint64_t>(seg_.rank_block(publisher_).stopped)
            .load(std::memory_order_acquire);
    if (stop == 0 || sequence < stop) return failure;
    return {errc::peer_error,
            "rank " + std::to_string(publisher_) +
                ", the publisher, stopped the ranks that serve after call #" +
                std::to_string(stop - 1) +
                " (stop_serving) and made no call since: they take no "
                "part in call #" +
                std::to_string(sequence) + " (" + failure.message() + ")",
            publisher_};
  }

  // serve() holds this while it serves: one serve() per communicator at a time.
  bool claim_serving() { return !serve_claimed_.exchange(true, std::memory_order_acq_rel); }
  void release_serving() { serve_claimed_.store(false, std::memory_order_release); }

  // A serving rank: the call stream's next record, waited for up to `timeout` (the publisher's
  // process and plane watched meanwhile); copied out, then the slot is the publisher's again.
  status take(std::vector<std::byte>& record, record_head& head,
              std::chrono::milliseconds timeout) {
    if (!failed_.ok()) return failed_;
    const std::uint64_t index = taken_;
    slot_head& s = seg_.slot(0, index);
    const std::span<const std::byte> room = seg_.room(s, 0);
    const auto deadline = clock::now() + timeout;
    for (;;) {
      const slot_read r = read_slot(s, room, index, record);
      if (r == slot_read::whole) break;
      if (r == slot_read::overtaken)
        return give_up({errc::system_error,
                        "rank " + std::to_string(rank_) +
                            " fell behind its control plane: the publisher wrote over a step it "
                            "had not read (the ranks are out of step)"});
      if (r == slot_read::torn) continue;
      status trouble;
      const shm::wait_result w = shm::wait_at_least(s.word, word_written(index), deadline, [&] {
        trouble = publisher_trouble();
        return !trouble.ok();
      });
      if (w == shm::wait_result::trouble) return give_up(trouble);
      if (w == shm::wait_result::timed_out)
        return give_up({errc::timeout,
                        "rank " + std::to_string(publisher_) +
                            ", the publisher, published nothing within " +
                            std::to_string(timeout.count()) + " ms (after call #" +
                            std::to_string(last_sequence_) + "; seen by rank " +
                            std::to_string(rank_) + ", which serves)",
                        publisher_});
    }
    ++taken_;
    std::atomic_ref<std::uint64_t>(seg_.rank_block(rank_).calls_taken)
        .store(taken_, std::memory_order_release);
    if (status bad = read_head(record, head); !bad) return give_up(bad);
    if (head.kind == record_kind::call || head.kind == record_kind::refusal ||
        head.kind == record_kind::unservable)
      last_sequence_ = head.sequence;
    return {};
  }

  // Set by serve() around the steps it takes from the plane (they are not passed over).
  void set_serving(bool on) { serving_ = on; }

  // Graph capture on the ranks that call (serve/graphs.hpp): the calls made between
  // begin_capture and end_capture are captured into graph `id` (1, 2, ... alike on every rank
  // that calls), which replay(id) launches. The publisher tells the serving ranks, which capture
  // and replay the same; the other callers only count.
  status begin_capture(std::uint64_t& id) {
    if (capture_ != 0)
      return {errc::invalid_argument,
              "capture " + std::to_string(capture_) + " is still open: end it first"};
    id = ++captures_;
    capture_ = id;
    return publish_step(record_kind::capture_begin, id);
  }
  status end_capture() {
    if (capture_ == 0) return {errc::invalid_argument, "no capture is open"};
    const std::uint64_t id = capture_;
    capture_ = 0;
    return publish_step(record_kind::capture_end, id);
  }
  status replay(std::uint64_t id) {
    if (id == 0 || id > captures_ || id == capture_)
      return {errc::invalid_argument, "graph " + std::to_string(id) +
                                          " was never captured with this communicator's plane "
                                          "(begin_capture, end_capture)"};
    return publish_step(record_kind::replay, id);
  }

  // The plan stream's publisher: `record` (a forward_plan or control_plan's bytes) as epoch
  // `epoch`, the next in turn, once every rank that consumes has taken epoch - plan_depth.
  status publish_plan(std::uint64_t epoch, std::span<const std::byte> record,
                      std::chrono::milliseconds timeout) {
    if (!failed_.ok()) return failed_;
    if (!publishes())
      return {errc::invalid_argument, "rank " + std::to_string(rank_) +
                                          " does not publish on this communicator's control "
                                          "plane: rank " +
                                          std::to_string(publisher_) +
                                          " does (the lowest rank that calls)"};
    std::lock_guard<std::mutex> hold(publishing_);
    if (epoch != next_epoch_)
      return {errc::invalid_argument,
              "epoch " + std::to_string(epoch) + " published out of turn: the next is " +
                  std::to_string(next_epoch_) + " (epochs go 0, 1, 2, ...)"};
    if (record.size() > seg_.header().plan_bytes)
      return {errc::invalid_argument, "the plan takes " + std::to_string(record.size()) +
                                          " bytes; the plane's plan slots hold " +
                                          std::to_string(seg_.header().plan_bytes) +
                                          " (plane_geometry::plan_bytes)"};
    // A rank that gave up, or a consumer gone, ends the stream: this rank gives up on the plane
    // with that cause, so every rank waiting on it reports it too.
    for (int q = 0; q < seg_.ranks(); ++q) {
      if (q == rank_) continue;
      if (status s = consumes(q) ? rank_trouble(q, "which consumes plans") : gave_up_status(q); !s)
        return give_up(s);
    }
    const std::uint64_t depth = seg_.header().plan_depth;
    if (epoch >= depth) {
      const std::uint64_t need = epoch - depth + 2;
      const auto deadline = clock::now() + timeout;
      for (int q = 0; q < seg_.ranks(); ++q) {
        if (q == rank_ || !consumes(q)) continue;  // never consumed: not waited for
        status trouble;
        const shm::wait_result w =
            shm::wait_at_least(seg_.rank_block(q).plans_taken, need, deadline, [&] {
              trouble = rank_trouble(q, "which consumes plans");
              return !trouble.ok();
            });
        if (w == shm::wait_result::trouble) return give_up(trouble);
        if (w == shm::wait_result::timed_out)
          return {errc::timeout,
                  "rank " + std::to_string(q) + " did not consume epoch " +
                      std::to_string(epoch - depth) + " within " + std::to_string(timeout.count()) +
                      " ms, and the plan stream is " + std::to_string(depth) +
                      " deep (publishing epoch " + std::to_string(epoch) + ")",
                  q};
      }
    }
    slot_head& s = seg_.slot(1, epoch);
    write_slot(s, seg_.room(s, 1), epoch, record);
    ++next_epoch_;
    return {};
  }

  // This rank consumes plans: from now on the publisher waits for it before it reuses a slot.
  // consume_plan does it on its first call; a consumer that may start after the publisher is
  // plan_depth epochs ahead does it first (then a barrier, say).
  status join_plans() {
    if (publishes())
      return {errc::invalid_argument, "rank " + std::to_string(rank_) +
                                          " publishes this plane's plans: it has none to consume"};
    std::uint64_t never = 0;
    std::atomic_ref<std::uint64_t>(seg_.rank_block(rank_).plans_taken)
        .compare_exchange_strong(never, 1, std::memory_order_acq_rel);
    return {};
  }

  // A consumer: epoch `epoch` of the plan stream, waited for up to `timeout`, the publisher and
  // every other consumer watched meanwhile (one gone, or given up, ends the wait naming it). A
  // wait that fails gives up on the plane with its cause: one that times out names the
  // publisher, and the publisher's next publish fails naming this rank.
  status consume_plan(std::uint64_t epoch, std::vector<std::byte>& record,
                      std::chrono::milliseconds timeout) {
    if (!failed_.ok()) return failed_;
    if (status s = join_plans(); !s) return s;
    std::uint64_t& taken = seg_.rank_block(rank_).plans_taken;
    slot_head& s = seg_.slot(1, epoch);
    const std::span<const std::byte> room = seg_.room(s, 1);
    const auto deadline = clock::now() + timeout;
    for (;;) {
      const slot_read r = read_slot(s, room, epoch, record);
      if (r == slot_read::whole) break;
      if (r == slot_read::overtaken)
        return {errc::system_error,
                "epoch " + std::to_string(epoch) + " was overwritten by epoch " +
                    std::to_string(index_of_word(load_word(s))) + " before rank " +
                    std::to_string(rank_) + " read it: it fell more than " +
                    std::to_string(seg_.header().plan_depth) + " plans behind"};
      if (r == slot_read::torn) continue;
      status trouble;
      const shm::wait_result w = shm::wait_at_least(s.word, word_written(epoch), deadline, [&] {
        trouble = rank_trouble(publisher_, "the publisher");
        for (int q = 0; q < seg_.ranks() && trouble.ok(); ++q)
          if (q != rank_ && q != publisher_ && consumes(q))
            trouble = rank_trouble(q, "which consumes plans");
        return !trouble.ok();
      });
      // Given up with the cause, so that a rank that finds this one gone later (it may exit
      // now) reports the cause, not this rank.
      if (w == shm::wait_result::trouble) return give_up(trouble);
      if (w == shm::wait_result::timed_out)
        return give_up({errc::timeout,
                        "rank " + std::to_string(publisher_) +
                            ", the publisher, published no plan for epoch " +
                            std::to_string(epoch) + " within " + std::to_string(timeout.count()) +
                            " ms (seen by rank " + std::to_string(rank_) + ")",
                        publisher_});
    }
    std::atomic_ref<std::uint64_t> done(taken);
    std::uint64_t was = done.load(std::memory_order_relaxed);
    while (was < epoch + 2 &&
           !done.compare_exchange_weak(was, epoch + 2, std::memory_order_release))
      ;
    return {};
  }

  // This rank gives up on the plane with `why` (the first failure stays): every rank that waits
  // on it reports `why`.
  status give_up(status why) {
    if (!failed_.ok()) return failed_;
    plane_rank& me = seg_.rank_block(rank_);
    me.gave_up_root = why.peer();
    std::memset(me.gave_up_reason, 0, sizeof me.gave_up_reason);
    why.message().copy(me.gave_up_reason, sizeof me.gave_up_reason - 1);
    std::atomic_ref<std::uint32_t>(me.gave_up)
        .store(static_cast<std::uint32_t>(why.code()), std::memory_order_release);
    failed_ = std::move(why);
    return failed_;
  }

 private:
  using clock = std::chrono::steady_clock;

  // The publisher: record `index` of the call stream, written once every serving rank has taken
  // record index - depth. A failure here leaves the serving ranks out of step: it gives up.
  status publish_record(std::span<const std::byte> record) {
    const std::uint64_t index = published_.load(std::memory_order_relaxed);
    const std::uint64_t depth = seg_.header().depth;
    for (int q : servers_)
      if (status s = gave_up_status(q); !s) return give_up(s);
    if (index >= depth) {
      record_head old;
      slot_head& reused = seg_.slot(0, index);
      (void)read_head(seg_.room(reused, 0).first(reused.bytes), old);
      const auto deadline = clock::now() + timeout_;
      for (int q : servers_) {
        status trouble;
        const shm::wait_result w =
            shm::wait_at_least(seg_.rank_block(q).calls_taken, index - depth + 1, deadline, [&] {
              trouble = rank_trouble(q, "which serves");
              return !trouble.ok();
            });
        if (w == shm::wait_result::trouble) return give_up(trouble);
        if (w == shm::wait_result::timed_out)
          return give_up({errc::timeout,
                          "rank " + std::to_string(q) + ", which serves, did not take " +
                              name(old.kind) + " (after call #" + std::to_string(old.sequence) +
                              ") within " + std::to_string(timeout_.count()) +
                              " ms, and the plane is " + std::to_string(depth) + " steps deep",
                          q});
      }
    }
    if (record.size() > seg_.header().record_bytes)
      return give_up({errc::invalid_argument, "a step's record outgrew the plane's slots"});
    slot_head& s = seg_.slot(0, index);
    write_slot(s, seg_.room(s, 0), index, record);
    published_.store(index + 1, std::memory_order_release);
    return {};
  }

  // A serving rank that makes a step itself: the step's record is read and passed over, once it
  // is the step's.
  status pass_over(const announcement& a) {
    record_head h;
    std::vector<std::byte> record;
    if (status s = take(record, h, timeout_); !s) return s;
    const bool is_call = a.step == announced_step::call || a.step == announced_step::refusal;
    const bool record_call = h.kind == record_kind::call || h.kind == record_kind::refusal ||
                             h.kind == record_kind::unservable;
    if (is_call == record_call && h.sequence == a.sequence) return {};
    return give_up(
        {errc::invalid_argument,
         "rank " + std::to_string(rank_) + " serves but took a step of its own (" +
             (is_call ? "call #" + std::to_string(a.sequence) : std::string("a registration")) +
             ") where the plane's next is " + name(h.kind) + " after call #" +
             std::to_string(h.sequence) + ": the ranks are out of step"});
  }

  // What rank q recorded when it gave up, if it did.
  status gave_up_status(int q) const {
    const plane_rank& b = seg_.rank_block(q);
    const auto code =
        std::atomic_ref<const std::uint32_t>(b.gave_up).load(std::memory_order_acquire);
    if (code == 0) return {};
    return {static_cast<errc>(code),
            std::string(b.gave_up_reason, ::strnlen(b.gave_up_reason, sizeof b.gave_up_reason)),
            b.gave_up_root};
  }

  // Whether rank q consumes plans (its first consume, or join_plans, is done).
  bool consumes(int q) const {
    return std::atomic_ref<const std::uint64_t>(seg_.rank_block(q).plans_taken)
               .load(std::memory_order_acquire) != 0;
  }

  // The publisher: marks whether its last record is a stop (1 + the calls before it), or not (0).
  void mark_stopped(std::uint64_t value) {
    std::atomic_ref<std::uint64_t>(seg_.rank_block(rank_).stopped)
        .store(value, std::memory_order_release);
  }

  // Whether rank q (what it is: "which serves") can still do its part: its recorded failure, its
  // process gone, its plane closed.
  status rank_trouble(int q, const std::string& what) const {
    if (status s = gave_up_status(q); !s) return s;
    const plane_rank& b = seg_.rank_block(q);
    const std::string who = "rank " + std::to_string(q);
    if (std::atomic_ref<const std::uint32_t>(b.left).load(std::memory_order_acquire) != 0)
      return {errc::peer_lost,
              who + ", " + what + ", closed its communicator (seen by rank " +
                  std::to_string(rank_) + ")",
              q};
    if (shm::process_exited(b.pid))
      return {errc::peer_lost,
              who + " (pid " + std::to_string(b.pid) + "), " + what + ", exited (seen by rank " +
                  std::to_string(rank_) + ")",
              q};
    return {};
  }

  // The publisher's trouble, for a rank that waits on its call stream: the failure it gave up
  // with, as it is (its cause named first); else, where it is gone, that it did not stop this
  // rank, and after which call.
  status publisher_trouble() const {
    if (status recorded = gave_up_status(publisher_); !recorded) return recorded;
    status s = rank_trouble(publisher_, "the publisher");
    if (s.ok() || s.code() != errc::peer_lost) return s;
    const plane_rank& b = seg_.rank_block(publisher_);
    if (std::atomic_ref<const std::uint32_t>(b.left).load(std::memory_order_acquire) != 0)
      return {errc::peer_lost,
              "rank " + std::to_string(publisher_) +
                  ", the publisher, closed its communicator without stopping the ranks that "
                  "serve (after call #" +
                  std::to_string(last_sequence_) + "; seen by rank " + std::to_string(rank_) + ")",
              publisher_};
    return {errc::peer_lost,
            "rank " + std::to_string(publisher_) + " (pid " + std::to_string(b.pid) +
                "), the publisher, exited (after call #" + std::to_string(last_sequence_) +
                "; seen by rank " + std::to_string(rank_) + ", which serves)",
            publisher_};
  }

  // What every rank sends at attach_plane.
  struct attach_terms {
    plane_role role = plane_role::call;
    std::uint32_t max_calls = 0;  // this rank's plan limit; 0: refused (its text says why)
  };

  int rank_;
  std::chrono::milliseconds timeout_;
  plane_role role_ = plane_role::call;
  plane_segment seg_;
  bool open_ = false;
  int publisher_ = -1;
  std::vector<int> servers_;
  status failed_;
  bool serving_ = false;
  std::atomic<bool> serve_claimed_{false};  // a serve() is running (claim_serving)
  control_limit limit_;
  std::mutex publishing_;  // steps and plans, published from any thread
  std::vector<std::byte> scratch_ = std::vector<std::byte>(1 << 16);
  std::atomic<std::uint64_t> published_{0};  // the publisher: call-stream records written
  std::uint64_t last_call_ = 0;      // the publisher: the last sequence of the last call announced
  std::uint64_t taken_ = 0;          // a serving rank: call-stream records read
  std::uint64_t last_sequence_ = 0;  // a serving rank: the call of the last record read
  std::uint64_t next_epoch_ = 0;     // the publisher: the plan stream's next epoch
  std::uint64_t capture_ = 0;        // a caller: the capture open now (0: none)
  std::uint64_t captures_ = 0;       // a caller: captures begun
};

// The plane `comm` was given, or null.
inline control_plane* plane_of(communicator& comm) {
  return dynamic_cast<control_plane*>(comm.announcer());
}

// Gives `comm` a control plane (collective: every rank of `comm` calls it, each with its role).
// The plane's geometry is rank 0's. Fails on every rank where any rank's role or mapping failed,
// and where no rank calls.
inline status attach_plane(communicator& comm, plane_role role,
                           const plane_geometry& geometry = {}) {
  // Hosted helpers take every call their host makes: they need no plane, and cannot serve one.
  if (dynamic_cast<const hosted::view*>(&comm.boot()) != nullptr)
    return {errc::unsupported,
            "a communicator with hosted helpers has no control plane: its helpers take their "
            "host's calls (docs/hosted-helpers.md)"};
  auto p = std::make_shared<control_plane>(comm.rank(), comm.config().timeout);
  if (status s = p->open(comm.boot(), role, geometry); !s) return s;
  comm.set_announcer(std::move(p));
  return {};
}

}  // namespace relay::serve
