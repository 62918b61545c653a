// relay-bench's GPU transports under a launcher (relay-run, torchrun): this process is one rank,
// and its calls go through a rank-local communicator over a GPU transport, on a stream of its
// own:
//   -x nccl  the nccl transport; NCCL's own collectives on the same NCCL communicator as the
//            baseline (nccl.cpp);
//   -x ipc   the ipc transport, eager or replaying a captured graph (ipc.cpp), the floor's or
//            NCCL's collective beside it.
// This header knows nothing of CUDA or NCCL: the GPU files implement it (stream_rank.hpp holds
// what they share), rank_bench.cpp drives the sweep with it.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "relay/api/collectives.hpp"
#include "relay/bootstrap/bootstrap.hpp"

namespace relay::bench {

// One call of this rank, relay's or the vendor's.
struct rank_collective {
  collective coll = collective::allreduce;
  group_list groups;
  std::vector<std::int64_t> counts;
  dtype type = dtype::bfloat16;
  reduce_op op = reduce_op::sum;
  relay::options opt{};
  buffer_view send{}, recv{};
  // Parallel mode: each group's single-group plan on a communicator of its own, all at once
  // (-x ipc); otherwise one call over every group.
  bool parallel = false;
};

class gpu_rank {
 public:
  virtual ~gpu_rank() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::chrono::milliseconds timeout() const = 0;
  // The bench's own exchanges (barriers, timings, checks): one rank per process, also where a
  // process hosts helpers (relay::processes_of).
  virtual bootstrap& boot() = 0;
  // This process's own rank's device (as this process numbers them), and the devices of the
  // ranks it and the job's other processes host (docs/hosted-helpers.md), in rank order after
  // the processes' own ranks; none without hosted helpers.
  virtual int device() const = 0;
  virtual std::vector<int> hosted_devices() const = 0;
  // "NCCL 2.28.3, rank 0 on device 0 (NVIDIA H200)".
  virtual std::string description() const = 0;
  // One grow-only area of device memory (nullptr when none is left), and host <-> it.
  virtual void* device_memory(std::size_t bytes) = 0;
  virtual status upload(void* dst, const void* host_src, std::size_t bytes) = 0;
  virtual status download(void* host_dst, const void* src, std::size_t bytes) = 0;
  // The vendor's collective beside relay's calls: whether it runs (on the shapes rank_bench.cpp
  // gives it), and the tables' words for it: what it is, or "none (why)"; the largest call it
  // runs (a rank's input bytes; 0: any), larger ones n/a.
  struct vendor_info {
    bool runs = false;
    std::string description;
    std::int64_t max_bytes = 0;
  };
  virtual vendor_info vendor() const = 0;
  // How timed calls are bracketed by device events: one pair around all the iterations, each
  // call's time their interval over the iterations (as nccl-tests times), or a pair around each
  // call (--per-call-events), which adds an event's cost to every call and shows each one's time.
  enum class call_timing : unsigned char { loop, per_call };
  // Issues the call `iterations` times on this rank's stream (the vendor's collective when
  // `vendor`) and waits; `seconds` (if given) gets each call's time, as `timing` measures it
  // (call_timing::loop: the same, the mean, for every call).
  virtual status run(const rank_collective& c, bool vendor, int iterations,
                     std::vector<double>* seconds, call_timing timing = call_timing::loop) = 0;
};

// This process's rank, from the environment (relay-run's or torchrun's variables); nullptr and
// `why` where it cannot start (no launcher, no GPU, the transport refused).
std::unique_ptr<gpu_rank> make_nccl_rank(std::string& why);

// The vendor's collective beside relay's ipc ranks (--baseline), replayed from graphs like
// relay's calls:
//   floor, floor_ll, floor_barrier, floor_job
//                     the floor (bench/tools/floor/floor_allreduce.hpp): its algorithm chosen
//                     by size, ll, barrier, or barrier whose entry meets every rank;
//   nccl              NCCL's (RCCL's) own collective, each group on an NCCL communicator of its
//                     own, split from the job's; it needs a device per rank (NCCL puts one rank
//                     on a device), and where a rank shares one, or the library is missing,
//                     every rank fails to start, saying why;
//   automatic         nccl where it can run, else none, the header saying why.
enum class ipc_vendor : unsigned char {
  none,
  floor,
  floor_ll,
  floor_barrier,
  floor_job,
  nccl,
  automatic
};
// bytes_per_rank: the ipc transport's registered data area. graph_calls > 0: timed runs replay
// a captured graph of that many calls. split: relay's calls run on a communicator of the rank's
// group, split from the job's (--split).
std::unique_ptr<gpu_rank> make_ipc_rank(std::size_t bytes_per_rank, int graph_calls,
                                        ipc_vendor vendor, bool split, std::string& why);

}  // namespace relay::bench
