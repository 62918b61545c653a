#include "errors.hpp"

#include <string_view>

namespace relay::c_abi {

namespace {

thread_local std::string last_text;
thread_local std::int32_t last_peer = -1;

// The first "rank N" or "rank(s) N" of `m`, or -1.
std::int32_t first_rank(std::string_view m) {
  for (std::size_t at = m.find("rank"); at != std::string_view::npos; at = m.find("rank", at + 1)) {
    std::size_t i = at + 4;
    if (m.substr(i, 3) == "(s)") i += 3;
    if (i >= m.size() || m[i] != ' ') continue;
    ++i;
    std::int64_t r = -1;
    while (i < m.size() && m[i] >= '0' && m[i] <= '9' && r < (1 << 24))
      r = (r < 0 ? 0 : r * 10) + (m[i++] - '0');
    if (r >= 0) return static_cast<std::int32_t>(r);
  }
  return -1;
}

// The rank a failure names as its root cause: the status carries it; a bootstrap callback's
// failure, which is text only, names it first (relay.h, relay_bootstrap_fail).
std::int32_t peer_named(const status& s) {
  if (s.peer() >= 0) return s.peer();
  if (s.code() != errc::timeout && s.code() != errc::peer_error && s.code() != errc::mismatch &&
      s.code() != errc::peer_lost)
    return -1;
  return first_rank(s.message());
}

}  // namespace

relay_status finish(const status& s) {
  if (s.ok()) return RELAY_OK;
  last_text = s.message();
  last_peer = peer_named(s);
  return static_cast<relay_status>(s.code());
}

const char* last_error() {
  return last_text.c_str();
}
std::int32_t last_error_peer() {
  return last_peer;
}

}  // namespace relay::c_abi
