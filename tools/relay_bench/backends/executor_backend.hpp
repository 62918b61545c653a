// A backend over any relay::executor: executors made on demand, one per concurrent job, and the
// memory of the first serving every job (they all address the same ranks' memory).
#pragma once

#include <functional>
#include <thread>

#include "backends/backend.hpp"
#include "relay/exec/executor.hpp"

namespace relay::bench {

template <executor E>
class executor_backend : public backend {
 public:
  using factory = std::function<std::unique_ptr<E>()>;
  executor_backend(factory make, std::unique_ptr<timer> clock)
      : make_(std::move(make)), clock_(std::move(clock)) {
    executors_.push_back(make_());
  }

  void* allocate(int rank, std::size_t bytes) override {
    return executors_.front()->allocate(rank, bytes);
  }
  void deallocate(int rank, void* p) override { executors_.front()->deallocate(rank, p); }
  status write(int rank, void* dst, const void* src, std::size_t bytes) override {
    return executors_.front()->write(rank, dst, src, bytes);
  }
  status read(int rank, void* dst, const void* src, std::size_t bytes) override {
    return executors_.front()->read(rank, dst, src, bytes);
  }
  status run(std::span<const job> jobs) override {
    while (executors_.size() < jobs.size())
      executors_.push_back(make_());
    last_jobs_ = jobs.size();
    if (jobs.size() == 1) return run_one(*executors_.front(), jobs.front());
    std::vector<status> results(jobs.size());
    std::vector<std::thread> threads;
    // (void): nvcc warns of the status& that operator= returns (status is [[nodiscard]]).
    for (std::size_t j = 1; j < jobs.size(); ++j)
      threads.emplace_back([&, j] { (void)(results[j] = run_one(*executors_[j], jobs[j])); });
    (void)(results[0] = run_one(*executors_[0], jobs[0]));
    for (std::thread& t : threads)
      t.join();
    for (status& s : results)
      if (!s) return std::move(s);
    return {};
  }
  timer& clock() override { return *clock_; }
  void release_scratch() override {
    for (auto& e : executors_)
      e->release_scratch();
  }

 protected:
  // The executors of the last run, one per concurrent job (the first also serves memory).
  std::span<const std::unique_ptr<E>> last_executors() const {
    return std::span<const std::unique_ptr<E>>(executors_).first(last_jobs_);
  }

 private:
  static status run_one(E& e, const job& j) { return e.run(*j.p, j.inputs, j.outputs); }

  factory make_;
  std::unique_ptr<timer> clock_;
  std::vector<std::unique_ptr<E>> executors_;
  std::size_t last_jobs_ = 0;
};

}  // namespace relay::bench
