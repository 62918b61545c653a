// A bootstrap served by the caller: a framework with its own store (torch.distributed's, a job
// scheduler's key-value store, an NCCL communicator) passes two functions and relay uses them.
#pragma once

#include <functional>
#include <string>
#include <utility>

#include "relay/bootstrap/bootstrap.hpp"

namespace relay {

class callback_bootstrap final : public bootstrap {
 public:
  using all_gather_fn =
      std::function<status(std::span<const std::byte> mine,
                           std::vector<std::vector<std::byte>>& all, milliseconds timeout)>;
  using barrier_fn = std::function<status(milliseconds timeout)>;

  // `barrier` may be empty: an all-gather of no bytes serves then.
  callback_bootstrap(int rank, int size, all_gather_fn all_gather, barrier_fn barrier = {})
      : rank_(rank),
        size_(size),
        all_gather_(std::move(all_gather)),
        barrier_(std::move(barrier)) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  status all_gather(std::span<const std::byte> mine, std::vector<std::vector<std::byte>>& all,
                    milliseconds timeout) override {
    if (!all_gather_) return {errc::invalid_argument, "the callback bootstrap has no all_gather"};
    status s = all_gather_(mine, all, timeout);
    if (s && all.size() != static_cast<std::size_t>(size_))
      return {errc::invalid_argument, "the all_gather callback returned " +
                                          std::to_string(all.size()) + " contributions for " +
                                          std::to_string(size_) + " ranks"};
    return s;
  }

  status barrier(milliseconds timeout) override {
    if (barrier_) return barrier_(timeout);
    std::vector<std::vector<std::byte>> ignored;
    return all_gather({}, ignored, timeout);
  }

 private:
  int rank_, size_;
  all_gather_fn all_gather_;
  barrier_fn barrier_;
};

}  // namespace relay
