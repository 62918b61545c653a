// The ipc transport's options (ipc/transport.hpp) and the environment variables that set them,
// host-only so that the parsing is unit-tested without a device.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "relay/bootstrap/environment.hpp"
#include "relay/core/status.hpp"
#include "relay/cost/form.hpp"

namespace relay::ipc {

struct options {
  // Bytes of data area per rank: a call needs its input, output and scratch there (a larger
  // call fails on every rank with errc::out_of_memory naming the size). RELAY_IPC_BYTES
  // overrides it.
  std::size_t bytes_per_rank = std::size_t{64} << 20;
  // Which form runs a call (RELAY_IPC_FORM: auto, one_shot, stepped, pull, ll), and the model's
  // constants (RELAY_IPC_LAUNCH_US, RELAY_IPC_SIGNAL_US, RELAY_IPC_TILE_US, in microseconds).
  call_form form = call_form::automatic;
  form_costs costs{};
  // A cap on top of the model: the one-shot form only where no stage of the plan has more tiles
  // (16 KiB of work each) than this; 0: never (RELAY_IPC_ONE_SHOT_TILES).
  int one_shot_tiles = 4096;
  // The ranks that drive this device at least, the communicator's own included: its kernels'
  // grids divide the device among the larger of this and the communicator's ranks there, so
  // that communicators sharing a device cannot starve each other's spinning kernels. A split
  // communicator's is its parent's (ipc_factory takes environment::device_share);
  // RELAY_IPC_DEVICE_SHARE sets it for separate jobs that share a device.
  int device_share = 1;
  // Mesh emulation (docs/mesh-emulation.md, "The ipc transport"): every push from one rank into
  // another's memory paced by its link's clock, so that each ordered pair of ranks moves at most
  // this many bytes per second; 0: off. RELAY_IPC_EMULATE_MESH sets it in GB/s (10^9 bytes per
  // second, to the MB/s: the kernels count the rate in MB/s). Every rank must set it alike
  // (creation refuses ranks that differ); it excludes the pull and ll forms (the pull's reads of
  // peers' memory and ll's words are not paced) and the fp8 wire (check_options, build_program).
  std::uint64_t emulate_mesh = 0;
  // Mesh emulation's walkers, for diagnosis (docs/mesh-emulation.md, "The ipc transport"): the
  // blocks that walk each push, 0: the rate's (ipc::paced_walkers) (RELAY_IPC_PACED_BLOCKS, 0 to
  // 16); and the KiB a walker keeps in flight as it moves a paced tile of 64 KiB: 64, the tile at
  // once, or 16, as four copy tiles one after another (RELAY_IPC_PACED_MOVE_KIB, 16 or 64).
  int paced_blocks = 0;
  int paced_move_kib = 64;
  // The ll form's launch (RELAY_IPC_EARLY_LAUNCH): 1, early (gpu::rt::launch_early: the kernel
  // may be made resident once every block of the ll kernel ahead of it on its stream has its
  // verdict, past which that kernel waits for no other rank); 0, ordinary.
  int early_launch = 1;
};

namespace detail {

// A number of `var` within [lo, hi] into `out`, where set.
inline status number_from_environment(const char* var, double lo, double hi, double& out) {
  const char* v = std::getenv(var);
  if (v == nullptr || *v == '\0') return {};
  char* end = nullptr;
  const double x = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(x >= lo && x <= hi))
    return {errc::invalid_argument, std::string(var) + " must be a number from " +
                                        std::to_string(lo) + " to " + std::to_string(hi) +
                                        ", not '" + v + "'"};
  out = x;
  return {};
}

// A whole number of `var` within [lo, hi] into `out`, where set; `whole` names what a fraction is
// not ("a whole tile count").
inline status whole_from_environment(const char* var, double lo, double hi, const char* whole,
                                     int& out) {
  double x = out;
  if (status s = number_from_environment(var, lo, hi, x); !s) return s;
  if (x != static_cast<int>(x))
    return {errc::invalid_argument, std::string(var) + " must be " + whole};
  out = static_cast<int>(x);
  return {};
}

}  // namespace detail

