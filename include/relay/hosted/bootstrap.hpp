// A process's ranks as bootstraps of N ranks (docs/hosted-helpers.md, "How a process stands for
// several ranks"). A process that runs several ranks of a communicator (its own and the helpers
// it hosts, hosted/hosting.hpp) gives each a view: a bootstrap of N ranks over the job's
// bootstrap of A processes. An all-gather through the views is one all-gather of the processes,
// each contributing every rank it runs, in one of two ways:
//
//   together     inside a step the process's ranks take together (begin_together ..
//                end_together: the transports' set-up, registration, teardown, a call on the
//                CPU), each rank contributes its own bytes from its own thread; the last to
//                arrive makes the process's exchange for all of them and hands every one its
//                result. A rank that gives up on the step (leave: its set-up failed) is marked in
//                every exchange it misses, and every rank's exchange then fails naming it, so
//                no process waits for it.
//   its host's   outside such steps only the process's own rank exchanges (a communicator
//   word         explaining a mismatch, a program's comm.boot() all-gathers): each rank it
//                hosts contributes the same bytes as its host, sent once.
//
// What a process sends: the magic word, then per rank it runs its number, how it speaks (its own
// bytes, its host's, or a failure's text) and the bytes. Every process checks that every rank of
// the communicator is spoken for exactly once, by the process that runs it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "relay/bootstrap/bootstrap.hpp"
#include "relay/core/no_copy.hpp"
#include "relay/hosted/hosting.hpp"

namespace relay::hosted {

namespace detail {

inline constexpr std::uint32_t views_magic = 0x31766872;  // "rhv1"

enum class speaks : std::uint8_t { own, as_host, failed };

struct entry_head {
  std::int32_t rank = 0;
  speaks how = speaks::own;
  std::uint8_t pad[3] = {};
  std::uint64_t bytes = 0;
};

inline void put(std::vector<std::byte>& out, const void* p, std::size_t n) {
  const auto* b = static_cast<const std::byte*>(p);
  out.insert(out.end(), b, b + n);
}

}  // namespace detail

// The views of one process's ranks. Made once per communicator; views hold it.
class views : no_copy, public std::enable_shared_from_this<views> {
 public:
  // `processes`: the job's bootstrap (this process is its rank p); `h` the agreed hosting.
  views(std::shared_ptr<bootstrap> processes, hosting h)
      : processes_(std::move(processes)),
        hosting_(std::move(h)),
        ranks_(hosting_.ranks_of(processes_->rank())),
        slots_(ranks_.size()),
        gone_(ranks_.size()) {}

  const hosting& rule() const { return hosting_; }
  bootstrap& processes() const { return *processes_; }
  // The ranks this process runs: its own first.
  const std::vector<int>& local_ranks() const { return ranks_; }
  int local_count() const { return static_cast<int>(ranks_.size()); }

  // The bootstrap of local rank `k` (0: the process's own).
  inline std::unique_ptr<bootstrap> view(int k);

  // The caller's thread, around a step every rank of the process takes, each from its own thread.
  void begin_together() {
    const std::lock_guard<std::mutex> hold(m_);
    together_ = true;
    for (std::string& g : gone_)
      g.clear();
    gone_count_ = 0;
  }
  void end_together() {
    const std::lock_guard<std::mutex> hold(m_);
    together_ = false;
  }
  // Local rank `k` gives up on the step together (`why`): every exchange of the step it does not
  // join says so, and fails on every rank naming it. Completes an exchange that waited only for it.
  void leave(int k, const status& why) {
    std::unique_lock<std::mutex> lock(m_);
    const auto i = static_cast<std::size_t>(k);
    if (!together_ || !gone_[i].empty()) return;
    gone_[i] = why.ok() ? "it left" : why.to_string();
    ++gone_count_;
    if (arrived_ > 0 && arrived_ + gone_count_ == local_count()) lead(lock, round_timeout_);
  }

  inline status all_gather(int k, std::span<const std::byte> mine,
                           std::vector<std::vector<std::byte>>& all, milliseconds timeout);

 private:
  using steady = std::chrono::steady_clock;
  struct slot {
    std::vector<std::byte> bytes;
    std::vector<std::vector<std::byte>>* all = nullptr;
    status* result = nullptr;
  };

