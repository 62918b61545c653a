// relay-bench's GPU transports under a launcher (relay-run -n G -- relay-bench -x nccl|ipc ...):
// the sweep as one rank of a multi-process job (rank_bench.cpp over gpu_rank.hpp).
#pragma once

#include <vector>

#include "sweep/options.hpp"
#include "sweep/predict.hpp"

namespace relay::bench {

// The whole run over o.executor's transport (nccl or ipc); returns relay-bench's exit status
// (the same on every rank).
int run_rank_bench(const options& o, const std::vector<call_shape>& shapes);

// Whether a launcher started this process as one rank of a job (RELAY_RANK or RANK is set).
bool launched_as_rank();

}  // namespace relay::bench