// The variables above into `o`, where set; a malformed one is an error naming it.
inline status options_from_environment(options& o) {
  if (status s = size_from_environment("RELAY_IPC_BYTES", o.bytes_per_rank); !s) return s;
  if (status s = detail::whole_from_environment("RELAY_IPC_ONE_SHOT_TILES", 0, 4096,
                                                "a whole tile count", o.one_shot_tiles);
      !s)
    return s;
  if (status s = detail::whole_from_environment("RELAY_IPC_DEVICE_SHARE", 1, 1024,
                                                "a whole number of ranks", o.device_share);
      !s)
    return s;
  if (status s = detail::whole_from_environment("RELAY_IPC_PACED_BLOCKS", 0, 16,
                                                "a whole number of blocks", o.paced_blocks);
      !s)
    return s;
  if (status s = detail::whole_from_environment("RELAY_IPC_PACED_MOVE_KIB", 16, 64, "16 or 64",
                                                o.paced_move_kib);
      !s)
    return s;
  if (status s =
          detail::whole_from_environment("RELAY_IPC_EARLY_LAUNCH", 0, 1, "0 or 1", o.early_launch);
      !s)
    return s;
  if (o.paced_move_kib != 16 && o.paced_move_kib != 64)
    return {errc::invalid_argument,
            "RELAY_IPC_PACED_MOVE_KIB must be 16 or 64, not " + std::to_string(o.paced_move_kib)};
  struct constant {
    const char* var;
    double* seconds;
  } constants[] = {{"RELAY_IPC_LAUNCH_US", &o.costs.launch},
                   {"RELAY_IPC_SIGNAL_US", &o.costs.signal},
                   {"RELAY_IPC_TILE_US", &o.costs.tile}};
  for (const constant& c : constants) {
    double us = *c.seconds * 1e6;
    if (status s = detail::number_from_environment(c.var, 0, 1e6, us); !s) return s;
    *c.seconds = us * 1e-6;
  }
  if (const char* v = std::getenv("RELAY_IPC_EMULATE_MESH"); v != nullptr && *v != '\0') {
    double gbps = 0;
    if (status s = detail::number_from_environment("RELAY_IPC_EMULATE_MESH", 0, 1e5, gbps); !s)
      return s;
    if (gbps > 0 && gbps < 0.001)
      return {errc::invalid_argument,
              "RELAY_IPC_EMULATE_MESH is in GB/s: " + std::string(v) +
                  " is below 1 MB/s, too slow a link to emulate (0: no emulation)"};
    o.emulate_mesh = static_cast<std::uint64_t>(std::llround(gbps * 1e3)) * 1'000'000;  // MB/s
  }
  if (const char* v = std::getenv("RELAY_IPC_FORM"); v != nullptr && *v != '\0') {
    const std::string f = v;
    if (f == "auto")
      o.form = call_form::automatic;
    else if (f == "one_shot")
      o.form = call_form::one_shot;
    else if (f == "stepped")
      o.form = call_form::stepped;
    else if (f == "pull")
      o.form = call_form::pull;
    else if (f == "ll")
      o.form = call_form::ll;
    else
      return {errc::invalid_argument,
              "RELAY_IPC_FORM must be auto, one_shot, stepped, pull or ll, not '" + f + "'"};
  }
  return {};
}

// What the transport refuses of `o` at creation, once every rank agreed on it: a mesh emulation
// rate that is not a whole number of MB/s (the kernels count it so) or above 4 PB/s, and the pull
// or ll form forced under mesh emulation (the pull reads its peers' memory, ll pushes words of its
// own: no link clock paces either).
inline status check_options(const options& o) {
  if (o.emulate_mesh % 1'000'000 != 0 || o.emulate_mesh / 1'000'000 > 0xffffffffull)
    return {errc::invalid_argument,
            "ipc_options::emulate_mesh is counted in whole MB/s (10^6 bytes per second) up to "
            "4 PB/s: " +
                std::to_string(o.emulate_mesh) + " bytes per second is not"};
  if (o.emulate_mesh != 0 && o.form == call_form::pull)
    return {errc::invalid_argument,
            "RELAY_IPC_FORM=pull reads peers' memory, which mesh emulation "
            "(RELAY_IPC_EMULATE_MESH) does not pace: use auto, one_shot or stepped"};
  if (o.emulate_mesh != 0 && o.form == call_form::ll)
    return {errc::invalid_argument,
            "RELAY_IPC_FORM=ll pushes its words outside the plan's copies, which mesh emulation "
            "(RELAY_IPC_EMULATE_MESH) does not pace: use auto, one_shot or stepped"};
  return {};
}

}  // namespace relay::ipc
