// How a failure crosses the C ABI: nothing throws across it; every entry point runs its body in
// `guarded`, which turns a status (or an exception) into a relay_status and keeps the failure's
// text and the rank it names for relay_last_error and relay_last_error_peer.
#pragma once

#include <cstdint>
#include <exception>
#include <new>
#include <string>

#include "relay/c/relay.h"
#include "relay/core/status.hpp"

namespace relay::c_abi {

// The status of `s`, keeping its text and named rank as this thread's last failure.
relay_status finish(const status& s);

// This thread's last failure: its text ("" before any) and the rank it names (-1: none).
const char* last_error();
std::int32_t last_error_peer();

template <class F>
relay_status guarded(F&& body) noexcept {
  try {
    return finish(body());
  } catch (const std::bad_alloc&) {
    return finish({errc::out_of_memory, "the host is out of memory"});
  } catch (const std::exception& e) {
    return finish({errc::system_error, std::string("internal error: ") + e.what()});
  } catch (...) {
    return finish({errc::system_error, "internal error: an unknown exception"});
  }
}

inline status null_argument(const char* what) {
  return {errc::invalid_argument, std::string(what) + " is NULL"};
}

}  // namespace relay::c_abi
