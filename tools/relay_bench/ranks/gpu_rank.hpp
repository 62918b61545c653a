// relay-bench's GPU transports under a launcher (relay-run, torchrun): this process is one rank,
// and its calls go through a rank-local communicator over a GPU transport, on a stream of its
// own:
//   -x nccl  the nccl transport; NCCL's own collectives on the same NCCL communicator as the
//            baseline (nccl_rank.cpp);
//   -x ipc   the ipc transport, eager or replaying a captured graph (ipc_rank.cpp).
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
};

class gpu_rank {
 public:
  virtual ~gpu_rank() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::chrono::milliseconds timeout() const = 0;
  virtual bootstrap& boot() = 0;
  // "NCCL 2.28.3, rank 0 on device 0 (NVIDIA H200)".
  virtual std::string description() const = 0;
  // One grow-only area of device memory (nullptr when none is left), and host <-> it.
  virtual void* device_memory(std::size_t bytes) = 0;
  virtual status upload(void* dst, const void* host_src, std::size_t bytes) = 0;
  virtual status download(void* host_dst, const void* src, std::size_t bytes) = 0;
  // Whether the vendor's own collective can run the call (one group covering every rank).
  virtual bool vendor_supports(const rank_collective& c) const = 0;
  // Issues the call `iterations` times on this rank's stream (the vendor's collective when
  // `vendor`), each between device events, and waits; `seconds` (if given) gets each one's time.
  virtual status run(const rank_collective& c, bool vendor, int iterations,
                     std::vector<double>* seconds) = 0;
};

// This process's rank, from the environment (relay-run's or torchrun's variables); nullptr and
// `why` where it cannot start (no launcher, no GPU, the transport refused).
std::unique_ptr<gpu_rank> make_nccl_rank(std::string& why);
// bytes_per_rank: the ipc transport's registered data area. graph_calls > 0: timed runs replay
// a captured graph of that many calls. floor other than none: the vendor's collective is the
// floor (bench/tools/floor/floor_allreduce.hpp), replayed from graphs like relay's, its entry
// meeting each group's ranks or every rank. split: relay's calls run on a communicator of the
// rank's group, split from the job's (--split).
enum class floor_entry : unsigned char { none, group, job };
std::unique_ptr<gpu_rank> make_ipc_rank(std::size_t bytes_per_rank, int graph_calls,
                                        floor_entry floor, bool split, std::string& why);

}  // namespace relay::bench
