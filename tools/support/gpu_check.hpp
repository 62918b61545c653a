// For the GPU tools: a runtime call that fails ends the program with what failed and
// where, and any other error ends it with the program's name and why. (The library returns a
// status instead; an example has nothing to recover.)
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "relay/gpu/runtime.hpp"

namespace relay::examples {

inline void check_rt(gpu::rt::error_t e, const char* what, const char* file, int line) {
  if (e == gpu::rt::success) return;
  const char* slash = std::strrchr(file, '/');
  std::fprintf(stderr, "%s:%d: %s failed: %s\n", slash != nullptr ? slash + 1 : file, line, what,
               gpu::rt::describe(e).c_str());
  std::exit(1);
}

// A program's way to give up: `fail("why")` prints "<program>: why" on stderr and exits with
// `status` (each program documents its own: a bad command line, a failed check).
struct exit_with {
  const char* program;
  int status;
  [[noreturn]] void operator()(const std::string& why) const {
    std::fprintf(stderr, "%s: %s\n", program, why.c_str());
    std::exit(status);
  }
};

}  // namespace relay::examples

#define CHECK_RT(call) ::relay::examples::check_rt((call), #call, __FILE__, __LINE__)
