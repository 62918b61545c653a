// One row of the sweep: a size of one configuration, relay and its baseline, out of place and in
// place. Buffers are laid out per rank in sets that the timed runs rotate through, so a rerun
// does not find its data in a cache the next real call would not have warmed.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "backends/backend.hpp"
#include "baseline/vendor.hpp"
#include "report/report.hpp"
#include "report/results.hpp"
#include "sweep/options.hpp"

namespace relay::bench {

class row_runner {
 public:
  // `vendor` may be null when no row uses base_source::nccl.
  row_runner(backend& b, const options& o, nccl_baseline* vendor)
      : backend_(b), options_(o), vendor_(vendor) {}

  // Fills `r` (whose shape, n, chosen route and base are set) with measurements.
  status measure(row& r);

  // The host memory measure(r) holds at its peak on the CPU executor, in bytes: the larger
  // form's buffer sets and host staging copy, plus every rank's scratch for the route's plans
  // and the direct baseline's (each executor keeps the larger per rank). Scratch of earlier rows
  // of the configuration is never more (sizes grow; main releases it between configurations).
  // A bound: tests/tools/relay_plan/run_memory.py checks it against the measured peak.
  std::int64_t host_memory(const row& r) const;

 private:
  backend& backend_;
  const options& options_;
  nccl_baseline* vendor_;
};

// A row for one size of configuration `s`: its counts, route and prediction, nothing measured.
row sized_row(const call_shape& s, const options& o, std::int64_t size);

// What a job of one process per rank (-x shm, -x nccl) brings to run_rank_rows.
struct rank_job {
  bool lead = false;     // this process prints the tables (rank 0)
  std::string who;       // how an error names this process ("rank 3: " or "")
  std::string baseline;  // the tables' baseline where the vendor's collective does not run
  std::string vendor;    // ... and where it runs
  std::function<bool(const call_shape&)> with_vendor;  // empty: the vendor's never runs
  // The baseline is relay's direct route (native wire), where no vendor's collective runs
  // (--emulate-mesh: the vendor's transfers are not paced); `baseline` names it.
  bool direct_baseline = false;
  // Measures one form of `r`: relay's, or with `vendor` the baseline's (the vendor's collective,
  // or with direct_baseline relay's direct route).
  std::function<status(const row& r, bool in_place, bool vendor, form_result& f)> measure;
};

// What a job of one process per rank refuses, said on stderr as `executor` ("-x shm"): a parallel
// shape where its ranks run fused and single only (!parallel), and a job whose size is not -N
// (job_size < 0: not known yet). exit_usage, or 0.
int refuse_rank_job(std::string_view executor, const options& o,
                    const std::vector<call_shape>& shapes, int job_size, bool parallel = false);

// Every shape at every size, out of place and in place where the collective has one, relay and
// the vendor's collective where it runs; the lead prints the tables, the wrong forms and the
// total. Returns the exit status: 0, exit_wrong, or exit_failed at the first form that fails.
int run_rank_rows(const options& o, const std::vector<call_shape>& shapes,
                  const std::vector<std::int64_t>& sizes, const run_info& info,
                  const rank_job& job);

// Where each active rank's input and output sit in one set of its buffers, in bytes. In place,
// input and output share one buffer, placed as NCCL places them. Regions are 256-byte aligned.
struct rank_layout {
  int rank = 0, group = 0, index = 0;  // index: the rank's active index in its group
  std::uint64_t in_bytes = 0, out_bytes = 0, in_at = 0, out_at = 0, region = 0;
};
std::vector<rank_layout> buffer_layout(const call_shape& s,
                                       const std::vector<std::vector<int>>& groups, std::int64_t n,
                                       int es, bool in_place);

// The median of the timed iterations.
double median(std::vector<double> v);

// The buffer sets that rotation uses for `per_set` bytes of every rank's buffers together: as
// many as span `rotate_bytes`, at least 1, at most one per timed iteration and
// max_rotation_sets (an executor that prepares each (plan, buffers) pair once keeps them all).
inline constexpr int max_rotation_sets = 32;
int rotation_sets(std::int64_t per_set, std::int64_t rotate_bytes, int iterations);
// Untimed runs before the timed ones: `warmup`, and at least one per buffer set.
int warmup_runs(int warmup, int sets);

}  // namespace relay::bench
