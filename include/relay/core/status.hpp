// Run-time errors: a code a program can branch on and a message a person can act on.
// Nothing in relay throws across its API; every fallible call returns a status.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "relay/core/names.hpp"

namespace relay {

enum class errc : unsigned char {
  ok,
  invalid_schedule,  // A, N, mode or route has no schedule (spec_error says why)
  invalid_group,     // a rank out of range, duplicated, active in two groups, ...
  invalid_count,     // counts do not match the groups, or are negative
  invalid_buffer,    // a null, too small or wrongly overlapping buffer
  invalid_argument,  // any other argument out of its range (an alignment of 0, ...)
  unsupported,       // a dtype, operator or in-place form the collective does not have
  gpu_error,         // the GPU runtime reported an error
  out_of_memory,
  timeout,       // a peer did not arrive within the timeout
  mismatch,      // the ranks of one call disagree on its arguments
  peer_error,    // another rank of the call failed (its status names it); this rank's part was fine
  system_error,  // the operating system refused (a socket, shared memory, a process)
  peer_lost,     // a peer process exited, was killed or closed its communicator
};

namespace detail {
inline constexpr name_table<errc, 14> errc_names{
    {"ok", "invalid schedule", "invalid group", "invalid count", "invalid buffer",
     "invalid argument", "unsupported", "gpu error", "out of memory", "timeout", "mismatch",
     "peer error", "system error", "peer lost"}};
}  // namespace detail

constexpr std::string_view name(errc e) {
  return detail::errc_names(e);
}

// A failure caused by another rank (a peer that timed out, exited, refused or disagreed) names
// that rank first in its message and carries it as peer(): the root cause, however many ranks
// passed the failure on before it reached this one.
class [[nodiscard]] status {
 public:
  status() = default;
  status(errc code, std::string message, int peer = -1)
      : code_(code), peer_(peer), message_(std::move(message)) {}

  bool ok() const { return code_ == errc::ok; }
  explicit operator bool() const { return ok(); }
  errc code() const { return code_; }
  const std::string& message() const { return message_; }
  // The rank whose failure this is, where another rank's; -1 where none is named.
  int peer() const { return peer_; }
  // "invalid buffer: recv of rank 3 is null"
  std::string to_string() const { return ok() ? "ok" : std::string(name(code_)) + ": " + message_; }

 private:
  errc code_ = errc::ok;
  int peer_ = -1;
  std::string message_;
};

}  // namespace relay
