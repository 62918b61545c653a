// The threads that run a step of a process's hosted ranks beside the caller's own part
// (hosted/transport.hpp): one thread per hosted rank, started once, each running that rank's part
// of every step handed to the crew, while the caller runs its own. A step on the CPU blocks until
// every rank of the job takes part (the shm transport's waits), so each rank a process runs needs
// a thread of its own; a step hands over a pointer and allocates nothing.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "relay/core/no_copy.hpp"

namespace relay::hosted {

class crew : no_copy {
 public:
  // `workers` threads (one per hosted rank), idle until run().
  explicit crew(int workers) : count_(workers) {
    threads_.reserve(static_cast<std::size_t>(workers));
    for (int k = 1; k <= workers; ++k)
      threads_.emplace_back([this, k] { loop(k); });
  }
  ~crew() {
    {
      const std::lock_guard<std::mutex> hold(m_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_)
      t.join();
  }

  int workers() const { return count_; }

  // Runs each(k) for k = 0..workers(): k = 0 on the calling thread, k >= 1 on worker k; returns
  // once every one has returned. One run at a time (the caller's thread).
  template <class Each>
  void run(Each& each) {
    if (count_ == 0) {
      each(0);
      return;
    }
    {
      const std::lock_guard<std::mutex> hold(m_);
      job_ = [](void* e, int k) { (*static_cast<Each*>(e))(k); };
      arg_ = &each;
      finished_ = 0;
      ++generation_;
    }
    wake_.notify_all();
    each(0);
    std::unique_lock<std::mutex> lock(m_);
    done_.wait(lock, [&] { return finished_ == workers(); });
  }

 private:
  void loop(int k) {
    std::uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(m_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      void (*job)(void*, int) = job_;
      void* arg = arg_;
      lock.unlock();
      job(arg, k);
      lock.lock();
      if (++finished_ == workers()) done_.notify_one();
    }
  }

  const int count_;
  std::mutex m_;
  std::condition_variable wake_, done_;
  std::uint64_t generation_ = 0;
  int finished_ = 0;
  bool stop_ = false;
  void (*job_)(void*, int) = nullptr;
  void* arg_ = nullptr;
  std::vector<std::thread> threads_;  // last: started once the fields above exist
};

}  // namespace relay::hosted
