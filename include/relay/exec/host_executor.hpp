// The reference executor: every rank is a thread over host memory. It runs anywhere, and every
// other executor is checked against it.
//
// Step semantics (shared with the GPU executor): the phases of a plan run in order, with a
// barrier between them; within a phase each rank runs the operations it issues (a copy by its
// source rank, a reduction by its own rank), concurrently with the other ranks.
#pragma once

#include <barrier>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include "relay/core/no_copy.hpp"
#include "relay/exec/executor.hpp"
#include "relay/exec/rank_threads.hpp"
#include "relay/plan/bind.hpp"
#include "relay/plan/host_ops.hpp"
#include "relay/plan/validate.hpp"

namespace relay {

class host_executor : no_copy {
 public:
  status run(const plan& p, std::span<const buffer_view> inputs,
             std::span<const buffer_view> outputs) {
    if (status s = validate_plan(p, inputs, outputs); !s) return s;
    const auto R = static_cast<std::size_t>(p.ranks());
    if (scratch_.size() < R) scratch_.resize(R);
    for (std::size_t r = 0; r < R; ++r)
      if (scratch_[r].size() < p.scratch_bytes[r]) {
        scratch_[r] = buffer_holder(p.scratch_bytes[r]);
        if (scratch_[r].data() == nullptr)
          return {errc::out_of_memory, "no host memory for " + std::to_string(p.scratch_bytes[r]) +
                                           " bytes of scratch on rank " + std::to_string(r)};
      }
    job_ = {&p, inputs, outputs};
    if (barrier_ranks_ != R) {
      barrier_ = std::make_unique<std::barrier<>>(static_cast<std::ptrdiff_t>(R));
      barrier_ranks_ = R;
    }
    threads_.run(static_cast<int>(R), [this](int rank) { run_rank(rank); });
    return {};
  }

  void* allocate(int /*rank*/, std::size_t bytes) {
    return ::operator new (bytes == 0 ? 1 : bytes, std::align_val_t{64}, std::nothrow);
  }
  void deallocate(int /*rank*/, void* p) { ::operator delete (p, std::align_val_t{64}); }
  status write(int /*rank*/, void* dst, const void* src, std::size_t bytes) {
    if (bytes > 0) std::memcpy(dst, src, bytes);
    return {};
  }
  status read(int /*rank*/, void* dst, const void* src, std::size_t bytes) {
    if (bytes > 0) std::memcpy(dst, src, bytes);
    return {};
  }
  void release_scratch() { scratch_.clear(); }

 private:
  class buffer_holder {
   public:
    buffer_holder() = default;
    explicit buffer_holder(std::size_t bytes)
        : data_(static_cast<std::byte*>(
              ::operator new (bytes == 0 ? 1 : bytes, std::align_val_t{256}, std::nothrow))),
          size_(data_ ? bytes : 0) {}
    std::byte* data() const { return data_.get(); }
    std::size_t size() const { return size_; }

   private:
    struct free_aligned {
      void operator()(std::byte* p) const { ::operator delete (p, std::align_val_t{256}); }
    };
    std::unique_ptr<std::byte, free_aligned> data_;
    std::size_t size_ = 0;
  };

  struct job {
    const plan* p = nullptr;
    std::span<const buffer_view> inputs, outputs;
  };

  std::byte* address(const plan_operand& o) const {
    const std::size_t r = o.rank;
    return address_of(o, rank_areas<std::byte>{static_cast<std::byte*>(job_.inputs[r].data),
                                               static_cast<std::byte*>(job_.outputs[r].data),
                                               scratch_[r].data()});
  }

  // One rank's share of the plan: its operations of every phase, a barrier after each.
  void run_rank(int rank) {
    const plan& p = *job_.p;
    for (const plan_phase& ph : p.phases) {
      for (const plan_op& op : p.ops_of(ph))
        if (op.issuer(p.sources) == rank)
          detail::host_run_op(p, op, [&](const plan_operand& o) { return address(o); });
      barrier_->arrive_and_wait();
    }
  }

  std::vector<buffer_holder> scratch_;
  job job_{};
  std::unique_ptr<std::barrier<>> barrier_;  // between the phases, for barrier_ranks_ ranks
  std::size_t barrier_ranks_ = 0;
  rank_threads threads_;  // last: its destructor ends the threads before the rest goes
};

static_assert(executor<host_executor>);

}  // namespace relay
