// Whether this machine has a GPU the runtime can use; prints what it found.
#include <cstdio>
#include <string>

#include "relay/gpu/runtime.hpp"

namespace relay::test {

bool usable_gpu() {
  namespace rt = relay::gpu::rt;
  int n = 0;
  if (const rt::error_t e = rt::device_count(&n); e != rt::success || n == 0) {
    // scripts/test prints this line under the test summary, as the reason for the skip.
    std::printf("%s GPU tests skipped: no usable GPU (%s)\n", rt::platform,
                e != rt::success ? rt::describe(e).c_str() : "none found");
    return false;
  }
  std::string name;
  const bool named = rt::device_name(name, 0) == rt::success;
  std::printf("%s: %d device(s); device 0 is %s\n", rt::platform, n, named ? name.c_str() : "?");
  return true;
}

}  // namespace relay::test
