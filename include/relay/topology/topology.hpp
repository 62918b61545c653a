// Topologies the cost model prices schedules on.
//
//   mesh      N GPUs, one full-duplex link per pair, `link_bandwidth` each way (AMD MI300X/MI350X).
//   switched  every GPU has one port of `link_bandwidth` each way into a non-blocking switch
//             (NVSwitch): pairs are not the limit, a GPU's total egress and ingress are.
//   matrix    an arbitrary count of links per pair, each of `link_bandwidth` (MI250X: 1 or 4);
//             a pair with no link cannot carry traffic.
//
// Latency terms: `step_latency` per serialized step (a group boundary: launch plus cross-GPU
// synchronization) and `op_latency` per operation a rank issues within a step.
//
// Device memory: every copy reads its source and writes its destination, every reduction reads
// its operands and writes its result, on the memory of the device its rank runs on, at
// `memory_bandwidth` bytes (read + written) per second. `device` says which ranks share a device
// (one per rank by default; 8 ranks emulating a mesh on one GPU share one), so their traffic adds
// up on one memory (cost/link_cost.hpp, alpha_beta_seconds). `divided_devices` says the runtime
// gives each rank of a shared device an equal share of it (the ipc transport's grids: a rank's
// kernels run on its share of the multiprocessors, transport/ipc/grids.hpp), so that a rank's
// own traffic also runs at most at memory_bandwidth / (ranks on its device), busy or not.
//
// The fp8 wire (core/wire.hpp, cost/wire.hpp) adds local passes: a rank quantizes what it sends
// and dequantizes what it receives, each pass reading and writing its memory at
// `memory_bandwidth` and costing `pass_latency` per step; `fp8` is the encoding the machine's
// GPUs convert in hardware (what wire_format::fp8 means on it).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "relay/core/fp8.hpp"
#include "relay/schedule/schedule.hpp"

namespace relay {

enum class fabric : unsigned char { mesh, switched, matrix };

// Rank r on device r: one rank per device.
constexpr std::array<std::uint8_t, max_ranks> one_rank_per_device() {
  std::array<std::uint8_t, max_ranks> d{};
  for (std::size_t r = 0; r < d.size(); ++r)
    d[r] = static_cast<std::uint8_t>(r);
  return d;
}

struct topology {
  const char* name = "";
  fabric kind = fabric::mesh;
  int ranks = 8;
  double link_bandwidth = 48e9;      // bytes/s per direction: per link (mesh, matrix) or per port
  double step_latency = 10e-6;       // seconds per serialized step
  double op_latency = 0.0;           // seconds per operation issued by one rank within one step
  double memory_bandwidth = 4.3e12;  // bytes/s read + written of one GPU's memory
  double pass_latency = 3e-6;        // seconds per fp8 pass (quantize, dequantize) per step
  // Seconds a call costs once, whatever its schedule: what a runtime spends around the steps
  // (launches, the agreement, the entry and exit). The same for every route, dtype and wire, so
  // it chooses nothing; it makes a prediction an absolute time (relay-bench's m/p and speedups).
  double call_latency = 0.0;
  fp8_format fp8 = fp8_format::e4m3;                                   // the GPUs' fp8 encoding
  std::array<std::array<std::uint8_t, max_ranks>, max_ranks> links{};  // matrix only
  std::array<std::uint8_t, max_ranks> device = one_rank_per_device();  // rank -> its device
  // Each rank of a shared device runs on an equal share of it (above); false: a rank alone may
  // use its whole device (a rank per device; the GPU executor, whose kernels span the device).
  bool divided_devices = false;

  // The ranks among which rank r's device is divided: those on it where `divided_devices`, else
  // 1 (the rank may use all of it). `ranks` of the communicator count.
  constexpr int device_share(int r) const {
    if (!divided_devices) return 1;
    int share = 0;
    for (int q = 0; q < ranks && q < static_cast<int>(device.size()); ++q)
      share += device[static_cast<std::size_t>(q)] == device[static_cast<std::size_t>(r)] ? 1 : 0;
    return share > 0 ? share : 1;
  }

  // Links from a to b (per direction); 1 on a mesh, unlimited (0 = not a per-pair limit) on a
  // switch.
  constexpr int link_count(int a, int b) const {
    if (kind == fabric::matrix)
      return links[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)];
    return kind == fabric::mesh ? 1 : 0;
  }
};

constexpr topology mesh(int ranks, double link_bandwidth, double step_latency = 10e-6,
                        double op_latency = 0.0, const char* name = "mesh") {
  topology t{};
  t.name = name;
  t.kind = fabric::mesh;
  t.ranks = ranks;
  t.link_bandwidth = link_bandwidth;
  t.step_latency = step_latency;
  t.op_latency = op_latency;
  return t;
}