  // The exchange of `mine` for this process's own rank alone, its hosted ranks speaking as it.
  status on_hosts_word(std::span<const std::byte> mine, std::vector<std::vector<std::byte>>& all,
                       milliseconds timeout) {
    std::vector<std::byte> out;
    begin(out);
    add(out, ranks_[0], detail::speaks::own, mine);
    for (std::size_t i = 1; i < ranks_.size(); ++i)
      add(out, ranks_[i], detail::speaks::as_host, {});
    return exchange(out, all, timeout);
  }

  // The round is complete (every local rank arrived or left): this thread makes the process's
  // exchange and hands each rank that arrived its result. Entered and left with `lock` held.
  void lead(std::unique_lock<std::mutex>& lock, milliseconds timeout) {
    std::vector<std::byte> out;
    begin(out);
    for (std::size_t i = 0; i < ranks_.size(); ++i)
      if (!gone_[i].empty())
        add(out, ranks_[i], detail::speaks::failed, std::as_bytes(std::span(gone_[i])));
      else
        add(out, ranks_[i], detail::speaks::own, slots_[i].bytes);
    exchanging_ = true;
    lock.unlock();
    std::vector<std::vector<std::byte>> all;
    const status s = exchange(out, all, timeout);
    lock.lock();
    exchanging_ = false;
    for (slot& x : slots_) {
      if (x.result != nullptr) {
        *x.result = s;
        if (s) *x.all = all;
      }
      x = {};
    }
    arrived_ = 0;
    ++finished_;
    done_.notify_all();
  }

  static void begin(std::vector<std::byte>& out) {
    const std::uint32_t magic = detail::views_magic;
    detail::put(out, &magic, sizeof magic);
  }
  static void add(std::vector<std::byte>& out, int rank, detail::speaks how,
                  std::span<const std::byte> bytes) {
    detail::entry_head h;
    h.rank = rank;
    h.how = how;
    h.bytes = bytes.size();
    detail::put(out, &h, sizeof h);
    detail::put(out, bytes.data(), bytes.size());
  }

  // The processes' all-gather of `out`, read back as every rank's bytes.
  status exchange(const std::vector<std::byte>& out, std::vector<std::vector<std::byte>>& all,
                  milliseconds timeout) const {
    std::vector<std::vector<std::byte>> got;
    if (status s = processes_->all_gather(out, got, timeout); !s) return s;
    const int N = hosting_.ranks();
    all.assign(static_cast<std::size_t>(N), {});
    std::vector<bool> seen(static_cast<std::size_t>(N), false);
    status failed;
    int failed_rank = N;
    for (std::size_t q = 0; q < got.size(); ++q) {
      const std::vector<std::byte>& b = got[q];
      auto malformed = [&](const std::string& why) {
        return status{errc::mismatch,
                      "rank " + std::to_string(q) + " sent a hosted exchange that " + why +
                          " (do all processes host the same helpers?)",
                      static_cast<int>(q)};
      };
      std::uint32_t magic = 0;
      if (b.size() < sizeof magic) return malformed("is too short");
      std::memcpy(&magic, b.data(), sizeof magic);
      if (magic != detail::views_magic) return malformed("is not one");
      std::size_t at = sizeof magic;
      const std::vector<std::byte>* own = nullptr;
      while (at < b.size()) {
        detail::entry_head h;
        if (b.size() - at < sizeof h) return malformed("ends inside an entry");
        std::memcpy(&h, b.data() + at, sizeof h);
        at += sizeof h;
        if (h.bytes > b.size() - at) return malformed("ends inside an entry's bytes");
        if (h.rank < 0 || h.rank >= N || seen[static_cast<std::size_t>(h.rank)] ||
            hosting_.host_of(h.rank) != static_cast<int>(q))
          return malformed("speaks for rank " + std::to_string(h.rank) + ", not its own");
        const auto r = static_cast<std::size_t>(h.rank);
        seen[r] = true;
        const auto* p = b.data() + at;
        at += h.bytes;
        if (h.how == detail::speaks::own) {
          all[r].assign(p, p + h.bytes);
          if (h.rank == static_cast<int>(q)) own = &all[r];
        } else if (h.how == detail::speaks::as_host && own != nullptr) {
          all[r] = *own;
        } else if (h.how == detail::speaks::failed) {
          if (h.rank < failed_rank) {
            failed_rank = h.rank;
            failed = {errc::peer_error,
                      rank_name(hosting_, h.rank) +
                          " failed: " + std::string(reinterpret_cast<const char*>(p), h.bytes),
                      h.rank};
          }
        } else {
          return malformed("speaks for rank " + std::to_string(h.rank) + " before its host");
        }
      }
    }
    for (int r = 0; r < N; ++r)
      if (!seen[static_cast<std::size_t>(r)])
        return {errc::mismatch,
                "no process spoke for rank " + std::to_string(r) +
                    " in a hosted exchange (do all processes host the same helpers?)",
                hosting_.host_of(r)};
    return failed;
  }

