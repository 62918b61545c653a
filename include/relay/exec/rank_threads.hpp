// One thread per rank, kept between runs: what the host executor and the nccl executor (each rank
// a thread of one process) both drive their ranks with.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "relay/core/no_copy.hpp"

namespace relay {

class rank_threads : no_copy {
 public:
  ~rank_threads() { stop(); }

  // Thread r calls task(r), for r = 0..ranks-1, all at once; returns when every call has. The
  // threads start on the first run (again when `ranks` changes) and wait between runs.
  void run(int ranks, std::function<void(int)> task) {
    start(ranks);
    std::unique_lock lock(mutex_);
    task_ = std::move(task);
    ++generation_;
    pending_ = ranks;
    wake_.notify_all();
    done_.wait(lock, [&] { return pending_ == 0; });
  }

  // Ends the threads (a later run starts them again).
  void stop() {
    {
      const std::lock_guard lock(mutex_);
      stopping_ = true;
      wake_.notify_all();
    }
    for (std::thread& t : workers_)
      t.join();
    workers_.clear();
  }

 private:
  void start(int ranks) {
    if (static_cast<int>(workers_.size()) == ranks) return;
    stop();
    stopping_ = false;
    const unsigned long current = generation_;  // new threads wait for the next run
    for (int r = 0; r < ranks; ++r)
      workers_.emplace_back([this, r, current] { work(r, current); });
  }

  void work(int rank, unsigned long seen) {
    for (;;) {
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
        if (stopping_) return;
        seen = generation_;
      }
      task_(rank);  // written before generation_ moved, under the lock; read-only until done
      const std::lock_guard lock(mutex_);
      if (--pending_ == 0) done_.notify_one();
    }
  }

  std::vector<std::thread> workers_;
  std::function<void(int)> task_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  unsigned long generation_ = 0;
  int pending_ = 0;
  bool stopping_ = false;
};

}  // namespace relay
