// Where a process learns its place in a job: relay's own variables first, then torchrun's (and
// so mpirun-style launchers that export them), so relay-run, torchrun and a hand-written script
// all work.
//
//   RELAY_RANK        or RANK         this process's rank, 0..size-1
//   RELAY_WORLD_SIZE  or WORLD_SIZE   the number of processes
//   RELAY_LOCAL_RANK  or LOCAL_RANK   the rank on this node (default: the rank)
//   RELAY_STORE_ADDR  or MASTER_ADDR  where rank 0's TCP store listens (default 127.0.0.1)
//   RELAY_STORE_PORT  or MASTER_PORT  its port
//   RELAY_DEVICE                      the device this rank drives (default: the local rank)
//   RELAY_TIMEOUT                     seconds any rank waits for a peer (default 30; may be
//                                     fractional: 0.5; 0.001..1000000); set-up waits at least
//                                     setup_timeout_for's floor (below)
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <optional>
#include <string>

#include "relay/core/status.hpp"

namespace relay {

// How long a rank waits for a peer, anywhere in relay, unless configured: long enough for a slow
// first call (plans built, memory mapped) on a loaded machine, short enough that a dead job ends.
inline constexpr std::chrono::milliseconds default_peer_timeout{30'000};

// Set-up (the bootstrap's connects, hellos and closing barrier, a transport's creation, a split)
// waits for ranks that are still starting: a launcher starts them one after another, each loads
// its libraries (a Python rank imports torch), and on a loaded machine the last can come seconds
// after the first, however short the timeout of a call is. So set-up waits at least this floor,
// and this much more per rank of the job.
inline constexpr std::chrono::milliseconds setup_floor{10'000};
inline constexpr std::chrono::milliseconds setup_per_rank{100};

// How long set-up waits for a job of `size` ranks whose call timeout is `timeout`: that timeout,
// but never less than setup_floor + size * setup_per_rank (8 ranks: 10.8 s; 1024: 112.4 s).
inline std::chrono::milliseconds setup_timeout_for(int size, std::chrono::milliseconds timeout) {
  return std::max(timeout, setup_floor + std::max(size, 1) * setup_per_rank);
}

struct environment {
  int rank = 0, size = 1, local_rank = 0, device = 0;
  // The ranks of the job that drive this rank's device, itself included, where more are known
  // than the communicator being made has: split_communicator passes its parent's
  // (transport::device_share), so that a transport that divides a device among its ranks (ipc)
  // leaves room for the other communicators' ranks there.
  int device_share = 1;
  // The rank whose process runs this one, where it is a hosted helper (hosted/hosting.hpp), or
  // -1 for a rank that is a process of its own. A hosted rank's device is its helper device as
  // named: a transport refuses one its process does not see instead of wrapping it around.
  int host = -1;
  std::string store_addr = "127.0.0.1";
  int store_port = 0;
  std::chrono::milliseconds timeout = default_peer_timeout;
  // How long set-up waits (setup_timeout_of): 0, the default, for setup_timeout_for(size,
  // timeout); a caller that means set-up to end sooner (a test of a set-up that fails) sets it.
  std::chrono::milliseconds setup_timeout{0};
};

// Every wait of this environment's set-up has this timeout.
inline std::chrono::milliseconds setup_timeout_of(const environment& env) {
  return env.setup_timeout.count() > 0 ? env.setup_timeout
                                       : setup_timeout_for(env.size, env.timeout);
}

namespace detail {

inline std::optional<std::string> getenv_first(const char* relay_name, const char* other_name) {
  if (const char* v = std::getenv(relay_name); v != nullptr && *v != '\0') return std::string(v);
  if (other_name != nullptr)
    if (const char* v = std::getenv(other_name); v != nullptr && *v != '\0') return std::string(v);
  return std::nullopt;
}

inline bool parse_int(const std::string& text, long lo, long hi, int& out) {
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || v < lo || v > hi) return false;
  out = static_cast<int>(v);
  return true;
}

}  // namespace detail

// RELAY_TIMEOUT in milliseconds, or `fallback` where it is not set. A value that does not parse,
// or lies outside 1 ms..1e6 s, is an error naming the limits rather than a silent default (below
// a millisecond it would round to 0 ms and no job could start; above, poll() cannot wait that
// long).
inline status timeout_from_environment(std::chrono::milliseconds& out,
                                       std::chrono::milliseconds fallback = default_peer_timeout) {
  out = fallback;
  const auto v = detail::getenv_first("RELAY_TIMEOUT", nullptr);
  if (!v) return {};
  char* end = nullptr;
  const double seconds = std::strtod(v->c_str(), &end);
  if (end == v->c_str() || *end != '\0' || !(seconds >= 0.001 && seconds <= 1e6))  // NaN fails
    return {errc::invalid_argument,
            "RELAY_TIMEOUT = '" + *v + "' is not a number of seconds in 0.001..1000000"};
  out = std::chrono::milliseconds(static_cast<long long>(seconds * 1000 + 0.5));
  return {};
}

// A size in bytes from `var` (a number with an optional K, M or G suffix, such as 64M) into
// `out`, left as it is where the variable is unset; anything else is an error naming it.
inline status size_from_environment(const char* var, std::size_t& out) {
  const char* v = std::getenv(var);
  if (v == nullptr || *v == '\0') return {};
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v, &end, 10);
  unsigned long long scale = 1;
  if (*end == 'K' || *end == 'k')
    scale = 1ull << 10, ++end;
  else if (*end == 'M' || *end == 'm')
    scale = 1ull << 20, ++end;
  else if (*end == 'G' || *end == 'g')
    scale = 1ull << 30, ++end;
  if (end == v || *end != '\0' || n == 0 || n > (1ull << 40) / scale)
    return {errc::invalid_argument,
            std::string(var) + " must be a positive size such as 64M, not '" + v + "'"};
  out = static_cast<std::size_t>(n * scale);
  return {};
}

// Reads the variables above; a missing rank, size or port, or an unparsable value, is an error
// naming the variable.
inline status environment_from_process(environment& env) {
  struct int_var {
    const char *relay_name, *other_name;
    int* target;
    long lo, hi;
    bool required;
  };
  environment e;
  const int_var vars[] = {
      {"RELAY_RANK", "RANK", &e.rank, 0, 1 << 20, true},
      {"RELAY_WORLD_SIZE", "WORLD_SIZE", &e.size, 1, 1 << 20, true},
      {"RELAY_LOCAL_RANK", "LOCAL_RANK", &e.local_rank, 0, 1 << 20, false},
      {"RELAY_STORE_PORT", "MASTER_PORT", &e.store_port, 1, 65535, true},
  };
  bool have_local = false;
  for (const int_var& v : vars) {
    const auto text = detail::getenv_first(v.relay_name, v.other_name);
    if (!text) {
      if (v.required)
        return {errc::invalid_argument, std::string(v.relay_name) + " (or " + v.other_name +
                                            ") is not set; start the job with relay-run, "
                                            "torchrun or set it"};
      continue;
    }
    if (!detail::parse_int(*text, v.lo, v.hi, *v.target))
      return {errc::invalid_argument, std::string(v.relay_name) + "/" + v.other_name + " = '" +
                                          *text + "' is not an integer in " + std::to_string(v.lo) +
                                          ".." + std::to_string(v.hi)};
    if (v.target == &e.local_rank) have_local = true;
  }
  if (e.rank >= e.size)
    return {errc::invalid_argument, "rank " + std::to_string(e.rank) +
                                        " is outside the world size " + std::to_string(e.size)};
  if (!have_local) e.local_rank = e.rank;
  e.device = e.local_rank;
  if (const auto d = detail::getenv_first("RELAY_DEVICE", nullptr))
    if (!detail::parse_int(*d, 0, 1 << 16, e.device))
      return {errc::invalid_argument, "RELAY_DEVICE = '" + *d + "' is not a device number"};
  if (const auto a = detail::getenv_first("RELAY_STORE_ADDR", "MASTER_ADDR")) e.store_addr = *a;
  if (status s = timeout_from_environment(e.timeout); !s) return s;
  env = e;
  return {};
}

}  // namespace relay