  std::shared_ptr<bootstrap> processes_;
  hosting hosting_;
  std::vector<int> ranks_;
  std::mutex m_;
  std::condition_variable done_;
  bool together_ = false;
  bool exchanging_ = false;
  int arrived_ = 0, gone_count_ = 0;
  std::uint64_t finished_ = 0;     // exchanges made together so far
  milliseconds round_timeout_{0};  // the first arrival's: the round's exchange waits that long
  std::vector<slot> slots_;
  std::vector<std::string> gone_;  // [local rank]: why it left the step (empty: it did not)
  status broken_;                  // a local rank that never came: every later exchange fails
};

// One rank's view: a bootstrap of N ranks (its own rank) over its process's views.
class view final : public bootstrap {
 public:
  view(std::shared_ptr<views> group, int k) : group_(std::move(group)), k_(k) {}
  int rank() const override { return group_->local_ranks()[static_cast<std::size_t>(k_)]; }
  int size() const override { return group_->rule().ranks(); }
  std::string address() const override { return group_->processes().address(); }
  status all_gather(std::span<const std::byte> mine, std::vector<std::vector<std::byte>>& all,
                    milliseconds timeout) override {
    return group_->all_gather(k_, mine, all, timeout);
  }
  status barrier(milliseconds timeout) override {
    std::vector<std::vector<std::byte>> ignored;
    return all_gather({}, ignored, timeout);
  }
  views& group() const { return *group_; }

 private:
  std::shared_ptr<views> group_;
  int k_;
};

inline std::unique_ptr<bootstrap> views::view(int k) {
  return std::make_unique<hosted::view>(shared_from_this(), k);
}

inline status views::all_gather(int k, std::span<const std::byte> mine,
                                std::vector<std::vector<std::byte>>& all, milliseconds timeout) {
  std::unique_lock<std::mutex> lock(m_);
  if (!broken_.ok()) return broken_;
  if (!together_) {
    lock.unlock();
    if (k != 0)
      return {errc::invalid_argument,
              rank_name(hosting_, ranks_[static_cast<std::size_t>(k)]) +
                  " exchanged outside a step its process's ranks take together"};
    return on_hosts_word(mine, all, timeout);
  }
  const auto i = static_cast<std::size_t>(k);
  status result;
  slots_[i].bytes.assign(mine.begin(), mine.end());
  slots_[i].all = &all;
  slots_[i].result = &result;
  if (arrived_++ == 0) round_timeout_ = timeout;
  const std::uint64_t round = finished_;
  if (arrived_ + gone_count_ == local_count()) {
    lead(lock, round_timeout_);
    return result;
  }
  // Wait for the others of this process; once the round's exchange runs, for its end (it has a
  // deadline of its own).
  const auto until = steady::now() + timeout;
  while (finished_ == round) {
    if (exchanging_) {
      done_.wait(lock);
      continue;
    }
    if (done_.wait_until(lock, until) != std::cv_status::timeout || finished_ != round ||
        exchanging_)
      continue;
    int missing = -1;
    std::string who;
    for (std::size_t j = 0; j < slots_.size(); ++j)
      if (slots_[j].result == nullptr && gone_[j].empty()) {
        if (missing < 0) missing = ranks_[j];
        who.append(who.empty() ? "" : ", ").append(std::to_string(ranks_[j]));
      }
    slots_[i] = {};
    --arrived_;
    broken_ = {errc::timeout,
               "rank(s) " + who + ", run by the process of rank " + std::to_string(ranks_[0]) +
                   ", did not join its exchange within " + std::to_string(timeout.count()) + " ms",
               missing};
    return broken_;
  }
  return result;
}

}  // namespace relay::hosted
