// The GPU tests' entry: without a usable GPU they report "skipped" (exit code 77, which CTest is
// told means skipped), so that a machine without one, like CI's, builds them and passes. Plain
// C++: Catch's runner is compiled by the host compiler (HIP 5.2's clang crashes on it in device
// mode); probe.cpp asks the runtime.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

namespace relay::test {
bool usable_gpu();  // probe.cpp: prints what it found
}

int main(int argc, char** argv) {
  if (!relay::test::usable_gpu()) return 77;
  return Catch::Session().run(argc, argv);
}