// `t` with its memory bandwidth, fp8 pass latency and fp8 encoding (the fp8 wire's local terms).
constexpr topology with_fp8_passes(topology t, double memory_bandwidth, double pass_latency,
                                   fp8_format fp8) {
  t.memory_bandwidth = memory_bandwidth;
  t.pass_latency = pass_latency;
  t.fp8 = fp8;
  return t;
}

// `t` priced as the spec prices it, by its links alone: a memory so fast that local copies and
// reductions take no time (the beta cost's own assumption; alpha_beta_seconds adds memory time).
constexpr topology links_only(topology t) {
  t.memory_bandwidth = 1e18;
  return t;
}

constexpr topology switched(int ranks, double port_bandwidth, double step_latency = 10e-6,
                            double op_latency = 0.0, const char* name = "switched") {
  topology t = mesh(ranks, port_bandwidth, step_latency, op_latency, name);
  t.kind = fabric::switched;
  return t;
}

// `counts[a][b]`: links between a and b (made symmetric: the larger of the two entries).
template <std::size_t R>
constexpr topology link_matrix(const std::array<std::array<int, R>, R>& counts,
                               double link_bandwidth, double step_latency = 10e-6,
                               double op_latency = 0.0, const char* name = "matrix") {
  topology t = mesh(static_cast<int>(R), link_bandwidth, step_latency, op_latency, name);
  t.kind = fabric::matrix;
  for (std::size_t a = 0; a < R; ++a)
    for (std::size_t b = 0; b < R; ++b) {
      const int c = counts[a][b] > counts[b][a] ? counts[a][b] : counts[b][a];
      t.links[a][b] = static_cast<std::uint8_t>(a == b ? 0 : c);
    }
  return t;
}

// AMD Instinct MI300X: 8 GPUs, one xGMI link per pair, ~48 GB/s usable per direction (64 rated).
// The step latency is a launch plus a cross-GPU synchronization, of the order the spec's
// crossovers imply. The fp8 terms (HBM3 at 5.3 TB/s peak, ~4.3 sustained; 3 us a pass) put the
// fp8 wire's threshold for 2 active bf16 ranks at about 9 MB, where the issue measured it.
inline constexpr topology mi300x =
    with_fp8_passes(mesh(8, 48e9, 10e-6, 0.0, "mi300x"), 4.3e12, 3e-6, fp8_format::e4m3_fnuz);
// AMD Instinct MI350X: 8 GPUs, one link per pair, ~56 GB/s measured per direction (spec); HBM3E
// at 8 TB/s peak; OCP e4m3 (gfx950).
inline constexpr topology mi350x =
    with_fp8_passes(mesh(8, 56e9, 10e-6, 0.0, "mi350x"), 6.5e12, 3e-6, fp8_format::e4m3);
// NVIDIA H200 HGX: 8 GPUs on NVSwitch, 450 GB/s per direction per GPU (18 NVLink4 links); HBM3E
// at 4.8 TB/s peak.
inline constexpr topology h200_nvswitch = with_fp8_passes(
    switched(8, 450e9, 10e-6, 0.0, "h200-nvswitch"), 4.0e12, 3e-6, fp8_format::e4m3);
// An MI250X-shaped node: 8 GCDs, 4 links between the two GCDs of a package, 1 or 2 between some
// GCDs of different packages and none between others. An example of an uneven link matrix, not
// a calibrated machine.
inline constexpr topology mi250x = link_matrix<8>({{{0, 4, 1, 1, 0, 0, 2, 0},
                                                    {4, 0, 1, 1, 0, 0, 0, 2},
                                                    {1, 1, 0, 4, 2, 0, 0, 0},
                                                    {1, 1, 4, 0, 0, 2, 0, 0},
                                                    {0, 0, 2, 0, 0, 4, 1, 1},
                                                    {0, 0, 0, 2, 4, 0, 1, 1},
                                                    {2, 0, 0, 0, 1, 1, 0, 4},
                                                    {0, 2, 0, 0, 1, 1, 4, 0}}},
                                                  50e9, 10e-6, 0.0, "mi250x");

// The named presets, for command-line tools.
inline constexpr std::array<const topology*, 4> topology_presets{&mi300x, &mi350x, &h200_nvswitch,
                                                                 &mi250x};

// A preset by name, resized to `ranks` where it is a mesh or a switch (same link, same latency).
constexpr std::optional<topology> preset_topology(std::string_view name, int ranks) {
  for (const topology* t : topology_presets) {
    if (name != t->name) continue;
    if (t->kind != fabric::matrix) {
      topology r = *t;
      r.ranks = ranks;
      return r;
    }
    if (t->ranks == ranks) return *t;
  }
  return std::nullopt;
}

}  // namespace relay
