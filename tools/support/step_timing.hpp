// The executor's step latency as the cost model wants it, measured on the devices: rings of 1 and
// 65 steps (ring_plan.hpp) over the given ranks, 256-byte copies, timed by the devices; the
// difference over 64 steps is one step. With 3 or more ranks, the same with every rank pushing
// to all others gives the cost of one more operation in a step. gpu_calibrate measures a
// machine's executor this way, gpu_mesh_check the mesh emulator's (the same rings, paced).
// GPU code: include only from files compiled by nvcc or hipcc.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "relay/exec/gpu/executor.hpp"
#include "support/median.hpp"
#include "support/ring_plan.hpp"

namespace relay::examples {

struct step_timing {
  double step = 0, op = 0, call = 0;  // seconds: per step, per extra operation, one 1-step run
};

[[noreturn]] inline void step_timing_failed(const std::string& what) {
  std::fprintf(stderr, "step timing: %s\n", what.c_str());
  std::exit(1);
}

// Device-timed seconds of one run of `p`: the median of 101, after 10 to warm up (medians of 31
// moved between calls: bench/results/2026-11-29-h200-x2-calibration/README.md).
inline double run_seconds(gpu_executor& ex, const plan& p, const std::vector<buffer_view>& in,
                          const std::vector<buffer_view>& out) {
  std::vector<double> t;
  for (int i = 0; i < 111; ++i) {
    if (status st = ex.run(p, in, out); !st) step_timing_failed("executor run: " + st.to_string());
    if (i >= 10) t.push_back(ex.last_run_seconds());
  }
  return median(t);
}

// Rank r on devices[r]; `go` the executor's options (time_runs is turned on).
inline step_timing time_steps(const std::vector<int>& devices, gpu_options go = {}) {
  const int n = static_cast<int>(devices.size());
  go.time_runs = true;
  gpu_executor ex(devices, go);
  if (!ex.init_status()) step_timing_failed("executor: " + ex.init_status().to_string());
  const int fanout = n - 1;
  const std::size_t in_bytes = 256, out_bytes = 2 * 256 * static_cast<std::size_t>(fanout);
  std::vector<buffer_view> in, out;
  for (int r = 0; r < n; ++r) {
    in.push_back({ex.allocate(r, in_bytes), in_bytes});
    out.push_back({ex.allocate(r, out_bytes), out_bytes});
    if (in.back().data == nullptr || out.back().data == nullptr)
      step_timing_failed("executor allocation");
    const std::vector<float> ones(out_bytes / 4, 1.0f);
    if (!ex.write(r, in.back().data, ones.data(), in_bytes) ||
        !ex.write(r, out.back().data, ones.data(), out_bytes))
      step_timing_failed("executor write");
  }
  step_timing t;
  const double one = run_seconds(ex, ring_plan(n, 1, false), in, out);
  const double many = run_seconds(ex, ring_plan(n, 65, false), in, out);
  t.call = one;
  t.step = std::max(0.0, (many - one) / 64);
  if (n >= 3) {
    const double one_all = run_seconds(ex, ring_plan(n, 1, false, fanout), in, out);
    const double many_all = run_seconds(ex, ring_plan(n, 65, false, fanout), in, out);
    t.op = std::max(0.0, ((many_all - one_all) / 64 - t.step) / (fanout - 1));
  }
  for (int r = 0; r < n; ++r) {
    ex.deallocate(r, in[static_cast<std::size_t>(r)].data);
    ex.deallocate(r, out[static_cast<std::size_t>(r)].data);
  }
  return t;
}

}  // namespace relay::examples
