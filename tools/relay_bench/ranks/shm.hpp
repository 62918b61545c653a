// relay-bench -x shm: the sweep as one rank of a multi-process job (started by relay-run, one
// process per rank), every call through a rank-local communicator over the shm transport.
// Every rank checks its own output element by element; rank 0 prints the table, with #wrong
// summed over the ranks; every rank exits 1 when any element anywhere was wrong.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sweep/options.hpp"
#include "sweep/predict.hpp"

namespace relay::bench {

// The whole run; returns relay-bench's exit status (the same on every rank).
int run_shm_bench(const options& o, const std::vector<call_shape>& shapes);

// The staging area per rank (the shm transport's segment, the ipc transport's registered memory)
// that the largest call of the sweep needs, `largest` bytes, over both routes (1 MiB at least).
std::size_t staging_bytes(const options& o, const std::vector<call_shape>& shapes,
                          std::int64_t largest);

}  // namespace relay::bench
