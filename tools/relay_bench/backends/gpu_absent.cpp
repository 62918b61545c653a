// The GPU backend where this relay-bench was built without the GPU executor.
#include "backends/backend.hpp"

namespace relay::bench {

std::unique_ptr<backend> make_gpu_backend(int, const std::vector<int>&, std::uint64_t,
                                          std::string& why) {
  why = "this relay-bench was built without it (configure where CUDA or HIP is found)";
  return nullptr;
}

}  // namespace relay::bench
