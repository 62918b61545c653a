// The vendor baseline: the same collective through NCCL (NVIDIA) or RCCL (AMD) in the same run,
// over the same groups, with the same data, check and timing rules as relay's rows.
//
// This header knows nothing of CUDA or NCCL: nccl_baseline.cpp (built where NCCL is found) and
// nccl_absent.cpp (elsewhere) implement it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "relay/core/dtype.hpp"
#include "relay/core/status.hpp"
#include "report/results.hpp"

namespace relay::bench {

class nccl_baseline {
 public:
  virtual ~nccl_baseline() = default;
  // "NCCL 2.28.9" (the library loaded at run time).
  virtual std::string description() const = 0;
  // Whether every group can run as one communicator (one rank per device: NCCL cannot put two
  // ranks of a communicator on one device); `why` says why not.
  virtual bool supports(const std::vector<std::vector<int>>& groups, std::string& why) const = 0;
  // All groups at once (one communicator each, one NCCL group call), count n per group.
  virtual status measure(collective c, dtype type, reduce_op op,
                         const std::vector<std::vector<int>>& groups, std::int64_t n, bool in_place,
                         const measure_settings& settings, form_result& out) = 0;
};

// nullptr, with `why`, where this build has no NCCL or no device is visible. `devices`: rank ->
// device (empty: round-robin over the visible devices).
std::unique_ptr<nccl_baseline> make_nccl_baseline(int ranks, const std::vector<int>& devices,
                                                  std::string& why);

}  // namespace relay::bench
